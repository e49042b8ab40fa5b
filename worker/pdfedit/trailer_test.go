package pdfedit

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"testing"

	"github.com/docrender/docrender/proto/jobspb"
)

// TestOutputPassesQpdfCheckWithoutWarnings: merged and watermarked files
// have an exact trailer /Size (see fixTrailerSize), whatever the order of
// plain and object-stream inputs; qpdf --check exits 0, not 3 (warnings).
func TestOutputPassesQpdfCheckWithoutWarnings(t *testing.T) {
	needTools(t, "qpdf")
	plain, objstm, skia := rawPDF("P", 2, 4), qpdfPDF(t, "Q", 3), catalogLastPDF("S")
	tests := []struct {
		name   string
		inputs [][]byte
	}{
		{"plain", [][]byte{plain}},
		{"plain then objstm", [][]byte{plain, objstm}},
		{"objstm then plain", [][]byte{objstm, plain}},
		{"alternating", [][]byte{plain, objstm, plain, objstm}},
		{"objstm twice", [][]byte{objstm, objstm}},
		{"objstm then catalog last", [][]byte{objstm, skia}},
		{"plain then catalog last", [][]byte{plain, skia, skia}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ins []Input
			for _, b := range tc.inputs {
				ins = append(ins, Input{Name: "in.pdf", R: bytes.NewReader(b)})
			}
			var merged, stamped bytes.Buffer
			if _, err := Merge(context.Background(), ins, &merged); err != nil {
				t.Fatal(err)
			}
			qpdfCheckClean(t, "merged", merged.Bytes())
			wm := &jobspb.Watermark{Text: "DRAFT", FontSize: 48, Color: "#888888", Opacity: 0.3, Rotation: 45, Position: "center", Pages: "all"}
			if err := Watermark(context.Background(), bytes.NewReader(merged.Bytes()), &stamped, wm); err != nil {
				t.Fatal(err)
			}
			qpdfCheckClean(t, "watermarked", stamped.Bytes())
		})
	}
}

func qpdfCheckClean(t *testing.T, what string, pdf []byte) {
	t.Helper()
	if out, err := exec.Command("qpdf", "--check", tmpPDF(t, pdf)).CombinedOutput(); err != nil {
		t.Errorf("%s: qpdf --check: %v\n%s", what, err, out)
	}
}

// catalogLastPDF is a one-page PDF numbered the way Chromium (Skia) numbers
// its output: the catalog is the highest-numbered object. Appended to
// another document its catalog goes unreferenced, at the top of the table.
func catalogLastPDF(label string) []byte {
	content := fmt.Sprintf("BT /F1 20 Tf 72 770 Td (%s) Tj ET\n", label)
	objs := []string{
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 1 0 R >> >> /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", len(content), content),
		"<< /Type /Catalog /Pages 2 0 R >>",
	}
	var buf bytes.Buffer
	buf.WriteString("%PDF-1.4\n")
	var offsets []int
	for i, o := range objs {
		offsets = append(offsets, buf.Len())
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, len(objs), xref)
	return buf.Bytes()
}
