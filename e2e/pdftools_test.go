package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/image/webp"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/testenv/rawpdf"
)

// The PDF tools of DESIGN §11 through the real service: the inputs made
// by the service itself (a flatten needs a form, which no HTML prints: that
// one is written here), every answer read back by poppler, qpdf and Go's
// image decoders.

// tool posts one PDF tool request.
func (c *client) tool(op string, files []file, options any) *http.Response {
	c.t.Helper()
	return c.withKey("POST", "/pdf/"+op, multipartBody(files, options))
}

// threePages is a tagged three-page document, a heading and a token a page.
const threePages = `<html lang="en"><head><title>Tools</title><style>h1{break-before:page}h1:first-of-type{break-before:auto}</style></head><body>
<h1>First Chapter</h1><p>PAGEONE text</p><ul><li>alpha item</li><li>beta item</li></ul>
<h1>Second Chapter</h1><p>PAGETWO text</p>
<h1>Third Chapter</h1><p>PAGETHREE text</p></body></html>`

// toolReply is a tool's answer read whole.
type toolReply struct {
	header http.Header
	body   []byte
}

// toolCase is one request that must succeed, and what an independent
// reader must find in its answer.
type toolCase struct {
	name    string
	op      string
	input   []byte
	options any
	ctype   string
	check   func(t *testing.T, r toolReply)
}

