package sign

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/sign/signtest"
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

// pki is one test run's certificates (signtest.Make).
type pki = signtest.PKI

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
			pkiVal, pkiErr = signtest.Make(pkiRoot)
		}
	})
	if pkiErr != nil {
		tb.Fatal(pkiErr)
	}
	return pkiVal
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
	return signtest.TSAServer(tb, p, edit)
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
