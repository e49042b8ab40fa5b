package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/docrender/docrender/gateway/server/apierr"
)

const (
	cacheHTML = `<!doctype html><link rel="stylesheet" href="style.css"><p>Invoice 42</p>`
	cacheCSS  = `p { color: #123456; }`
)

// cached is one answer of a generate with a caching ID.
type cached struct {
	cache, pdfID string
	pdf          []byte
}

// cachedGenerate posts index.html and style.css with opts; 200 expected.
func (c *client) cachedGenerate(html, css string, opts map[string]any) cached {
	c.t.Helper()
	resp := c.generate([]file{htmlFile("index.html", html), {Name: "style.css", Type: "text/css", Data: []byte(css)}}, opts)
	mustStatus(c.t, resp, http.StatusOK)
	return cached{cache: resp.Header.Get("X-Cache"), pdfID: resp.Header.Get("X-PDF-ID"), pdf: readAll(c.t, resp)}
}

func TestCacheDocumentID(t *testing.T) {
	eachBackend(t, func(t *testing.T, svc *service) {
		c, other := newClient(t, svc), newClient(t, svc)
		c.changePlan("pro")
		opts := map[string]any{"documentId": "invoice-42", "fileName": "invoice"}
		with := func(extra map[string]any) map[string]any {
			o := map[string]any{}
			for k, v := range opts {
				o[k] = v
			}
			for k, v := range extra {
				o[k] = v
			}
			return o
		}
		step := func(name string, got cached, wantCache string, wantConversions int64) {
			t.Helper()
			if got.cache != wantCache || got.pdfID == "" {
				t.Fatalf("%s: X-Cache %q X-PDF-ID %q, want %s", name, got.cache, got.pdfID, wantCache)
			}
			if n := c.billingUsage().ConversionsUsed; n != wantConversions {
				t.Fatalf("%s: %d conversions counted, want %d", name, n, wantConversions)
			}
		}

		first := c.cachedGenerate(cacheHTML, cacheCSS, opts)
		step("first", first, "MISS", 1)
		if info(t, first.pdf).Pages != 1 {
			t.Fatal("not a one-page PDF")
		}
		hit := c.cachedGenerate(cacheHTML, cacheCSS, opts)
		step("same inputs", hit, "HIT", 1)
		if hit.pdfID != first.pdfID || string(hit.pdf) != string(first.pdf) {
			t.Fatal("a hit returned another document")
		}
		// appointmentId is the same caching ID under its other name.
		alias := c.cachedGenerate(cacheHTML, cacheCSS, map[string]any{"appointmentId": "invoice-42", "fileName": "invoice"})
		step("appointmentId", alias, "HIT", 1)
		if alias.pdfID != first.pdfID {
			t.Fatal("appointmentId found another document")
		}
		e := expectError(t, c.generate([]file{htmlFile("index.html", cacheHTML)}, with(map[string]any{"appointmentId": "other"})),
			http.StatusBadRequest, apierr.BadRequest)
		if e.Field != "documentId" {
			t.Fatalf("both IDs differing: %+v", e)
		}

		// The cached document is a stored file under the usual paths, not hosted.
		status, hdr, b := get(t, svc.URL+"/pdf/download/"+first.pdfID, nil)
		if status != http.StatusOK || string(b) != string(first.pdf) || hdr.Get("Content-Disposition") == "" {
			t.Fatalf("download of the cached document: %d", status)
		}
		if u := c.billingUsage(); u.HostedCount != 0 {
			t.Fatalf("a cached document without host counts as hosted: %+v", u)
		}

		// Every change of the inputs renders and replaces the stored document.
		prev := first.pdfID
		changes := []struct {
			name string
			html string
			css  string
			opts map[string]any
		}{
			{"regenerate", cacheHTML, cacheCSS, with(map[string]any{"regenerate": true})},
			{"changed html", cacheHTML + "<p>paid</p>", cacheCSS, opts},
			{"changed asset bytes", cacheHTML, "p { color: red; }", opts},
			// DESIGN §6's options are inputs too.
			{"changed footer", cacheHTML, cacheCSS, with(map[string]any{"footerTemplate": "<span class=pageNumber></span>"})},
			{"changed metadata", cacheHTML, cacheCSS, with(map[string]any{"metadata": map[string]any{"title": "Invoice 42"}})},
			{"changed option", cacheHTML, cacheCSS, with(map[string]any{"format": "Letter"})},
		}
		for i, ch := range changes {
			got := c.cachedGenerate(ch.html, ch.css, ch.opts)
			step(ch.name, got, "MISS", int64(2+i))
			if got.pdfID == prev {
				t.Fatalf("%s: same stored file", ch.name)
			}
			if status, _, _ := get(t, svc.URL+"/pdf/download/"+prev, nil); status != http.StatusNotFound {
				t.Fatalf("%s: the replaced document answers %d, want 404", ch.name, status)
			}
			if !blobGone(t, svc, prev) {
				t.Fatalf("%s: the replaced document's bytes remain", ch.name)
			}
			prev = got.pdfID
		}
		// The last inputs are now the cached ones.
		again := c.cachedGenerate(cacheHTML, cacheCSS, with(map[string]any{"format": "Letter"}))
		step("after replacement", again, "HIT", int64(1+len(changes)))
		if again.pdfID != prev {
			t.Fatal("hit on another file than the replacement")
		}

		// Per account: the same ID and inputs elsewhere are another document.
		theirs := other.cachedGenerate(cacheHTML, cacheCSS, with(map[string]any{"format": "Letter"}))
		if theirs.cache != "MISS" || theirs.pdfID == prev {
			t.Fatalf("another account shared the cache: %q %s", theirs.cache, theirs.pdfID)
		}
		if c.cachedGenerate(cacheHTML, cacheCSS, with(map[string]any{"format": "Letter"})).pdfID != prev {
			t.Fatal("another account's render replaced this account's document")
		}

		// Without a caching ID there is no X-Cache.
		resp := c.generate([]file{htmlFile("index.html", cacheHTML)}, nil)
		mustStatus(t, resp, http.StatusOK)
		resp.Body.Close()
		if resp.Header.Get("X-Cache") != "" {
			t.Fatalf("X-Cache %q without a caching ID", resp.Header.Get("X-Cache"))
		}
	})
}

