package sign

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/docrender/docrender/proto/jobspb"
)

// The tests check our signatures with independent readers: poppler's
// pdfsig, OpenSSL's cms and ts, qpdf. scripts/setup installs them.
func needTools(tb testing.TB, tools ...string) {
	tb.Helper()
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			tb.Fatalf("%s not found (apt-get install -y poppler-utils qpdf openssl): %v", t, err)
		}
	}
}

func run(tb testing.TB, dir string, name string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// pki is one test run's certificates, made with the openssl CLI: a CA, an
// RSA signer as a PKCS #12 (OpenSSL 3's defaults: AES-256, PBKDF2), an EC
// signer as PEM, and a time-stamping certificate (critical EKU
// timeStamping); the identities in ids, everything else in dir.
type pki struct {
	dir, ids string
	caCrt    string
	tsaCnf   string
}

var (
	pkiOnce sync.Once
	pkiVal  *pki
	pkiErr  error
	pkiRoot string
)

// TestMain removes the shared PKI of the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if pkiRoot != "" {
		os.RemoveAll(pkiRoot)
	}
	os.Exit(code)
}

// testPKI makes the PKI once per test run (key generation is the slow
// part).
func testPKI(tb testing.TB) *pki {
	tb.Helper()
	needTools(tb, "openssl")
	pkiOnce.Do(func() {
		pkiRoot, pkiErr = os.MkdirTemp("", "docrender-sign-test-")
		if pkiErr == nil {
			pkiVal, pkiErr = makePKI(pkiRoot)
		}
	})
	if pkiErr != nil {
		tb.Fatal(pkiErr)
	}
	return pkiVal
}

func makePKI(dir string) (*pki, error) {
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
	return &pki{dir: dir, ids: ids, caCrt: filepath.Join(dir, "ca.crt"), tsaCnf: filepath.Join(dir, "ts.cnf")}, nil
}

// tsaServer is a local RFC 3161 authority: `openssl ts -reply` behind an
// httptest server on the loopback interface.
func tsaServer(tb testing.TB, p *pki) *httptest.Server {
	tb.Helper()
	return tsaServerWith(tb, p, nil)
}

// tsaServerWith is tsaServer answering, when edit is not nil, the query
// that edit makes of the one it gets.
func tsaServerWith(tb testing.TB, p *pki, edit func([]byte) []byte) *httptest.Server {
	tb.Helper()
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
		dir, err := os.MkdirTemp(p.dir, "tsq-")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer os.RemoveAll(dir)
		if err := os.WriteFile(filepath.Join(dir, "q.tsq"), q, 0o600); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		cmd := exec.Command("openssl", "ts", "-reply", "-config", p.tsaCnf, "-queryfile", "q.tsq", "-out", "r.tsr")
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
	tb.Cleanup(srv.Close)
	return srv
}

func testConf() *model.Configuration {
	if model.ConfigPath == "default" {
		api.DisableConfigDir()
	}
	c := model.NewDefaultConfiguration()
	c.ValidationMode = model.ValidationRelaxed
	c.Offline = true
	c.WriteObjectStream = false
	c.WriteXRefStream = false
	return c
}

// readPDF reads a PDF into a pdfcpu context as the worker does.
func readPDF(tb testing.TB, pdf []byte) *model.Context {
	tb.Helper()
	ctx, err := api.ReadContext(bytes.NewReader(pdf), testConf())
	if err != nil {
		tb.Fatal(err)
	}
	if err := api.ValidateContext(ctx); err != nil {
		tb.Fatal(err)
	}
	return ctx
}

func chromiumPDF(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile("../pdfedit/testdata/chromium.pdf")
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// signPDF prepares, writes and seals in, as the post-processing does.
func signPDF(tb testing.TB, in []byte, sig *jobspb.Signature, id *Identity, tsa *TSA) []byte {
	tb.Helper()
	ctx := readPDF(tb, in)
	if err := Prepare(ctx, sig, id, time.Now()); err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeContext(ctx, &buf); err != nil {
		tb.Fatal(err)
	}
	out, err := Seal(context.Background(), buf.Bytes(), sig, id, tsa)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

var byteRangeRE = regexp.MustCompile(`/ByteRange\s*\[\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\]`)

// signedBytes are the bytes a PDF's (only) ByteRange covers, read with a
// regular expression, not with Read.
func signedBytes(tb testing.TB, pdf []byte) []byte {
	tb.Helper()
	m := byteRangeRE.FindSubmatch(pdf)
	if m == nil {
		tb.Fatal("no ByteRange")
	}
	var v [4]int
	for i := range v {
		v[i], _ = strconv.Atoi(string(m[i+1]))
	}
	return append(append([]byte{}, pdf[v[0]:v[0]+v[1]]...), pdf[v[2]:v[2]+v[3]]...)
}

func writeContext(ctx *model.Context, w io.Writer) error { return api.WriteContext(ctx, w) }
