package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/docrender/docrender/gateway/server/apierr"
)

// pagesHTMLOf is a document of n pages, each about a page tall on the
// screen too, each saying its number.
func pagesHTMLOf(n int) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><title>Long</title><style>div { break-after: page; height: 900px }</style></head><body>`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "<div>Long document page %d</div>", i)
	}
	b.WriteString("</body></html>")
	return b.String()
}

// noisePNG is a square PNG of random pixels, base64: it compresses to
// about its raw size, in a PDF too.
func noisePNG(t testing.TB, side int) string {
	img := image.NewNRGBA(image.Rect(0, 0, side, side))
	if _, err := rand.Read(img.Pix); err != nil {
		t.Fatal(err)
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// TestDocumentBounds (DESIGN §10, issue 24): a document past the plan's
// page bound (DOCRENDER_PLAN_<PLAN>_MAX_PAGES) or the output bound
// (DOCRENDER_MAX_OUTPUT_BYTES) answers 422 DOCUMENT_TOO_LARGE naming the
// bound, from generate and as a batch's failed document; pageRanges within
// the bound prints; the service renders the next document; nothing is
// charged for a refused one.
func TestDocumentBounds(t *testing.T) {
	svc := startService(t, func(cfg *configT) {
		hobby := cfg.Plans["hobby"]
		hobby.MaxPages = 5
		cfg.Plans["hobby"] = hobby
		cfg.MaxOutputBytes = 64 << 10
	})
	c := newClient(t, svc)

	cases := []struct {
		name    string
		html    string
		options map[string]any
		want    string // in the 422's message; "" → 200 with pages pages
		pages   int
	}{
		{name: "within", html: pagesHTMLOf(5), pages: 5},
		{name: "past the plan's pages", html: pagesHTMLOf(8), want: "more than 5 pages"},
		{name: "pageRanges within the bound", html: pagesHTMLOf(8), options: map[string]any{"pageRanges": "2-3"}, pages: 2},
		// Cut before loading (split: true), its slices printed in two tabs
		// at once: bounded as the slices print.
		{name: "past the plan's pages, in slices", html: splitLedger(8), options: map[string]any{"split": true}, want: "more than 5 pages"},
		{name: "past the output bound", html: `<!doctype html><body><img alt="noise" src="data:image/png;base64,` + noisePNG(t, 300) + `">`, want: "larger than 65536 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := c.usage()
			resp := c.generate([]file{htmlFile("index.html", tc.html)}, tc.options)
			if tc.want == "" {
				mustStatus(t, resp, http.StatusOK)
				if n := pdfInfoFields(t, readAll(t, resp), "")["Pages"]; n != strconv.Itoa(tc.pages) {
					t.Fatalf("pdfinfo: %s pages, want %d", n, tc.pages)
				}
				return
			}
			e := expectError(t, resp, http.StatusUnprocessableEntity, apierr.DocumentTooLarge)
			if !strings.Contains(e.Message, tc.want) || e.Hint == "" {
				t.Errorf("message %q hint %q, want %q and a hint", e.Message, e.Hint, tc.want)
			}
			if after := c.usage(); after != before {
				t.Errorf("usage %d → %d: a refused document was charged", before, after)
			}
		})
	}

	t.Run("a batch document past the bound fails the batch, naming it", func(t *testing.T) {
		id := c.startStream(map[string]any{"documents": []map[string]any{
			{"fileName": "short", "htmlContent": pagesHTMLOf(2)},
			{"fileName": "long", "htmlContent": pagesHTMLOf(9)},
		}})
		events := readEvents(t, c.openStream(id))
		last := events[len(events)-1]
		if last.Name != "error" || !strings.Contains(last.Data.Message, `"long.pdf"`) || !strings.Contains(last.Data.Message, "more than 5 pages") {
			t.Fatalf("last event %s %+v, want an error naming long.pdf and the bound", last.Name, last.Data)
		}
	})

	// Still serving.
	mustStatus(t, c.generate([]file{htmlFile("index.html", pagesHTMLOf(1))}, nil), http.StatusOK)
}
