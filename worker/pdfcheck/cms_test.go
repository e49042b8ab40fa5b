package pdfcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestParseCMS: 6.4.3-2/3 read OpenSSL's CMS SignedData (with and without
// the signer's certificate) as a signature's zero-padded Contents holds it.
func TestParseCMS(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("no openssl")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	p := func(n string) string { return filepath.Join(dir, n) }
	run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", p("k.pem"), "-out", p("c.pem"), "-subj", "/CN=signer", "-days", "1")
	if err := os.WriteFile(p("m"), []byte("signed bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	run("cms", "-sign", "-binary", "-in", p("m"), "-signer", p("c.pem"), "-inkey", p("k.pem"), "-outform", "DER", "-out", p("with.der"))
	run("cms", "-sign", "-binary", "-in", p("m"), "-signer", p("c.pem"), "-inkey", p("k.pem"), "-outform", "DER", "-out", p("without.der"), "-nocerts")
	for f, want := range map[string]bool{"with.der": true, "without.der": false} {
		der, err := os.ReadFile(p(f))
		if err != nil {
			t.Fatal(err)
		}
		n, cert, ok := parseCMS(append(der, make([]byte, 64)...))
		if !ok || n != 1 || cert != want {
			t.Errorf("%s: %d SignerInfos, certificate %v, parsed %v", f, n, cert, ok)
		}
	}
	if _, _, ok := parseCMS([]byte{0x30, 0x00}); ok {
		t.Error("an empty SEQUENCE parsed as SignedData")
	}
}
