package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/signids"
	"github.com/docrender/docrender/worker/sign/signtest"
)

// signingService is a service with the test PKI's identities and its TSA.
func signingService(t *testing.T) (*service, *signtest.PKI) {
	t.Helper()
	p, err := signtest.Make(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tsa := signtest.TSAServer(t, p, nil)
	names, err := signids.Names(p.IDs)
	if err != nil {
		t.Fatal(err)
	}
	svc := startService(t, func(cfg *configT) {
		cfg.AdminToken = adminToken
		cfg.SigningDir, cfg.SigningIdentities, cfg.TSAURL = p.IDs, names, tsa.URL
	})
	return svc, p
}

// pdfsig is poppler's verdict on a PDF's signatures.
func pdfsig(t testing.TB, pdf []byte) string {
	t.Helper()
	out, _ := exec.Command("pdfsig", "-nocert", "-no-ocsp", writeTemp(t, pdf, ".pdf")).CombinedOutput()
	return string(out)
}

// TestSignatures: PAdES B-B and B-T (a local TSA), invisible and visible,
// alone and on a PDF/A, by a granted identity; poppler's pdfsig finds each
// valid and covering the whole document, OpenSSL verifies the CMS against
// the test CA, inspect agrees. An identity not granted is a 403, a box off
// the page a 400 naming it; a service without identities says signing is off.
func TestSignatures(t *testing.T) {
	svc, p := signingService(t)
	c := newClient(t, svc)
	grant := adminReq(t, svc, "PUT", "/api/admin/accounts/"+c.UserID+"/signing", adminToken, jsonBody(map[string]any{"identities": []string{"acme"}}))
	mustStatus(t, grant, http.StatusOK)
	grant.Body.Close()

	for _, tc := range []struct {
		name string
		opts map[string]any
		lvl  string
	}{
		{"B-B invisible", map[string]any{"sign": map[string]any{"identity": "acme", "reason": "Approved"}}, "B-B"},
		{"B-T visible on PDF/A-2b", map[string]any{"pdfa": "2b", "sign": map[string]any{"identity": "acme", "level": "B-T",
			"visible": map[string]any{"page": 1, "x": 50, "y": 50, "width": 220, "height": 60, "text": "Signed by ACME"}}}, "B-T"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pdf := c.generatePDF(recordPage, tc.opts)
			out := pdfsig(t, pdf)
			for _, want := range []string{"Signature is Valid.", "Total document signed", "ETSI.CAdES.detached"} {
				if !strings.Contains(out, want) {
					t.Fatalf("pdfsig does not say %q:\n%s", want, out)
				}
			}
			verifyCMS(t, pdf, p.CACrt)
			if pdfa, _ := tc.opts["pdfa"].(string); pdfa != "" {
				checkRecordPDF(t, pdf, pdfa, false)
			}
			sigs := c.inspectReport(pdf).Signatures
			if len(sigs) != 1 || !sigs[0].Valid || !sigs[0].CoversWholeDocument || sigs[0].Level != tc.lvl || sigs[0].Signer != "ACME Signer" {
				t.Errorf("inspect: %+v", sigs)
			}
		})
	}
	// Changing one byte of the signed range: pdfsig and inspect both see it.
	pdf := c.generatePDF(recordPage, map[string]any{"sign": map[string]any{"identity": "acme"}})
	tampered := bytes.Replace(pdf, []byte("/Creator"), []byte("/Kreator"), 1)
	if sigs := c.inspectReport(tampered).Signatures; len(sigs) != 1 || sigs[0].Valid {
		t.Errorf("tampered: inspect says %+v", sigs)
	}
	// Merging a signed PDF keeps the pages; the signature no longer covers them.
	resp := c.merge([]file{pdfFile("signed.pdf", pdf), pdfFile("also.pdf", pdf)}, nil)
	mustStatus(t, resp, http.StatusOK)
	readAll(t, resp)

	for _, tc := range []struct {
		name   string
		sign   map[string]any
		status int
		field  string
	}{
		{"not granted", map[string]any{"identity": "acme-ec"}, 403, ""},
		{"unknown", map[string]any{"identity": "nobody"}, 403, ""},
		{"box off the page", map[string]any{"identity": "acme", "visible": map[string]any{"x": 5000, "y": 10, "width": 100, "height": 40}}, 400, "sign.visible.x"},
		{"box on a missing page", map[string]any{"identity": "acme", "visible": map[string]any{"page": 9, "x": 5, "y": 10, "width": 100, "height": 40}}, 400, "sign.visible.page"},
		{"with encryption", map[string]any{"identity": "acme"}, 400, "sign"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := map[string]any{"sign": tc.sign}
			if tc.name == "with encryption" {
				opts["encryption"] = map[string]any{"ownerPassword": "o"}
			}
			code := map[int]string{400: "BAD_REQUEST", 403: "FORBIDDEN"}[tc.status]
			e := expectError(t, c.generate([]file{htmlFile("index.html", recordPage)}, opts), tc.status, code)
			if tc.field != "" && e.Field != tc.field && !strings.Contains(e.Message, tc.field) {
				t.Errorf("field %q / %q, want %s", e.Field, e.Message, tc.field)
			}
		})
	}
	c.generatePDF("<p>still serving</p>", nil)

	// A service without identities: signing is off, a 400 naming sign.
	off := newClient(t, sharedService(t))
	if e := expectError(t, off.generate([]file{htmlFile("index.html", recordPage)}, map[string]any{"sign": map[string]any{"identity": "acme"}}), 400, "BAD_REQUEST"); e.Field != "sign" {
		t.Errorf("signing off: field %q", e.Field)
	}
}

// verifyCMS checks the signature with OpenSSL against the test CA: the CMS
// over the two signed ranges.
func verifyCMS(t testing.TB, pdf []byte, ca string) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "s.pdf")
	os.WriteFile(p, pdf, 0o644)
	cmd := exec.Command("pdfsig", "-nocert", "-no-ocsp", "-dump", p)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pdfsig -dump: %v\n%s", err, out)
	}
	der := filepath.Join(dir, "s.pdf.sig0")
	if _, err := os.Stat(der); err != nil {
		t.Fatalf("pdfsig dumped no signature: %v", err)
	}
	signed := signedRanges(t, pdf)
	content := filepath.Join(dir, "content")
	os.WriteFile(content, signed, 0o644)
	out, err := exec.Command("openssl", "cms", "-verify", "-binary", "-inform", "DER", "-in", der, "-content", content,
		"-CAfile", ca, "-purpose", "any", "-out", os.DevNull).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl cms -verify: %v\n%s", err, out)
	}
}

// signedRanges is the bytes a PDF's one signature covers (its ByteRange).
func signedRanges(t testing.TB, pdf []byte) []byte {
	t.Helper()
	i := bytes.Index(pdf, []byte("/ByteRange"))
	if i < 0 {
		t.Fatal("no ByteRange")
	}
	var r [4]int
	rest := string(pdf[i+len("/ByteRange"):])
	rest = strings.TrimLeft(rest, " [")
	fields := strings.Fields(strings.SplitN(rest, "]", 2)[0])
	if len(fields) != 4 {
		t.Fatalf("ByteRange %q", fields)
	}
	for k, f := range fields {
		if err := json.Unmarshal([]byte(f), &r[k]); err != nil {
			t.Fatal(err)
		}
	}
	return append(append([]byte(nil), pdf[r[0]:r[0]+r[1]]...), pdf[r[2]:r[2]+r[3]]...)
}
