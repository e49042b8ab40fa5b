package e2e

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"errors"
	"image"
	"image/png"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/queue"
)

// squeeze drops all white space: a rotated stamp comes out of pdftotext
// in pieces, its letters in order.
func squeeze(s string) string { return strings.Join(strings.Fields(s), "") }

// rawPageText is pdftotext -raw of page n: unlike -layout, it keeps
// diagonal text (a watermark rotated 45°).
func rawPageText(t testing.TB, pdf []byte, n int) string {
	t.Helper()
	return run(t, "pdftotext", "-raw", "-f", strconv.Itoa(n), "-l", strconv.Itoa(n), writeTemp(t, pdf, ".pdf"), "-")
}

// checkStamped checks, page by page, that mark is on the pages listed in
// on and absent from every other page of the PDF, and that each page kept
// its own token.
func checkStamped(t testing.TB, pdf []byte, mark string, tokens []string, on ...int) {
	t.Helper()
	checkPageTokens(t, pdf, tokens)
	for p := 1; p <= len(tokens); p++ {
		has := strings.Contains(squeeze(rawPageText(t, pdf, p)), mark)
		if want := slices.Contains(on, p); has != want {
			t.Errorf("page %d: watermark %q present = %v, want %v", p, mark, has, want)
		}
	}
}

var imageRowRe = regexp.MustCompile(`(?m)^\s*(\d+)\s+\d+\s+(image|smask)\s`)

// imagePages is the page number of each image pdfimages -list reports.
func imagePages(t testing.TB, pdf []byte) []string {
	t.Helper()
	var pages []string
	for _, m := range imageRowRe.FindAllStringSubmatch(run(t, "pdfimages", "-list", writeTemp(t, pdf, ".pdf")), -1) {
		if m[2] == "image" {
			pages = append(pages, m[1])
		}
	}
	return pages
}

func TestWatermarkGenerate(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	tokens := []string{"PAGEONE", "PAGETWO", "PAGETHREE"}
	html := pagesHTML(tokens...)
	t.Run("text on pages 1 and 3", func(t *testing.T) {
		pdf := c.generatePDF(html, map[string]any{"watermark": map[string]any{
			"text": "CONFIDENTIAL", "pages": "1,3", "rotation": 0, "opacity": 0.5, "color": "#ff0000", "position": "top-right",
		}})
		checkStamped(t, pdf, "CONFIDENTIAL", tokens, 1, 3)
	})
	t.Run("defaults: all pages, rotated 45", func(t *testing.T) {
		pdf := c.generatePDF(html, map[string]any{"watermark": map[string]any{"text": "DRAFT"}})
		checkStamped(t, pdf, "DRAFT", tokens, 1, 2, 3)
	})
	t.Run("image on page 2", func(t *testing.T) {
		img := base64.StdEncoding.EncodeToString(tinyPNG(t))
		pdf := c.generatePDF(html, map[string]any{"watermark": map[string]any{"image": img, "pages": "2", "opacity": 0.4}})
		if got := imagePages(t, pdf); !slices.Equal(got, []string{"2"}) {
			t.Errorf("images on pages %v, want only page 2", got)
		}
		checkPageTokens(t, pdf, tokens)
	})
}

func TestWatermarkMerge(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	fx := fixtures(t, c)
	resp := c.merge([]file{pdfFile("a.pdf", fx.alpha), pdfFile("b.pdf", fx.bravo)},
		map[string]any{"watermark": map[string]any{"text": "MERGEDCOPY", "pages": "2-3", "rotation": 0}})
	mustStatus(t, resp, http.StatusOK)
	checkStamped(t, readAll(t, resp), "MERGEDCOPY", []string{"ALPHA1", "ALPHA2", "BRAVO1"}, 2, 3)
}

// TestWatermarkBatch: batch options reach every document's render job, so
// each PDF of the ZIP is stamped (and its data-qr codes drawn).
func TestWatermarkBatch(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	req := map[string]any{
		"documents": []map[string]any{
			{"fileName": "first", "htmlContent": pagesHTML("BATCHA1", "BATCHA2")},
			{"fileName": "second", "htmlContent": `<p>BATCHB1</p><div style="padding:40px"><img data-qr="BATCH QR CODE"></div>`},
		},
		"options": map[string]any{"watermark": map[string]any{"text": "BATCHMARK", "pages": "1", "rotation": 0}},
	}
	resp := c.withKey("POST", "/pdf/generate-batch", jsonBody(req))
	mustStatus(t, resp, http.StatusOK)
	entries := zipEntries(t, readAll(t, resp))
	first, second := entries["first.pdf"], entries["second.pdf"]
	if first == nil || second == nil {
		t.Fatalf("ZIP entries %v, want first.pdf and second.pdf", slices.Sorted(maps.Keys(entries)))
	}
	checkStamped(t, first, "BATCHMARK", []string{"BATCHA1", "BATCHA2"}, 1)
	checkStamped(t, second, "BATCHMARK", []string{"BATCHB1"}, 1)
	if got := pdfCodes(t, second, 150); !slices.Equal(got, []string{"BATCH QR CODE"}) {
		t.Errorf("batch document's data-qr decoded as %q", got)
	}
}

func zipEntries(t testing.TB, data []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("not a ZIP (%d bytes): %v", len(data), err)
	}
	out := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[f.Name] = b
	}
	return out
}

