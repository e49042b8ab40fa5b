package e2e

import (
	"strings"
	"testing"
)

// watermarkRecordPage is a page a PDF/A-2u and PDF/UA can be made of: a
// title, a language, text only.
const watermarkRecordPage = `<!doctype html><html lang="en"><head><title>Contract draft</title></head>
<body><h1>Contract</h1><p>The parties agree.</p></body></html>`

// TestWatermarkOnRecord (DESIGN §8): a text watermark on a PDF/A-2u and
// PDF/UA document is set in an embedded font mapped to Unicode (poppler
// lists no font that is not), and the worker's conformance check passes
// (a 200); the same watermark on an ordinary document is Helvetica, as
// before.
func TestWatermarkOnRecord(t *testing.T) {
	c := newClient(t, sharedService(t))
	wm := map[string]any{"text": "ENTWURF – Łódź", "rotation": 0}
	pdf := c.generatePDF(watermarkRecordPage, map[string]any{"pdfa": "2u", "pdfua": true, "watermark": wm})
	path := writeTemp(t, pdf, ".pdf")
	fonts := strings.Split(strings.TrimSpace(run(t, "pdffonts", path)), "\n")[2:]
	for _, line := range fonts {
		f := strings.Fields(line)
		if len(f) < 7 || f[len(f)-5] != "yes" || f[len(f)-3] != "yes" || strings.HasPrefix(f[0], "Helvetica") {
			t.Errorf("font not embedded or not mapped to Unicode: %s", line)
		}
	}
	if text := run(t, "pdftotext", path, "-"); !strings.Contains(text, "ENTWURF – Łódź") {
		t.Errorf("the watermark's text is not in the PDF:\n%s", text)
	}

	plain := c.generatePDF(watermarkRecordPage, map[string]any{"watermark": wm})
	if fonts := run(t, "pdffonts", writeTemp(t, plain, ".pdf")); !strings.Contains(fonts, "\nHelvetica ") {
		t.Errorf("an ordinary document's watermark is no longer Helvetica:\n%s", fonts)
	}
}
