package render

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/pdfedit"
)

// pagesDoc is a document of n pages, each forced to start a new one and
// about a page tall on the screen too (the estimate before printing sees
// them); with hidden, all but the first are hidden on screen and shown in
// print only (the estimate cannot see them).
func pagesDoc(n int, hidden bool) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><title>Pages</title><style>div.p { break-after: page; height: 900px }`)
	if hidden {
		b.WriteString(` @media screen { div.p + div.p { display: none } }`)
	}
	b.WriteString(`</style></head><body>`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `<div class="p">Page %d of the document</div>`, i)
	}
	b.WriteString(`</body></html>`)
	return b.String()
}

// TestBounds: a document past the job's page bound or the renderer's
// output bound is a *LimitError naming the bound, whether the estimate saw
// it coming (checked before printing) or not (print-only pages: checked on
// the PDF); pageRanges within the bound print; a document within both
// prints whole. The tab serves the next job after each refusal.
func TestBounds(t *testing.T) {
	r := testRenderer(t)
	cases := []struct {
		name     string
		html     string
		maxPages int32
		maxBytes int64
		ranges   string
		want     string // in the LimitError's message; "" → a PDF of pages pages
		pages    int
	}{
		{name: "within", html: pagesDoc(3, false), maxPages: 3, pages: 3},
		{name: "pages, estimated", html: pagesDoc(12, false), maxPages: 10, want: "more than 10 pages"},
		{name: "pages, print only", html: pagesDoc(12, true), maxPages: 10, want: "more than 10 pages"},
		{name: "ranges within", html: pagesDoc(12, false), maxPages: 10, ranges: "2-4", pages: 3},
		{name: "bytes", html: pagesDoc(3, false), maxBytes: 2048, want: "larger than 2048 bytes"},
		{name: "no bound", html: pagesDoc(12, false), pages: 12},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r.MaxOutputBytes = tc.maxBytes
			rj := &jobspb.RenderJob{Entry: "index.html", Page: a4, Print: &jobspb.Print{PageRanges: tc.ranges}, MaxPages: tc.maxPages}
			out, err := r.Render(context.Background(), egress.Bundle{"index.html": []byte(tc.html)}, rj, 30*time.Second)
			r.MaxOutputBytes = 0
			var limit *LimitError
			if tc.want != "" {
				if !errors.As(err, &limit) || !strings.Contains(limit.Message, tc.want) {
					t.Fatalf("err %v, want a LimitError saying %q", err, tc.want)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if n, err := pdfedit.PageCount(context.Background(), out.PDF); err != nil || n != tc.pages {
					t.Fatalf("pages %d (%v), want %d", n, err, tc.pages)
				}
			}
			// The tab that refused serves the next job.
			if _, err := renderReport(t, r, pagesDoc(1, false), nil); err != nil {
				t.Fatalf("next render: %v", err)
			}
		})
	}
}
