package sign

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrender/docrender/proto/jobspb"
)

var (
	signedOnce sync.Once
	signedPDF  []byte
)

// aSignedPDF is chromium.pdf signed B-B by acme, made once.
func aSignedPDF(t testing.TB) []byte {
	t.Helper()
	signedOnce.Do(func() {
		p := testPKI(t)
		ids, err := LoadDir(p.IDs)
		if err != nil {
			t.Fatal(err)
		}
		signedPDF = signPDF(t, chromiumPDF(t), &jobspb.Signature{Identity: "acme", Reason: "Approved"}, ids["acme"], nil)
	})
	if signedPDF == nil {
		t.Fatal("no signed PDF")
	}
	return bytes.Clone(signedPDF)
}

// withByteRange replaces the ByteRange of pdf by the four numbers, in the
// same width.
func withByteRange(t testing.TB, pdf []byte, a, b, c, d int64) []byte {
	t.Helper()
	loc := byteRangeRE.FindIndex(pdf)
	if loc == nil {
		t.Fatal("no ByteRange")
	}
	old := pdf[loc[0]:loc[1]]
	repl := fmt.Sprintf("/ByteRange[%d %d %d %d", a, b, c, d)
	if len(repl)+1 > len(old) {
		t.Fatalf("%s does not fit in %s", repl, old)
	}
	repl += strings.Repeat(" ", len(old)-len(repl)-1) + "]"
	out := bytes.Clone(pdf)
	copy(out[loc[0]:], repl)
	return out
}

// ranges are the ByteRange of a signed PDF.
func ranges(t testing.TB, pdf []byte) (a, b, c, d int64) {
	t.Helper()
	m := byteRangeRE.FindSubmatch(pdf)
	if m == nil {
		t.Fatal("no ByteRange")
	}
	fmt.Sscan(string(m[1]), &a)
	fmt.Sscan(string(m[2]), &b)
	fmt.Sscan(string(m[3]), &c)
	fmt.Sscan(string(m[4]), &d)
	return
}

// hugeContentsPDF is a PDF whose one signature has a /Contents of n bytes
// of garbage hex.
func hugeContentsPDF(n int) []byte {
	var buf bytes.Buffer
	buf.WriteString("%PDF-1.7\n1 0 obj\n<</Type/Sig/Filter/Adobe.PPKLite/SubFilter/ETSI.CAdES.detached/ByteRange[0 30 40 10]/Contents<")
	buf.WriteString(strings.Repeat("3082", n/4))
	buf.WriteString(">>>\nendobj\ntrailer\n<</Root 1 0 R>>\n%%EOF\n")
	return buf.Bytes()
}

