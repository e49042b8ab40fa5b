package pdfedit

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/testenv/rawpdf"
)

// TestSplitTagged: a tagged Chromium PDF (its structure tree is left out
// of the parts, and not validated) splits into valid one-page parts with
// the source's text, and the input's bytes are left as they were.
func TestSplitTagged(t *testing.T) {
	needTools(t, "pdfinfo", "pdftotext", "qpdf")
	in := chromiumPDF(t)
	orig := bytes.Clone(in)
	src := tmpPDF(t, in)
	parts, err := Split(context.Background(), bytes.NewReader(in), "", 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 {
		t.Fatalf("%d parts, want 2", len(parts))
	}
	for i, part := range parts {
		path := tmpPDF(t, part)
		qpdfCheck(t, path)
		if n := pdfinfoPages(t, path); n != 1 {
			t.Fatalf("part %d: %d pages, want 1", i, n)
		}
		if got, want := pageText(t, path, 1), pageText(t, src, i+1); strings.TrimSpace(got) != strings.TrimSpace(want) || strings.TrimSpace(want) == "" {
			t.Errorf("part %d: %q, want %q", i, got, want)
		}
		if bytes.Contains(part, []byte("/StructTreeRoot")) {
			t.Errorf("part %d carries a structure tree", i)
		}
	}
	if !bytes.Equal(in, orig) {
		t.Error("the input's bytes changed")
	}
}

// TestSplitBrokenStructTree: a structure tree that is not one (here the
// catalog names a page's content stream) does not refuse a document that
// splits well: the parts carry no tree.
func TestSplitBrokenStructTree(t *testing.T) {
	needTools(t, "qpdf", "pdftotext")
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R /StructTreeRoot 5 0 R /MarkInfo << /Marked true >> >>",
		"<< /Type /Pages /Kids [4 0 R 6 0 R] /Count 2 >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
		"<< /Length 34 >>\nstream\nBT /F1 12 Tf 72 700 Td (one) Tj ET\nendstream",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 7 0 R >>",
		"<< /Length 34 >>\nstream\nBT /F1 12 Tf 72 700 Td (two) Tj ET\nendstream",
	}
	parts, err := Split(context.Background(), bytes.NewReader(rawpdf.Build(objs...)), "2,1", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 {
		t.Fatalf("%d parts, want 2", len(parts))
	}
	for i, want := range []string{"two", "one"} {
		path := tmpPDF(t, parts[i])
		qpdfCheck(t, path)
		if got := pageText(t, path, 1); strings.TrimSpace(got) != want {
			t.Errorf("part %d: %q, want %q", i, got, want)
		}
	}
}
