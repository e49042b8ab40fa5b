package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// TestStages (DESIGN §11, issue 25 item 4): the post-processing steps in
// the caller's order, on generate, merge and batch. A watermark on page 1
// lands on the page that is first when it runs: after a pages step that
// swapped the pages, on the former page 2; before it, on the former page
// 1. Metadata and PDF/A after them; the order rules refused with a 400
// naming the step.
func TestStages(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	html := pagesHTML("FIRSTPAGE", "SECONDPAGE")
	wm := `{"op":"watermark","text":"STAMPED","pages":"1","fontSize":40,"rotation":0}`
	for _, tc := range []struct {
		name, stages string
		stamped      string // the token on the page the watermark is on
	}{
		{"pages, then watermark", `[{"op":"pages","select":"2,1"},` + wm + `,{"op":"metadata","title":"Staged"},{"op":"pdfa","level":"2b"}]`, "SECONDPAGE"},
		{"watermark, then pages", `[` + wm + `,{"op":"pages","select":"2,1"},{"op":"metadata","title":"Staged"},{"op":"pdfa","level":"2b"}]`, "FIRSTPAGE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.generate([]file{htmlFile("index.html", html)}, `{"stages":`+tc.stages+`}`)
			mustStatus(t, resp, http.StatusOK)
			pdf := readAll(t, resp)
			first, second := pageText(t, pdf, 1), pageText(t, pdf, 2)
			if !strings.Contains(first, "SECONDPAGE") || !strings.Contains(second, "FIRSTPAGE") {
				t.Fatalf("pages not swapped: %q / %q", first, second)
			}
			for _, p := range []string{first, second} {
				if strings.Contains(p, tc.stamped) != strings.Contains(p, "STAMPED") {
					t.Errorf("the watermark is not on the page of %s: %q / %q", tc.stamped, first, second)
				}
			}
			info := pdfInfoFields(t, pdf, "")
			if info["Title"] != "Staged" || info["Pages"] != "2" {
				t.Errorf("pdfinfo %v", info)
			}
			if meta := run(t, "pdfinfo", "-meta", writeTemp(t, pdf, ".pdf")); !strings.Contains(meta, "pdfaid:part") {
				t.Errorf("no PDF/A claim in the XMP:\n%s", meta)
			}
		})
	}

	// Merge: the pages step drops the first input's page, then metadata.
	a, b := c.generatePDF(pagesHTML("ALPHA"), nil), c.generatePDF(pagesHTML("BETA"), nil)
	resp := c.merge([]file{pdfFile("a.pdf", a), pdfFile("b.pdf", b)}, `{"stages":[{"op":"pages","delete":"1"},{"op":"metadata","title":"Merged"}]}`)
	mustStatus(t, resp, http.StatusOK)
	merged := readAll(t, resp)
	if info := pdfInfoFields(t, merged, ""); info["Pages"] != "1" || info["Title"] != "Merged" || !strings.Contains(pageText(t, merged, 1), "BETA") {
		t.Errorf("merge with stages: %v %q", info, pageText(t, merged, 1))
	}
	if got := resp.Header.Get("X-PDF-Pages"); got != "1" {
		t.Errorf("X-PDF-Pages %q, want the count after the pages step", got)
	}

	// Batch: every document through the same steps.
	resp = c.batch(map[string]any{"documents": []map[string]any{{"fileName": "one", "htmlContent": html}},
		"options": map[string]any{"stages": []map[string]any{{"op": "pages", "select": "2"}}}})
	mustStatus(t, resp, http.StatusOK)
	doc := zipEntries(t, readAll(t, resp))["one.pdf"]
	if got := pdfInfoFields(t, doc, "")["Pages"]; got != "1" || !strings.Contains(pageText(t, doc, 1), "SECONDPAGE") {
		t.Errorf("batch document: %s pages, %q", got, pageText(t, doc, 1))
	}

	// A document's own steps cannot leave out the batch's watermark.
	e := expectError(t, c.batch(map[string]any{"documents": []map[string]any{{"fileName": "one", "htmlContent": html,
		"stages": []map[string]any{{"op": "pdfa", "level": "2b"}}}},
		"options": map[string]any{"watermark": map[string]any{"text": "DRAFT"}}}), http.StatusBadRequest, "BAD_REQUEST")
	if e.Field != "documents[0].stages" {
		t.Errorf("a document's steps without the batch's watermark: field %q", e.Field)
	}

	// The order rules (DESIGN §11): each a 400 naming the step.
	for _, tc := range []struct{ options, field string }{
		{`{"stages":[{"op":"sign","identity":"x"},{"op":"metadata","title":"T"}]}`, "stages[1].op"},
		{`{"stages":[{"op":"pdfa","level":"2b"},{"op":"watermark","text":"A"}]}`, "stages[1].op"},
		{`{"stages":[{"op":"zip"}]}`, "stages[0].op"},
		{`{"watermark":{"text":"A"},"stages":[{"op":"pdfa","level":"2b"}]}`, "watermark"},
		// Known only to the worker, named as the client wrote it.
		{`{"stages":[{"op":"pages","select":"9"}]}`, "stages[0].select"},
	} {
		resp := c.generate([]file{htmlFile("index.html", html)}, tc.options)
		if e := expectError(t, resp, http.StatusBadRequest, "BAD_REQUEST"); e.Field != tc.field {
			t.Errorf("%s: field %q, want %q", tc.options, e.Field, tc.field)
		}
	}
}