func TestRead(t *testing.T) {
	signed := aSignedPDF(t)
	a, b, c, d := ranges(t, signed)
	size := int64(len(signed))
	tampered := bytes.Clone(signed)
	tampered[b/2] ^= 0x01
	tamperedEnd := bytes.Clone(signed)
	tamperedEnd[size-20] ^= 0x20
	garbage := bytes.Clone(signed)
	copy(garbage[b+1:], bytes.Repeat([]byte("DEADBEEF"), 100))
	type want struct {
		n                    int
		valid, covers, level bool
	}
	for _, tc := range []struct {
		name string
		pdf  []byte
		want want
	}{
		{"signed", signed, want{1, true, true, true}},
		{"one byte flipped", tampered, want{1, false, true, true}},
		{"one byte flipped at the end", tamperedEnd, want{1, false, true, true}},
		{"bytes appended", append(bytes.Clone(signed), "\n% an increment\n"...), want{1, true, false, true}},
		{"ByteRange past EOF", withByteRange(t, signed, a, b, c, d+1), want{1, false, false, false}},
		{"ByteRange far past EOF", withByteRange(t, signed, 0, b, c, 999999999), want{1, false, false, false}},
		{"ByteRange negative", withByteRange(t, signed, 0, -b, c, d), want{1, false, false, false}},
		{"ByteRange overlapping", withByteRange(t, signed, 0, b, b-10, d+(c-b)+10), want{1, false, false, false}},
		{"ByteRange not from 0", withByteRange(t, signed, 1, b-1, c, d), want{1, false, false, true}},
		{"ByteRange shorter", withByteRange(t, signed, 0, b-1, c, d), want{1, false, false, true}},
		{"garbage CMS", garbage, want{1, false, true, false}},
		{"10 MB Contents", hugeContentsPDF(10 << 20), want{1, false, false, false}},
		{"unsigned", chromiumPDF(t), want{0, false, false, false}},
		{"ByteRange tokens only", bytes.Repeat([]byte("/ByteRange[0 1 2 3]"), 50000), want{0, false, false, false}},
		{"empty", nil, want{0, false, false, false}},
		{"nested object headers", append(bytes.Repeat([]byte("1 0 obj<</ByteRange[0 1 2 3]/Contents<30>"), 200000), "endobj"...), want{0, false, false, false}},
		{"many signatures", bytes.Repeat([]byte("1 0 obj<</ByteRange[0 1 2 3]/Contents<30>>>endobj\n"), 10000), want{maxSignatures, false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			found, err := Read(tc.pdf)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Read took %v", d)
			}
			if len(found) != tc.want.n {
				t.Fatalf("found %v", found)
			}
			if tc.want.n == 0 {
				return
			}
			f := found[0]
			if f.Valid != tc.want.valid || f.CoversWholeDocument != tc.want.covers || (f.Level == "B-B") != tc.want.level {
				t.Errorf("found %s, want %+v", f, tc.want)
			}
			if tc.want.level && (f.Signer != "ACME Signer" || f.Reason != "Approved" || f.SignedAt.IsZero()) {
				t.Errorf("found %s", f)
			}
		})
	}
}

// tinyPDF is a one-page PDF with exact offsets.
func tinyPDF() []byte {
	var buf bytes.Buffer
	var offs []int
	buf.WriteString("%PDF-1.4\n")
	for _, o := range []string{
		"<</Type/Catalog/Pages 2 0 R>>",
		"<</Type/Pages/Kids[3 0 R]/Count 1>>",
		"<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>",
	} {
		offs = append(offs, buf.Len())
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", len(offs), o)
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&buf, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&buf, "trailer\n<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref)
	return buf.Bytes()
}

// tinySignedPDF is tinyPDF signed by a throwaway ECDSA key, made in Go:
// a small fuzz seed, without the openssl CLI in the fuzz workers.
func tinySignedPDF(tb testing.TB) []byte {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "Fuzz"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	id, err := NewIdentity("fuzz", key, []*x509.Certificate{cert})
	if err != nil {
		tb.Fatal(err)
	}
	return signPDF(tb, tinyPDF(), &jobspb.Signature{Identity: "fuzz", Reason: "r"}, id, nil)
}

func FuzzRead(f *testing.F) {
	signed := tinySignedPDF(f)
	if found, _ := Read(signed); len(found) != 1 || !found[0].Valid || !found[0].CoversWholeDocument {
		f.Fatalf("the seed: %v", found)
	}
	a, b, c, d := ranges(f, signed)
	f.Add(signed)
	f.Add(withByteRange(f, signed, a, b, c, d+1))
	f.Add(withByteRange(f, signed, 0, -b, c, d))
	f.Add(withByteRange(f, signed, 0, b, b-10, d+(c-b)+10))
	f.Add(hugeContentsPDF(1 << 10))
	f.Add([]byte("1 0 obj <</ByteRange[0 1 2 3]/Contents<30>/V<</ByteRange[0 0 0 0]>>>> endobj"))
	f.Add([]byte("%PDF-1.7\n1 0 obj\n<</Type/Sig/SubFilter/ETSI.RFC3161/ByteRange[0 10 20 5]/Contents(\\060\\202)>>\nendobj\n"))
	f.Fuzz(func(t *testing.T, pdf []byte) {
		found, err := Read(pdf)
		if err != nil {
			t.Fatal(err)
		}
		if len(found) > maxSignatures {
			t.Fatalf("%d signatures", len(found))
		}
		for _, s := range found {
			if len(s.Reason) > maxReason {
				t.Fatalf("reason of %d bytes", len(s.Reason))
			}
		}
	})
}
