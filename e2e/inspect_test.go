package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
)

// inspectReport is the data of POST /pdf/inspect (DESIGN §8).
type inspectReport struct {
	Pages     int `json:"pages"`
	PageSizes []struct {
		Width, Height float64
	} `json:"pageSizes"`
	PDFVersion string            `json:"pdfVersion"`
	Tagged     bool              `json:"tagged"`
	Encrypted  bool              `json:"encrypted"`
	PDFA       *json.RawMessage  `json:"pdfa"`
	PDFUA      *json.RawMessage  `json:"pdfua"`
	Lang       string            `json:"lang"`
	Metadata   map[string]string `json:"metadata"`
	Fonts      []struct {
		Name     string `json:"name"`
		Embedded bool   `json:"embedded"`
	} `json:"fonts"`
	Attachments []json.RawMessage `json:"attachments"`
	Signatures  []struct {
		Signer              string `json:"signer"`
		SignedAt            string `json:"signedAt"`
		Level               string `json:"level"`
		CoversWholeDocument bool   `json:"coversWholeDocument"`
		Valid               bool   `json:"valid"`
		Reason              string `json:"reason"`
	} `json:"signatures"`
}

func (c *client) inspect(files ...file) *http.Response {
	return c.do("POST", "/pdf/inspect", multipartBody(files, nil), map[string]string{"X-API-Key": c.Key})
}

// TestInspect: what the service renders, read back by the service as
// pdfinfo and pdffonts read it; a locked PDF says so; bad uploads are a
// 400 naming what is wrong; nothing is charged.
func TestInspect(t *testing.T) {
	c := newClient(t, sharedService(t))
	pdf := c.generatePDF(`<html lang="de"><head><title>Inspected</title></head><body><h1>Rechnung</h1></body></html>`,
		map[string]any{"format": "A5", "metadata": map[string]any{"author": "Docrender Tests"}})
	used := c.usage()
	resp := c.inspect(pdfFile("invoice.pdf", pdf))
	mustStatus(t, resp, http.StatusOK)
	var got struct {
		Success bool          `json:"success"`
		Data    inspectReport `json:"data"`
	}
	decode(t, resp, &got)
	r := got.Data
	pi := info(t, pdf)
	if !got.Success || r.Pages != pi.Pages || len(r.PageSizes) != pi.Pages || !near(r.PageSizes[0].Width, pi.Width, 0.5) || !near(r.PageSizes[0].Height, pi.Height, 0.5) {
		t.Fatalf("pages %d %v, pdfinfo says %+v", r.Pages, r.PageSizes, pi)
	}
	if !r.Tagged || r.Encrypted || r.Lang != "de" || r.Metadata["title"] != "Inspected" || r.Metadata["author"] != "Docrender Tests" ||
		r.PDFA != nil || r.PDFUA != nil || len(r.Attachments) != 0 || r.PDFVersion == "" {
		t.Errorf("report %+v", r)
	}
	if len(r.Fonts) == 0 {
		t.Error("no fonts reported")
	}
	for _, f := range r.Fonts {
		if !f.Embedded {
			t.Errorf("font %s reported not embedded; Chromium embeds every font", f.Name)
		}
	}

	locked := c.generatePDF("<p>secret</p>", map[string]any{"encryption": map[string]any{"ownerPassword": "o", "userPassword": "u"}})
	resp = c.inspect(pdfFile("locked.pdf", locked))
	mustStatus(t, resp, http.StatusOK)
	decode(t, resp, &got)
	if !got.Data.Encrypted {
		t.Errorf("a locked PDF reported %+v", got.Data)
	}

	if e := expectError(t, c.inspect(pdfFile("a.pdf", pdf), pdfFile("b.pdf", pdf)), 400, "BAD_REQUEST"); e.Field != "files" {
		t.Errorf("two PDFs: field %q", e.Field)
	}
	expectError(t, c.inspect(file{Field: "files", Name: "notes.txt", Type: "text/plain", Data: []byte("hello")}), 400, "BAD_REQUEST")
	if e := expectError(t, c.inspect(pdfFile("cut.pdf", pdf[:len(pdf)/3])), 400, "BAD_REQUEST"); e.Message == "" {
		t.Error("a truncated PDF: no message")
	}
	if n := c.usage(); n != used+1 { // the locked PDF's render only
		t.Errorf("conversions used %d, want %d: inspecting is free", n, used+1)
	}
}