// TestToolStages (DESIGN §11, issue 25 item 4): the tools whose output is
// a PDF take stages, run on their output (each part of a split) in the
// caller's order; an attachments step takes the uploaded parts; the tools
// that make no PDF refuse stages; a step the output cannot take is a 400
// naming it, and nothing is charged for a refusal.
func TestToolStages(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	doc := c.generatePDF(threePages, nil)
	one := []file{pdfFile("tools.pdf", doc)}
	used := c.usage()

	// pages, then a watermark on the new first page, then metadata and PDF/A.
	resp := c.tool("flatten", one, `{"stages":[{"op":"pages","select":"3,1"},{"op":"watermark","text":"STAMPED","pages":"1","fontSize":40,"rotation":0},{"op":"metadata","title":"Flattened"},{"op":"pdfa","level":"2b"}]}`)
	mustStatus(t, resp, http.StatusOK)
	pdf := readAll(t, resp)
	checkPDF(t, pdf, "PAGETHREE", "PAGEONE")
	if first, second := pageText(t, pdf, 1), pageText(t, pdf, 2); !strings.Contains(first, "STAMPED") || strings.Contains(second, "STAMPED") {
		t.Errorf("the watermark is not on the new first page only: %q / %q", first, second)
	}
	if info := pdfInfoFields(t, pdf, ""); info["Title"] != "Flattened" || info["Pages"] != "2" {
		t.Errorf("pdfinfo %v", info)
	}
	if got := resp.Header.Get("X-PDF-Pages"); got != "2" {
		t.Errorf("X-PDF-Pages %q, want the count after the pages step", got)
	}
	if meta := run(t, "pdfinfo", "-meta", writeTemp(t, pdf, ".pdf")); !strings.Contains(meta, "pdfaid:part") {
		t.Errorf("no PDF/A claim in the XMP:\n%s", meta)
	}

	// split: every part goes through the steps; an uploaded attachment
	// lands in each.
	files := append([]file{{Field: "attachments", Name: "data.csv", Type: "text/csv", Data: []byte("a,b\n1,2\n")}}, one...)
	resp = c.tool("split", files, `{"every":2,"stages":[{"op":"metadata","title":"Part"},{"op":"attachments"}]}`)
	mustStatus(t, resp, http.StatusOK)
	names, entries := unzip(t, readAll(t, resp))
	if len(names) != 2 {
		t.Fatalf("split entries %v", names)
	}
	for i, n := range names {
		part := entries[n]
		checkPDF(t, part, [][]string{{"PAGEONE", "PAGETWO"}, {"PAGETHREE"}}[i]...)
		if title := pdfInfoFields(t, part, "")["Title"]; title != "Part" {
			t.Errorf("%s: title %q", n, title)
		}
		if list := run(t, "pdfdetach", "-list", writeTemp(t, part, ".pdf")); !strings.Contains(list, "data.csv") {
			t.Errorf("%s: no attachment:\n%s", n, list)
		}
	}

	// The metadata tool and an encryption step after it.
	resp = c.tool("metadata", one, `{"metadata":{"title":"Locked"},"stages":[{"op":"encrypt","userPassword":"open-sesame","ownerPassword":"owner"}]}`)
	mustStatus(t, resp, http.StatusOK)
	locked := readAll(t, resp)
	if code, out := exitStatus(t, "pdfinfo", writeTemp(t, locked, ".pdf")); code == 0 || !strings.Contains(out, "Incorrect password") {
		t.Errorf("pdfinfo without the password: %d %s", code, out)
	}
	if info := pdfInfoFields(t, locked, "open-sesame"); info["Title"] != "Locked" || info["Encrypted"] == "no" {
		t.Errorf("pdfinfo with the password: %v", info)
	}
	if n := c.usage(); n != used+3 {
		t.Errorf("conversions used %d, want %d", n, used+3)
	}

	// Refusals, each naming the field; none charged.
	for _, tc := range []struct {
		op, options, field string
	}{
		{"text", `{"stages":[{"op":"metadata","title":"T"}]}`, "stages"},
		{"images", `{"stages":[]}`, "stages"},
		{"optimize", `{"stages":[{"op":"pdfa","level":"2b"},{"op":"watermark","text":"A"}]}`, "stages[1].op"},
		{"pages", `{"select":"1","stages":[{"op":"shred"}]}`, "stages[0].op"},
		// The shared service signs nothing: named at the step.
		{"flatten", `{"stages":[{"op":"sign","identity":"nobody"}]}`, "stages[0]"},
		{"flatten", `{"stages":[{"op":"attachments"}]}`, "stages[0].attachments"},
		// Known only once the tool ran: the output has 1 page.
		{"pages", `{"select":"2","stages":[{"op":"pages","select":"2"}]}`, "stages[0].select"},
	} {
		resp := c.tool(tc.op, one, tc.options)
		if e := expectError(t, resp, http.StatusBadRequest, "BAD_REQUEST"); e.Field != tc.field {
			t.Errorf("%s %s: field %q, want %q (%s)", tc.op, tc.options, e.Field, tc.field, e.Message)
		}
	}
	// Parts a route does not read are refused, naming them.
	for _, tc := range []struct {
		op    string
		part  file
		field string
	}{
		{"text", file{Field: "attachments", Name: "a.csv", Type: "text/csv", Data: []byte("a")}, "attachments"},
		{"images", file{Field: "extra", Name: "x.bin", Type: "application/octet-stream", Data: []byte("x")}, "extra"},
		{"flatten", file{Field: "factur-x.xml", Name: "factur-x.xml", Type: "text/xml", Data: []byte(ciiInvoice)}, "factur-x.xml"},
	} {
		resp := c.tool(tc.op, append([]file{tc.part}, one...), nil)
		if e := expectError(t, resp, http.StatusBadRequest, "BAD_REQUEST"); e.Field != tc.field {
			t.Errorf("%s with a %s part: field %q (%s)", tc.op, tc.part.Field, e.Field, e.Message)
		}
	}
	if n := c.usage(); n != used+3 {
		t.Errorf("conversions used %d after the refusals, want %d", n, used+3)
	}
}