// A hit renders nothing and counts nothing, so it answers even when the
// month's conversions are used up.
func TestCacheHitWithQuotaExhausted(t *testing.T) {
	svc := storageBackends(t)[0].svc
	c := newClient(t, svc) // hobby: 10 conversions
	opts := map[string]any{"documentId": "receipt-7"}
	first := c.cachedGenerate(cacheHTML, cacheCSS, opts)
	if first.cache != "MISS" {
		t.Fatalf("X-Cache %q", first.cache)
	}
	u, err := svc.App.Server.Accounts().User(context.Background(), c.UserID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.App.Server.Accounts().ReserveConversions(context.Background(), u, "test-fill", 9, time.Hour, time.Hour); err != nil {
		t.Fatal(err)
	}
	expectError(t, c.generate([]file{htmlFile("index.html", cacheHTML)}, nil), http.StatusTooManyRequests, apierr.QuotaExceeded)
	if got := c.cachedGenerate(cacheHTML, cacheCSS, opts); got.cache != "HIT" || got.pdfID != first.pdfID {
		t.Fatalf("hit at the quota: %q %s", got.cache, got.pdfID)
	}
	// A miss needs a render, and the quota refuses it.
	expectError(t, c.generate([]file{htmlFile("index.html", cacheHTML)}, map[string]any{"documentId": "receipt-7", "regenerate": true}),
		http.StatusTooManyRequests, apierr.QuotaExceeded)
	if got := c.cachedGenerate(cacheHTML, cacheCSS, opts); got.pdfID != first.pdfID {
		t.Fatal("a refused regeneration lost the cached document")
	}
	if n := c.billingUsage().ConversionsUsed; n != 10 {
		t.Fatalf("%d conversions, want 10", n)
	}
}

// With host:true the cached document is a hosted file: a hit answers the
// same spec 2.2 result, and regenerating swaps one hosted file for another
// even at the hosted limit.
func TestCacheHostedDocument(t *testing.T) {
	eachBackend(t, func(t *testing.T, svc *service) {
		c := newClient(t, svc) // hobby: 2 hosted files
		opts := map[string]any{"documentId": "contract-1", "host": true}
		post := func(o map[string]any) (hosted, string) {
			t.Helper()
			resp := c.generate([]file{htmlFile("index.html", hostedHTML)}, o)
			mustStatus(t, resp, http.StatusOK)
			var h hosted
			decode(t, resp, &h)
			return h, resp.Header.Get("X-Cache")
		}
		a, state := post(opts)
		if state != "MISS" {
			t.Fatalf("first: %s", state)
		}
		b, state := post(opts)
		if state != "HIT" || b != a {
			t.Fatalf("hit: %s %+v, want %+v", state, b, a)
		}
		c.host(hostedHTML, nil) // the second and last hosted slot
		regen := map[string]any{"documentId": "contract-1", "host": true, "regenerate": true}
		d, state := post(regen)
		if state != "MISS" || d.PdfID == a.PdfID {
			t.Fatalf("regenerate at the hosted limit: %s %+v", state, d)
		}
		if status, _, _ := get(t, a.URL, nil); status != http.StatusNotFound {
			t.Fatalf("replaced hosted document answers %d", status)
		}
		if u := c.billingUsage(); u.HostedCount != 2 || u.ConversionsUsed != 3 {
			t.Fatalf("usage %+v, want 2 hosted and 3 conversions", u)
		}
		resp := c.generate([]file{htmlFile("index.html", hostedHTML)}, map[string]any{"host": true})
		expectError(t, resp, http.StatusTooManyRequests, apierr.HostedLimit)
		// The list shows the replacement, not the replaced.
		resp = c.bearer("GET", "/api/hosted-pdfs/list", body{})
		mustStatus(t, resp, http.StatusOK)
		var l listAnswer
		decode(t, resp, &l)
		found := false
		for _, raw := range l.Data.Pdfs {
			var m metadata
			_ = json.Unmarshal(raw, &m)
			if m.PdfID == a.PdfID {
				t.Fatal("replaced document listed")
			}
			found = found || m.PdfID == d.PdfID
		}
		if !found || l.Data.Total != 2 {
			t.Fatalf("list %+v", l)
		}
	})
}
