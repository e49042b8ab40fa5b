package render

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
)

// dotPNG is a 1×1 PNG.
const dotPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// altPage has images with and without alternative text, of each kind the
// hook knows, and images it must leave alone (decorative, named otherwise,
// not rendered, hidden from assistive technology).
const altPage = `<!doctype html><html lang="en"><body>
<img src="img/a.png">
<img src="img/b.png" alt="Logo">
<img src="img/c.png" alt="">
<img src="img/d.png" role="presentation">
<img src="img/e.png" aria-label="Chart">
<img src="img/f.png" title="Photo of the team">
<input type="image" src="img/go.png">
<input type="image" src="img/ok.png" alt="Send">
<div id="chart" role="img" style="width:10px;height:10px"></div>
<div role="img" aria-label="Sales by month" style="width:10px;height:10px"></div>
<span id="cap">Caption</span><div role="img" aria-labelledby="cap" style="width:10px;height:10px"></div>
<div class="empty-label" role="img" aria-labelledby="nowhere" style="width:10px;height:10px"></div>
<svg role="img" width="10" height="10"><rect width="10" height="10"/></svg>
<svg role="img" width="10" height="10"><title>A square</title><rect width="10" height="10"/></svg>
<svg width="10" height="10"><rect width="10" height="10"/></svg>
<img src="img/hidden.png" style="display:none">
<div aria-hidden="true"><img src="img/aria-hidden.png"></div>
<img data-qr="T-1">
<img src="data:image/png;base64,` + dotPNG + `">
<iframe srcdoc="<img src='img/in-frame.png'><img src='img/framed-ok.png' alt='ok'>"></iframe>
`

// altMissing is what the report lists for altPage, in document order.
var altMissing = []string{
	"img/a.png",
	"img/go.png",
	`<div id="chart" role="img">`,
	`<div class="empty-label" role="img">`,
	`<svg role="img">`,
	`<img data-qr="T-1">`,
	"data:image/png;base64,…",
	"img/in-frame.png",
}

func altBundle(t *testing.T, html string) egress.Bundle {
	t.Helper()
	png, err := base64.StdEncoding.DecodeString(dotPNG)
	if err != nil {
		t.Fatal(err)
	}
	b := egress.Bundle{"index.html": []byte(html)}
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "go", "ok", "hidden", "aria-hidden", "in-frame", "framed-ok"} {
		b["img/"+name+".png"] = png
	}
	return b
}

func renderAlt(t *testing.T, r *Renderer, html string, pr *jobspb.Print) (Output, error) {
	t.Helper()
	rj := &jobspb.RenderJob{Entry: "index.html", Page: a4, Print: pr}
	return r.Render(context.Background(), altBundle(t, html), rj, 30*time.Second)
}

// TestImagesWithoutAlt: the report lists every image without alternative
// text by its file in the bundle (or a description, for what has no src),
// whichever way the page is loaded, and only those: alt="" and
// role=presentation are decorative, aria-label, aria-labelledby, title
// and an SVG <title> name an image. With failOnAccessibilityErrors the
// render fails, counting them; without, the PDF is made.
func TestImagesWithoutAlt(t *testing.T) {
	r := testRenderer(t, Accessibility)
	for _, scripts := range []bool{false, true} {
		html := altPage
		if scripts {
			html += `<script>document.title = "scripted"</script>`
		}
		t.Run(fmt.Sprintf("scripts=%v", scripts), func(t *testing.T) {
			out, err := renderAlt(t, r, html, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(out.PDF), "%PDF-") {
				t.Fatal("no PDF: the check is off by default")
			}
			if rep := out.Report; !slices.Equal(rep.ImagesWithoutAlt, altMissing) || rep.ImagesWithoutAltTotal != int32(len(altMissing)) {
				t.Fatalf("images without alt %q (total %d), want %q", rep.ImagesWithoutAlt, rep.ImagesWithoutAltTotal, altMissing)
			}

			_, err = renderAlt(t, r, html, &jobspb.Print{FailOnAccessibilityErrors: true})
			var ce *CheckError
			if !errors.As(err, &ce) {
				t.Fatalf("err %v, want *CheckError", err)
			}
			if want := "8 images have no alternative text."; ce.Message != want {
				t.Errorf("message %q, want %q", ce.Message, want)
			}
			if !slices.Equal(ce.Report.GetImagesWithoutAlt(), altMissing) {
				t.Errorf("check report %q, want %q", ce.Report.GetImagesWithoutAlt(), altMissing)
			}
		})
	}
}

