package server

import (
	"context"
	"mime/multipart"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/proto/jobspb"
)

const testCII = `<rsm:CrossIndustryInvoice xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"/>`

// partsForm is a multipart body with options, files and DESIGN §8's
// parts: each part is (field, file name, content).
func partsForm(t *testing.T, options string, parts ...[3]string) *form2 {
	t.Helper()
	f := &form2{}
	f.w = multipart.NewWriter(&f.buf)
	if options != "" {
		_ = f.w.WriteField("options", options)
	}
	for _, p := range parts {
		w, err := f.w.CreateFormFile(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(p[2]))
	}
	if err := f.w.Close(); err != nil {
		t.Fatal(err)
	}
	return f
}

// Attachments and the e-invoice's XML, sent as parts, travel to the worker
// by blob key in the request's own folder, the job carrying none of their
// bytes; the options and the parts make one record. Generate and merge.
func TestRecordPartsTravelByKey(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		file       [3]string
		rec        func(*jobspb.Job) *jobspb.Record
	}{
		{"generate", "/pdf/generate", [3]string{"files", "index.html", "<h1>Invoice</h1>"}, func(j *jobspb.Job) *jobspb.Record { return j.GetRender().GetRecord() }},
		{"merge", "/pdf/merge", [3]string{"files", "a.pdf", "%PDF-1.7\n..."}, func(j *jobspb.Job) *jobspb.Record { return j.GetMerge().GetRecord() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGateway(t, nil)
			g.srv.Queue = peekQueue{g.queue, func(job *jobspb.Job) {
				rec := tc.rec(job)
				if rec.GetPdfa() != "3b" || len(rec.GetAttachments()) != 1 || rec.GetEinvoice().GetProfile() != "EN 16931" {
					t.Fatalf("job's record %v", rec)
				}
				a, e := rec.Attachments[0], rec.Einvoice
				if a.FileName != "lines.csv" || a.MimeType != "text/csv" || a.Size != 7 || a.Data != nil || !strings.HasPrefix(a.Key, blob.JobDir(job.Id)) {
					t.Errorf("attachment %v", a)
				}
				if e.Xml != nil || !strings.HasPrefix(e.XmlKey, blob.JobDir(job.Id)) {
					t.Errorf("e-invoice %v", e)
				}
				for key, want := range map[string]string{a.Key: "a,b\nc,d", e.XmlKey: testCII} {
					got, err := blob.ReadAll(context.Background(), g.srv.Blobs, key, 1<<20)
					if err != nil || string(got) != want {
						t.Errorf("stored %q: %q, %v", key, got, err)
					}
				}
			}}
			body := partsForm(t, `{"einvoice":{"profile":"en16931"}}`, tc.file,
				[3]string{"attachments", "lines.csv", "a,b\nc,d"}, [3]string{"factur-x.xml", "invoice.xml", testCII})
			g.do(req{method: "POST", path: tc.path, body: body}).check(t, expect{status: 200})
			if len(g.queue.submitted) != 1 {
				t.Fatalf("%d jobs ran", len(g.queue.submitted))
			}
		})
	}
}

// The caching ID covers the attachments by their bytes: the same request is
// a hit, another attachment a miss.
func TestRecordPartsInTheCachingID(t *testing.T) {
	g := newGateway(t, nil)
	opts := `{"documentId":"inv-1","pdfa":"3b"}`
	for _, tc := range []struct{ content, want string }{{"one", "MISS"}, {"one", "HIT"}, {"two", "MISS"}} {
		body := partsForm(t, opts, [3]string{"files", "index.html", "<h1>x</h1>"}, [3]string{"attachments", "a.txt", tc.content})
		g.do(req{method: "POST", path: "/pdf/generate", body: body}).check(t, expect{status: 200, header: map[string]string{"X-Cache": tc.want}})
	}
}

// Bad parts are 400s naming the field, before any job runs.
func TestRecordPartsRefused(t *testing.T) {
	html := [3]string{"files", "index.html", "<h1>x</h1>"}
	many := []([3]string){html}
	for range 101 {
		many = append(many, [3]string{"attachments", "a.txt", "x"})
	}
	for _, tc := range []struct {
		name    string
		options string
		parts   [][3]string
		field   string
	}{
		{"xml without einvoice", "", [][3]string{html, {"factur-x.xml", "x.xml", testCII}}, "einvoice.profile"},
		{"bad xml", `{"einvoice":{"profile":"BASIC"}}`, [][3]string{html, {"factur-x.xml", "x.xml", "<a>"}}, "einvoice.xml"},
		{"xml twice", `{"einvoice":{"profile":"BASIC"}}`, [][3]string{html, {"factur-x.xml", "x.xml", testCII}, {"factur-x.xml", "y.xml", testCII}}, "einvoice.xml"},
		{"xml in both", `{"einvoice":{"profile":"BASIC","xml":` + jsonQuote(testCII) + `}}`, [][3]string{html, {"factur-x.xml", "x.xml", testCII}}, "einvoice.xml"},
		{"no xml", `{"einvoice":{"profile":"BASIC"}}`, [][3]string{html}, "einvoice.xml"},
		{"101 attachments", "", many, "attachments"},
		{"attachment on pdfa-2", `{"pdfa":"2u"}`, [][3]string{html, {"attachments", "a.txt", "x"}}, "attachments"},
		{"attachment named twice", "", [][3]string{html, {"attachments", "a.txt", "x"}, {"attachments", "A.TXT", "y"}}, "attachments[1].fileName"},
		{"attachment clashing with the e-invoice", `{"einvoice":{"profile":"BASIC"}}`, [][3]string{html, {"attachments", "factur-x.xml", "x"}, {"factur-x.xml", "x.xml", testCII}}, "attachments[0].fileName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGateway(t, nil)
			g.do(req{method: "POST", path: "/pdf/generate", body: partsForm(t, tc.options, tc.parts...)}).
				check(t, expect{status: 400, field: tc.field})
			if len(g.queue.submitted) != 0 {
				t.Errorf("%d jobs ran", len(g.queue.submitted))
			}
		})
	}
}

func jsonQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// A mistyped §8 option of merge (its options embed stepsOptions) is named
// as the client wrote it, not by the Go path of the struct it sits in.
func TestMergeOptionTypesNamed(t *testing.T) {
	pdf := [3]string{"files", "a.pdf", "%PDF-1.7\n"}
	for _, tc := range []struct{ options, field string }{
		{`{"pdfa":3}`, "pdfa"},
		{`{"pdfua":"yes"}`, "pdfua"},
		{`{"attachmentRelationship":1}`, "attachmentRelationship"},
		{`{"stages":{}}`, "stages"},
	} {
		g := newGateway(t, nil)
		g.do(req{method: "POST", path: "/pdf/merge", body: partsForm(t, tc.options, pdf)}).check(t, expect{status: 400, field: tc.field})
	}
}