// TestWatermarkBadOptions: the gateway validates DESIGN §4.17's object
// before anything renders: 400 naming the field, on generate and merge.
func TestWatermarkBadOptions(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	tests := []struct {
		name  string
		wm    any
		field string
	}{
		{"not an object", "CONFIDENTIAL", "watermark"},
		{"neither text nor image", map[string]any{"opacity": 0.5}, "watermark"},
		{"text and image", map[string]any{"text": "A", "image": "iVBORw0KGgo="}, "watermark"},
		{"image not a PNG", map[string]any{"image": base64.StdEncoding.EncodeToString([]byte("GIF89a..."))}, "watermark.image"},
		{"opacity above 1", map[string]any{"text": "A", "opacity": 1.5}, "watermark.opacity"},
		{"font size 0", map[string]any{"text": "A", "fontSize": 0}, "watermark.fontSize"},
		{"colour name", map[string]any{"text": "A", "color": "grey"}, "watermark.color"},
		{"unknown position", map[string]any{"text": "A", "position": "middle"}, "watermark.position"},
		{"bad pages", map[string]any{"text": "A", "pages": "1-"}, "watermark.pages"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := map[string]any{"watermark": tc.wm}
			for _, resp := range []*http.Response{
				c.generate([]file{htmlFile("index.html", simpleHTML)}, opts),
				c.merge([]file{pdfFile("a.pdf", []byte("%PDF-1.4"))}, opts),
			} {
				e := expectError(t, resp, http.StatusBadRequest, apierr.BadRequest)
				if e.Field != tc.field {
					t.Errorf("%s: field %q (message %q), want %q", resp.Request.URL.Path, e.Field, e.Message, tc.field)
				}
			}
		})
	}
}

// noisyPNG is an opaque PNG of random-looking pixels: it does not
// compress, so it weighs about 3 bytes a pixel.
func noisyPNG(t testing.TB, side int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	x := uint32(1)
	for i := range img.Pix {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img.Pix[i] = uint8(x)
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestWatermarkImageTravelsByKey: a watermark image reaches the workers by
// blob key (issue 12): the job messages that a generate, a merge and a
// batch publish are a few hundred bytes, name the stored image and carry
// none of its bytes, and every PDF is still stamped with it.
func TestWatermarkImageTravelsByKey(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	fx := fixtures(t, c) // before listening: its generates carry no watermark
	img := noisyPNG(t, 200)
	if len(img) < 100<<10 {
		t.Fatalf("the test image is only %d bytes", len(img))
	}
	prefix := queue.NamesFor(svc.App.Config.QueueNamespace).SubjectPrefix
	nc := svc.App.Queue().NATS()
	// Core NATS sees every message published to the job stream's subjects.
	sub, err := nc.SubscribeSync(prefix + ">")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	wm := map[string]any{"watermark": map[string]any{"image": base64.StdEncoding.EncodeToString(img), "pages": "1"}}
	stampedOnPage1 := func(what string, pdf []byte) {
		t.Helper()
		if got := imagePages(t, pdf); !slices.Equal(got, []string{"1"}) {
			t.Errorf("%s: images on pages %v, want only page 1", what, got)
		}
	}
	stampedOnPage1("generate", c.generatePDF(pagesHTML("KEYGEN1", "KEYGEN2"), wm))
	resp := c.merge([]file{pdfFile("a.pdf", fx.alpha)}, wm)
	mustStatus(t, resp, http.StatusOK)
	stampedOnPage1("merge", readAll(t, resp))
	resp = c.withKey("POST", "/pdf/generate-batch", jsonBody(map[string]any{
		"documents": []map[string]any{
			{"fileName": "first", "htmlContent": pagesHTML("KEYBATCHA1", "KEYBATCHA2")},
			{"fileName": "second", "htmlContent": pagesHTML("KEYBATCHB1", "KEYBATCHB2")},
		},
		"options": wm,
	}))
	mustStatus(t, resp, http.StatusOK)
	for name, pdf := range zipEntries(t, readAll(t, resp)) {
		stampedOnPage1("batch "+name, pdf)
	}

	// Every job of this account that needed the image, by its lane: one
	// render, one merge, two batch documents (the ZIP job needs no image).
	seen := map[string]int{}
	middle := img[len(img)/2 : len(img)/2+64]
	for {
		msg, err := sub.NextMsg(200 * time.Millisecond)
		if errors.Is(err, nats.ErrTimeout) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		lane := strings.TrimPrefix(msg.Subject, prefix)
		if !bytes.Contains(msg.Data, []byte(c.UserID)) || strings.HasSuffix(lane, ".zip") {
			continue
		}
		lane, _, _ = strings.Cut(lane, ".")
		if lane == "now" {
			lane = msg.Subject[strings.LastIndex(msg.Subject, ".")+1:]
		}
		seen[lane]++
		if len(msg.Data) > 2048 || bytes.Contains(msg.Data, middle) || !bytes.Contains(msg.Data, []byte("watermark.png")) {
			t.Errorf("%s job of %d bytes (image %d bytes) does not name the stored image alone", msg.Subject, len(msg.Data), len(img))
		}
	}
	if want := map[string]int{"render": 1, "merge": 1, "batch": 2}; !maps.Equal(seen, want) {
		t.Errorf("jobs seen by lane %v, want %v", seen, want)
	}
}