// TestPDFTools: each route's happy paths, checked by a reader of our own
// choosing, one conversion each.
func TestPDFTools(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	doc := c.generatePDF(threePages, nil)
	if info(t, doc).Pages != 3 {
		t.Fatalf("fixture: %d pages", info(t, doc).Pages)
	}
	photo := c.generatePDF(`<img style="width:500px" src="data:image/png;base64,`+noisePNG(t, 400)+`"><p>PHOTOPAGE</p>`, nil)
	used := c.usage()

	cases := []toolCase{
		{"split by ranges", "split", doc, map[string]any{"ranges": "3,1-2"}, "application/zip", func(t *testing.T, r toolReply) {
			names, entries := unzip(t, r.body)
			if strings.Join(names, " ") != "tools-1.pdf tools-2.pdf" || r.header.Get("X-Files") != "2" {
				t.Fatalf("entries %v, X-Files %q", names, r.header.Get("X-Files"))
			}
			checkPDF(t, entries["tools-1.pdf"], "PAGETHREE")
			checkPDF(t, entries["tools-2.pdf"], "PAGEONE", "PAGETWO")
		}},
		{"split every 2", "split", doc, map[string]any{"every": 2, "fileName": "part"}, "application/zip", func(t *testing.T, r toolReply) {
			names, entries := unzip(t, r.body)
			if strings.Join(names, " ") != "part-1.pdf part-2.pdf" {
				t.Fatalf("entries %v", names)
			}
			checkPDF(t, entries["part-1.pdf"], "PAGEONE", "PAGETWO")
			checkPDF(t, entries["part-2.pdf"], "PAGETHREE")
		}},
		{"select, reorder, rotate, delete", "pages", doc, map[string]any{"select": "3,1-2", "delete": "2", "rotate": map[string]int{"1": 90}}, "application/pdf", func(t *testing.T, r toolReply) {
			checkPDF(t, r.body, "PAGETHREE", "PAGEONE")
			if rot := rotations(t, r.body, 2); rot[0] != 0 || rot[1] != 90 {
				t.Errorf("rotations %v, want [0 90]: page 1 of the input turned, now second", rot)
			}
			if r.header.Get("X-PDF-Pages") != "2" {
				t.Errorf("X-PDF-Pages %q", r.header.Get("X-PDF-Pages"))
			}
		}},
		{"flatten a form", "flatten", formPDF(), nil, "application/pdf", func(t *testing.T, r toolReply) {
			checkPDF(t, r.body, "FORMPAGE")
			if !strings.Contains(text(t, r.body), "FILLEDVALUE") {
				t.Error("the field's value is not in the page text")
			}
			doc := run(t, "qpdf", "--qdf", "--object-streams=disable", writeTemp(t, r.body, ".pdf"), "-")
			for _, gone := range []string{"/AcroForm", "/Widget"} {
				if strings.Contains(doc, gone) {
					t.Errorf("%s is still in the flattened file", gone)
				}
			}
		}},
		{"optimize", "optimize", photo, map[string]any{"imageQuality": 60, "maxImageDpi": 50}, "application/pdf", func(t *testing.T, r toolReply) {
			checkPDF(t, r.body, "PHOTOPAGE")
			before, _ := strconv.Atoi(r.header.Get("X-Bytes-Before"))
			after, _ := strconv.Atoi(r.header.Get("X-Bytes-After"))
			if before != len(photo) || after != len(r.body) || after >= before/2 {
				t.Errorf("sizes %d → %d (body %d, input %d): want at least halved", before, after, len(r.body), len(photo))
			}
			imgs := run(t, "pdfimages", "-list", writeTemp(t, r.body, ".pdf"))
			if !strings.Contains(imgs, "jpeg") {
				t.Errorf("the image was not recompressed as JPEG:\n%s", imgs)
			}
		}},
		{"metadata", "metadata", doc, map[string]any{"metadata": map[string]any{"title": "Rewritten Title", "author": "Tool Tester", "keywords": []string{"one", "two"}}}, "application/pdf", func(t *testing.T, r toolReply) {
			checkPDF(t, r.body, "PAGEONE", "PAGETWO", "PAGETHREE")
			fields := pdfInfoFields(t, r.body, "")
			if fields["Title"] != "Rewritten Title" || fields["Author"] != "Tool Tester" || !strings.Contains(fields["Keywords"], "one") {
				t.Errorf("pdfinfo %v", fields)
			}
			if meta := run(t, "pdfinfo", "-meta", writeTemp(t, r.body, ".pdf")); !strings.Contains(meta, "Rewritten Title") || !strings.Contains(meta, "Tool Tester") {
				t.Errorf("XMP lacks the new title or author:\n%s", meta)
			}
		}},
		{"text", "text", doc, nil, "text/plain; charset=utf-8", func(t *testing.T, r toolReply) {
			got := string(r.body)
			// pdftotext's words, in its order, are the service's.
			for _, w := range strings.Fields(text(t, doc)) {
				if !strings.Contains(got, w) {
					t.Errorf("text lacks %q, which pdftotext reads", w)
				}
			}
			if i1, i3 := strings.Index(got, "PAGEONE"), strings.Index(got, "PAGETHREE"); i1 < 0 || i3 < i1 || strings.Count(got, "\f") != 3 {
				t.Errorf("text %q: pages out of order or not ended by form feeds", got)
			}
		}},
		{"markdown of one page", "text", doc, map[string]any{"format": "markdown", "pages": "1"}, "text/markdown; charset=utf-8", func(t *testing.T, r toolReply) {
			md := string(r.body)
			if !regexp.MustCompile(`(?m)^# First Chapter$`).MatchString(md) || !regexp.MustCompile(`(?m)^[-*] alpha item$`).MatchString(md) || strings.Contains(md, "PAGETWO") {
				t.Errorf("markdown %q: want the heading, the list and page 1 only", md)
			}
		}},
		{"every page as PNG", "images", doc, nil, "application/zip", func(t *testing.T, r toolReply) {
			names, entries := unzip(t, r.body)
			if strings.Join(names, " ") != "tools-page-1.png tools-page-2.png tools-page-3.png" || r.header.Get("X-Files") != "3" {
				t.Fatalf("entries %v", names)
			}
			pi := info(t, doc)
			for _, n := range names {
				checkImage(t, entries[n], png.Decode, pi, 72)
			}
		}},
		{"one page as JPEG", "images", doc, map[string]any{"format": "jpeg", "dpi": 100, "pages": "2"}, "image/jpeg", func(t *testing.T, r toolReply) {
			checkImage(t, r.body, jpeg.Decode, info(t, doc), 100)
		}},
		{"one page as WebP", "images", doc, map[string]any{"format": "webp", "dpi": 30, "pages": "3"}, "image/webp", func(t *testing.T, r toolReply) {
			checkImage(t, r.body, webp.Decode, info(t, doc), 30)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.tool(tc.op, []file{pdfFile("tools.pdf", tc.input)}, tc.options)
			mustStatus(t, resp, http.StatusOK)
			r := toolReply{header: resp.Header, body: readAll(t, resp)}
			if ct := resp.Header.Get("Content-Type"); ct != tc.ctype {
				t.Errorf("Content-Type %q, want %q", ct, tc.ctype)
			}
			tc.check(t, r)
		})
	}
	if n := c.usage(); n != used+int64(len(cases)) {
		t.Errorf("conversions used %d, want %d: one per tool request", n, used+int64(len(cases)))
	}
}

