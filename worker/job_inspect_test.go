package worker

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"os"
	"testing"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/sign"
)

// TestInspectSignatures: inspect reports a signature made by package sign
// as valid B-B over the whole file, and one changed byte as not valid.
func TestInspectSignatures(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Inspector"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	id, err := sign.NewIdentity("inspector", key, []*x509.Certificate{cert})
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.ReadFile("pdfedit/testdata/chromium.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if model.ConfigPath == "default" {
		api.DisableConfigDir() // as pdfedit does: no ~/.config/pdfcpu
	}
	conf := model.NewDefaultConfiguration()
	conf.ValidationMode = model.ValidationRelaxed
	pc, err := api.ReadContext(bytes.NewReader(in), conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := api.ValidateContext(pc); err != nil {
		t.Fatal(err)
	}
	sig := &jobspb.Signature{Identity: "inspector", Reason: "Checked"}
	if err := sign.Prepare(pc, sig, id, time.Now()); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := api.WriteContext(pc, &buf); err != nil {
		t.Fatal(err)
	}
	signed, err := sign.Seal(context.Background(), buf.Bytes(), sig, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := signatures(signed)
	if len(got) != 1 {
		t.Fatalf("signatures %v", got)
	}
	s := got[0]
	at, err := time.Parse(time.RFC3339, s.SignedAt)
	if s.Signer != "Inspector" || s.Level != "B-B" || !s.Valid || !s.CoversWholeDocument || s.Reason != "Checked" ||
		err != nil || time.Since(at) > time.Minute {
		t.Errorf("signature %v", s)
	}
	signed[100] ^= 1
	if got := signatures(signed); len(got) != 1 || got[0].Valid {
		t.Errorf("a changed file: %v", got)
	}
	if got := signatures(in); len(got) != 0 {
		t.Errorf("an unsigned file: %v", got)
	}
}
