package pdfcheck

import (
	"bytes"
	"context"
	"os"
	"slices"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfedit"
)

func chromiumPDF(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../pdfedit/testdata/chromium.pdf")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestChromium: Chromium m156's own output is tagged PDF that lacks what
// PDF/A and PDF/UA add: no trailer ID, no XMP, no output intent (so its
// DeviceRGB fails); its fonts, tags, Lang, DisplayDocTitle and Tabs pass.
func TestChromium(t *testing.T) {
	pdf := chromiumPDF(t)
	for _, tc := range []struct {
		lvl  Level
		want []string
	}{
		{Level{PDFA: "2b"}, []string{"6.1.3-1", "6.2.4.3-2", "6.6.2.1-1"}},
		{Level{PDFA: "3u"}, []string{"6.1.3-1", "6.2.4.3-2", "6.6.2.1-1"}},
		{Level{PDFUA: true}, []string{"UA 7.1-8"}},
		{Level{PDFA: "2u", PDFUA: true}, []string{"6.1.3-1", "6.2.4.3-2", "6.6.2.1-1", "UA 7.1-8"}},
	} {
		vs, err := Check(pdf, tc.lvl)
		if err != nil {
			t.Fatal(err)
		}
		if got := rules(vs); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: got %q, want %q", tc.lvl, got, tc.want)
			for _, v := range vs {
				t.Log(v)
			}
		}
	}
}

// TestCheckContext: the model-level rules on pdfcpu's model of Chromium's
// output; without the bytes the byte-level rules (6.1.3-1) are not run.
func TestCheckContext(t *testing.T) {
	pdf := chromiumPDF(t)
	xctx, err := pdfcpu.ReadWithContext(context.Background(), bytes.NewReader(pdf), conf())
	if err != nil {
		t.Fatal(err)
	}
	lvl := Level{PDFA: "2b", PDFUA: true}
	vs, err := CheckContext(xctx, nil, lvl)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rules(vs), []string{"6.2.4.3-2", "6.6.2.1-1", "UA 7.1-8"}; !slices.Equal(got, want) {
		t.Errorf("without bytes: got %q, want %q", got, want)
	}
	vs, _ = CheckContext(xctx, pdf, lvl)
	if got, want := rules(vs), []string{"6.1.3-1", "6.2.4.3-2", "6.6.2.1-1", "UA 7.1-8"}; !slices.Equal(got, want) {
		t.Errorf("with bytes: got %q, want %q", got, want)
	}
}

// TestWatermarkBreaksConformance: the text watermark as it is today sets
// Helvetica, not embedded (plan §0.3), and pdfcpu's optional content
// configuration has no Name, an empty Order and AS. (pdfcpu does mark the
// stamp as an Artifact, so UA 7.1-3 holds.)
func TestWatermarkBreaksConformance(t *testing.T) {
	var out bytes.Buffer
	wm := &jobspb.Watermark{Text: "DRAFT", FontSize: 48, Color: "#888888", Opacity: 0.3, Rotation: 45, Position: "center", Pages: "all"}
	if err := pdfedit.Watermark(context.Background(), bytes.NewReader(chromiumPDF(t)), &out, wm); err != nil {
		t.Fatal(err)
	}
	vs, err := Check(out.Bytes(), Level{PDFA: "2b", PDFUA: true})
	if err != nil {
		t.Fatal(err)
	}
	got := rules(vs)
	for _, want := range []string{"6.2.11.4.1-1", "6.9-1", "6.9-3", "6.9-4", "UA 7.10-1", "UA 7.10-2", "UA 7.21.4.1-1"} {
		if !slices.Contains(got, want) {
			t.Errorf("watermarked: no %s in %q", want, got)
		}
	}
	if slices.Contains(got, "UA 7.1-3") {
		t.Errorf("watermarked: the Artifact-marked stamp fails UA 7.1-3")
	}
}