// TestPDFToolsRefused: bad inputs and options are a 4xx in shape A naming
// the field, count nothing, and the service serves the next request.
func TestPDFToolsRefused(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	doc := c.generatePDF(threePages, nil)
	used := c.usage()
	one := func(data []byte) []file { return []file{pdfFile("in.pdf", data)} }
	cases := []struct {
		name, op string
		files    []file
		options  any
		field    string
	}{
		{"not a PDF", "split", []file{{Name: "notes.txt", Type: "text/plain", Data: []byte("hello")}}, map[string]any{"every": 1}, "files"},
		{"truncated, pdfcpu", "flatten", one(doc[:len(doc)/3]), nil, "files"},
		{"truncated, PDFium", "text", one(doc[:len(doc)/3]), nil, "files"},
		{"two files", "optimize", []file{pdfFile("a.pdf", doc), pdfFile("b.pdf", doc)}, nil, "files"},
		{"no file", "metadata", nil, map[string]any{"metadata": map[string]any{"title": "x"}}, "files"},
		{"unknown option", "optimize", one(doc), map[string]any{"quality": 50}, "quality"},
		{"option of another tool", "flatten", one(doc), map[string]any{"dpi": 72}, "dpi"},
		{"mistyped option", "split", one(doc), `{"every":"2"}`, "every"},
		{"reversed range", "split", one(doc), map[string]any{"ranges": "3-1"}, "ranges"},
		{"range past the end", "split", one(doc), map[string]any{"ranges": "1-9"}, "ranges"},
		{"select past the end", "pages", one(doc), map[string]any{"select": "4"}, "select"},
		{"rotate 45", "pages", one(doc), map[string]any{"rotate": map[string]int{"1": 45}}, "rotate"},
		{"nothing left", "pages", one(doc), map[string]any{"delete": "1-3"}, "delete"},
		{"quality 0", "optimize", one(doc), map[string]any{"imageQuality": 0}, "imageQuality"},
		{"no metadata", "metadata", one(doc), nil, "metadata"},
		{"text format", "text", one(doc), map[string]any{"format": "html"}, "format"},
		{"text page past the end", "text", one(doc), map[string]any{"pages": "5"}, "pages"},
		{"dpi 601", "images", one(doc), map[string]any{"dpi": 601}, "dpi"},
		{"image page past the end", "images", one(doc), map[string]any{"pages": "2,7"}, "pages"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := expectError(t, c.tool(tc.op, tc.files, tc.options), http.StatusBadRequest, apierr.BadRequest)
			if e.Field != tc.field {
				t.Errorf("field %q, want %q: %s", e.Field, tc.field, e.Message)
			}
			// The next request is served.
			resp := c.tool("pages", one(doc), map[string]any{"select": "2"})
			mustStatus(t, resp, http.StatusOK)
			checkPDF(t, readAll(t, resp), "PAGETWO")
		})
	}
	if n := c.usage(); n != used+int64(len(cases)) {
		t.Errorf("conversions used %d, want %d: only the requests served count", n, used+int64(len(cases)))
	}
}