// TestImagesWithAltPass: a page whose images all have alternative text, or
// are decorative, passes failOnAccessibilityErrors with an empty list; so
// does a page without images, where the hook does not even run. The other
// checks are not set off by images without alt, nor is this one by
// console errors; a failure of the others does not list the images.
func TestImagesWithAltPass(t *testing.T) {
	r := testRenderer(t, Accessibility)
	for name, html := range map[string]string{
		"alt":       `<img src="img/b.png" alt="Logo"><img src="img/c.png" alt=""><svg role="img"><title>t</title></svg>`,
		"no images": `<p>Just text.</p><script>console.error("not an accessibility error")</script>`,
	} {
		t.Run(name, func(t *testing.T) {
			out, err := renderAlt(t, r, html, &jobspb.Print{FailOnAccessibilityErrors: true})
			if err != nil {
				t.Fatal(err)
			}
			if rep := out.Report; len(rep.ImagesWithoutAlt) != 0 || rep.ImagesWithoutAltTotal != 0 {
				t.Fatalf("images without alt %q (total %d)", rep.ImagesWithoutAlt, rep.ImagesWithoutAltTotal)
			}
		})
	}
	t.Run("other checks", func(t *testing.T) {
		out, err := renderAlt(t, r, `<img src="img/a.png">`, &jobspb.Print{FailOnConsoleErrors: true, FailOnResourceErrors: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Report.ImagesWithoutAlt; !slices.Equal(got, []string{"img/a.png"}) {
			t.Fatalf("images without alt %q", got)
		}
		// A render failing on another check lists in its failure only
		// what the client asked about.
		_, err = renderAlt(t, r, `<img src="img/a.png"><script>console.error("x")</script>`, &jobspb.Print{FailOnConsoleErrors: true})
		var ce *CheckError
		if !errors.As(err, &ce) || ce.Message != "The page logged 1 console error." {
			t.Fatalf("err %v", err)
		}
		if rep := ce.Report; len(rep.ImagesWithoutAlt) != 0 || rep.ImagesWithoutAltTotal != 0 || len(rep.ConsoleErrors) != 1 {
			t.Fatalf("check report %v", rep)
		}
	})
}

// TestImagesWithoutAltBounded: the report keeps the first 100 and counts
// them all; one image is "1 image has".
func TestImagesWithoutAltBounded(t *testing.T) {
	r := testRenderer(t, Accessibility)
	var b strings.Builder
	for i := range 150 {
		fmt.Fprintf(&b, `<img src="img/a.png?%d" width="4" height="4">`, i)
	}
	_, err := renderAlt(t, r, b.String(), &jobspb.Print{FailOnAccessibilityErrors: true})
	var ce *CheckError
	if !errors.As(err, &ce) {
		t.Fatalf("err %v, want *CheckError", err)
	}
	if want := "150 images have no alternative text."; ce.Message != want {
		t.Errorf("message %q, want %q", ce.Message, want)
	}
	if rep := ce.Report; len(rep.ImagesWithoutAlt) != maxReportEntries || rep.ImagesWithoutAltTotal != 150 || rep.ImagesWithoutAlt[99] != "img/a.png?99" {
		t.Errorf("%d listed (last %q), total %d", len(rep.ImagesWithoutAlt), rep.ImagesWithoutAlt[len(rep.ImagesWithoutAlt)-1], rep.ImagesWithoutAltTotal)
	}
	_, err = renderAlt(t, r, `<img src="img/a.png">`, &jobspb.Print{FailOnAccessibilityErrors: true})
	if !errors.As(err, &ce) || ce.Message != "1 image has no alternative text." {
		t.Errorf("err %v", err)
	}
}
