// Package signtest makes what signing tests need, with the openssl
// command line: a CA, signing identities in a DOCRENDER_SIGNING_DIR, and
// a local time-stamp authority. The sign package's tests and the e2e
// tests share it.
package signtest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// PKI is one test run's certificates.
type PKI struct {
	// Dir holds everything; IDs is the identities' directory (a
	// DOCRENDER_SIGNING_DIR with the identities acme and acme-ec).
	Dir, IDs string
	// CACrt is the CA certificate (PEM) that issued the identities and the TSA.
	CACrt string
	// TSACnf is the `openssl ts` configuration of the TSA.
	TSACnf string
}

// Make writes a test CA, signing identities and a time-stamp authority
// into dir with the openssl command line: ids/acme.p12 (RSA, OpenSSL 3's
// default PKCS #12 encryption) with ids/acme.pass, ids/acme-ec.crt and
// ids/acme-ec.key (EC P-256, PEM), and the TSA's certificate (critical EKU
// timeStamping) with an `openssl ts` configuration.
func Make(dir string) (*PKI, error) {
	ids := filepath.Join(dir, "ids")
	if err := os.Mkdir(ids, 0o700); err != nil {
		return nil, err
	}
	ext := `[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[signer]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, nonRepudiation
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[tsa]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = critical, timeStamping
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
`
	tsCnf := fmt.Sprintf(`[ tsa ]
default_tsa = tsa1
[ tsa1 ]
dir = %s
serial = $dir/tsaserial
crypto_device = builtin
signer_cert = $dir/tsa.crt
certs = $dir/ca.crt
signer_key = $dir/tsa.key
signer_digest = sha256
default_policy = 1.2.3.4.1
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
`, dir)
	for name, body := range map[string]string{"ext.cnf": ext, "ts.cnf": tsCnf, "tsaserial": "01\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			return nil, err
		}
	}
	cmds := [][]string{
		{"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=Docrender Test CA", "-days", "30", "-config", "ext.cnf", "-extensions", "ca"},
		// RSA signer, as a .p12 with OpenSSL 3's default encryption.
		{"req", "-newkey", "rsa:2048", "-nodes", "-keyout", "rsa.key", "-out", "rsa.csr", "-config", "ext.cnf", "-subj", "/CN=ACME Signer/O=ACME"},
		{"x509", "-req", "-in", "rsa.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "rsa.crt", "-days", "30", "-extfile", "ext.cnf", "-extensions", "signer"},
		{"pkcs12", "-export", "-in", "rsa.crt", "-inkey", "rsa.key", "-certfile", "ca.crt", "-out", "ids/acme.p12", "-passout", "pass:s3cret pass"},
		// EC signer, PEM (the key as PKCS #8).
		{"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ids/acme-ec.key", "-out", "ec.csr", "-config", "ext.cnf", "-subj", "/CN=ACME EC Signer"},
		{"x509", "-req", "-in", "ec.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "ec.crt", "-days", "30", "-extfile", "ext.cnf", "-extensions", "signer"},
		// The time-stamping authority.
		{"req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tsa.key", "-out", "tsa.csr", "-config", "ext.cnf", "-subj", "/CN=Docrender Test TSA"},
		{"x509", "-req", "-in", "tsa.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "tsa.crt", "-days", "30", "-extfile", "ext.cnf", "-extensions", "tsa"},
	}
	for _, args := range cmds {
		cmd := exec.Command("openssl", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("openssl %v: %v\n%s", args, err, out)
		}
	}
	ec, _ := os.ReadFile(filepath.Join(dir, "ec.crt"))
	ca, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err := os.WriteFile(filepath.Join(ids, "acme-ec.crt"), append(ec, ca...), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(ids, "acme.pass"), []byte("s3cret pass\n"), 0o600); err != nil {
		return nil, err
	}
	return &PKI{Dir: dir, IDs: ids, CACrt: filepath.Join(dir, "ca.crt"), TSACnf: filepath.Join(dir, "ts.cnf")}, nil
}

// TSAServer is a local RFC 3161 authority: `openssl ts -reply` behind an
// httptest server on the loopback interface, answering, when edit is not
// nil, the query that edit makes of the one it gets.
func TSAServer(tb testing.TB, p *PKI, edit func([]byte) []byte) *httptest.Server {
	tb.Helper()
	srv := NewTSA(p, edit)
	tb.Cleanup(srv.Close)
	return srv
}

// NewTSA is TSAServer for a program (the bench): the caller closes it.
func NewTSA(p *PKI, edit func([]byte) []byte) *httptest.Server {
	var mu sync.Mutex // the serial file
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err != nil || r.Header.Get("Content-Type") != "application/timestamp-query" {
			http.Error(w, "bad query", http.StatusBadRequest)
			return
		}
		if edit != nil {
			q = edit(q)
		}
		mu.Lock()
		defer mu.Unlock()
		dir, err := os.MkdirTemp(p.Dir, "tsq-")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer os.RemoveAll(dir)
		if err := os.WriteFile(filepath.Join(dir, "q.tsq"), q, 0o600); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		cmd := exec.Command("openssl", "ts", "-reply", "-config", p.TSACnf, "-queryfile", "q.tsq", "-out", "r.tsr")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			http.Error(w, string(out), http.StatusInternalServerError)
			return
		}
		resp, err := os.ReadFile(filepath.Join(dir, "r.tsr"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/timestamp-reply")
		w.Write(resp)
	}))
	return srv
}