// TestPDFToolsHosted: host:true stores the output, whatever its type, and
// answers the 2.2 shape; the URL serves it.
func TestPDFToolsHosted(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	doc := c.generatePDF(threePages, nil)
	for _, tc := range []struct {
		op      string
		options map[string]any
		ctype   string
		name    string
	}{
		{"split", map[string]any{"every": 1, "host": true}, "application/zip", "tools.zip"},
		{"images", map[string]any{"pages": "1", "host": true, "fileName": "cover"}, "image/png", "cover.png"},
		{"text", map[string]any{"host": true}, "text/plain; charset=utf-8", "tools.txt"},
	} {
		resp := c.tool(tc.op, []file{pdfFile("tools.pdf", doc)}, tc.options)
		mustStatus(t, resp, http.StatusOK)
		raw := readAll(t, resp)
		var m map[string]json.RawMessage
		var res struct{ URL, PdfID, ExpiresAt string }
		if json.Unmarshal(raw, &m) != nil || json.Unmarshal(raw, &res) != nil || len(m) != 3 || res.PdfID == "" || res.ExpiresAt == "" {
			t.Fatalf("%s: body %s, want exactly url, pdfId, expiresAt", tc.op, raw)
		}
		path := "/api/hosted-pdfs/" + res.PdfID
		if !strings.HasSuffix(res.URL, path) {
			t.Errorf("%s: url %q", tc.op, res.URL)
		}
		got, err := http.Get(svc.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		mustStatus(t, got, http.StatusOK)
		if ct, cd := got.Header.Get("Content-Type"), got.Header.Get("Content-Disposition"); ct != tc.ctype || !strings.Contains(cd, tc.name) {
			t.Errorf("%s: hosted as %q, %q; want %q named %s", tc.op, ct, cd, tc.ctype, tc.name)
		}
		body := readAll(t, got)
		switch tc.op {
		case "split":
			if names, _ := unzip(t, body); len(names) != 3 {
				t.Errorf("hosted split: entries %v", names)
			}
		case "images":
			checkImage(t, body, png.Decode, info(t, doc), 72)
		case "text":
			if !strings.Contains(string(body), "PAGETWO") {
				t.Errorf("hosted text %q", body)
			}
		}
	}
	if n := c.billingUsage().HostedCount; n != 3 {
		t.Errorf("hosted count %d, want 3", n)
	}
}

// checkPDF: qpdf finds pdf sound, and its pages carry the tokens, one a
// page, in order.
func checkPDF(t *testing.T, pdf []byte, tokens ...string) {
	t.Helper()
	out := run(t, "qpdf", "--check", writeTemp(t, pdf, ".pdf"))
	if !strings.Contains(out, "No syntax or stream encoding errors found") {
		t.Errorf("qpdf --check:\n%s", out)
	}
	checkPageTokens(t, pdf, tokens)
}

// checkImage decodes an image and checks its size against a page of pi
// at dpi (pdftoppm's rounding, a pixel either way).
func checkImage(t *testing.T, data []byte, decode func(r io.Reader) (image.Image, error), pi pdfInfo, dpi int) {
	t.Helper()
	img, err := decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode %d bytes: %v", len(data), err)
	}
	w, h := math.Ceil(pi.Width*float64(dpi)/72), math.Ceil(pi.Height*float64(dpi)/72)
	if b := img.Bounds(); !near(float64(b.Dx()), w, 1) || !near(float64(b.Dy()), h, 1) {
		t.Errorf("image %v, want %.0f×%.0f for %.1f×%.1f pt at %d dpi", b.Size(), w, h, pi.Width, pi.Height, dpi)
	}
}

// rotations is each page's rotation as pdfinfo reports it.
func rotations(t *testing.T, pdf []byte, n int) []int {
	t.Helper()
	rot := regexp.MustCompile(`(?m)^Page\s+(\d+) rot:\s+(\d+)`)
	out := make([]int, n)
	for _, m := range rot.FindAllStringSubmatch(run(t, "pdfinfo", "-f", "1", "-l", fmt.Sprint(n), writeTemp(t, pdf, ".pdf")), -1) {
		p, _ := strconv.Atoi(m[1])
		r, _ := strconv.Atoi(m[2])
		if p >= 1 && p <= n {
			out[p-1] = r
		}
	}
	return out
}

// formPDF is a one-page PDF with a filled text field whose appearance
// shows FILLEDVALUE: Chromium prints no form fields, so it is written here.
func formPDF() []byte {
	stream := func(dict, data string) string {
		return fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data)
	}
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields [5 0 R] /DR << /Font << /F1 7 0 R >> >> /DA (/F1 12 Tf 0 g) >> >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << /Font << /F1 7 0 R >> >> /Annots [5 0 R] >>",
		stream("", "BT /F1 18 Tf 72 760 Td (FORMPAGE) Tj ET"),
		"<< /Type /Annot /Subtype /Widget /FT /Tx /T (name) /V (FILLEDVALUE) /DA (/F1 12 Tf 0 g) /Rect [72 700 272 720] /P 3 0 R /F 4 /AP << /N 6 0 R >> >>",
		stream("/Type /XObject /Subtype /Form /BBox [0 0 200 20] /Resources << /Font << /F1 7 0 R >> >>", "BT /F1 12 Tf 2 5 Td (FILLEDVALUE) Tj ET"),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	return rawpdf.Build(objs...)
}
