package sign

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/proto/jobspb"
)

func loadIDs(t *testing.T) (*pki, map[string]*Identity) {
	t.Helper()
	p := testPKI(t)
	ids, err := LoadDir(p.IDs)
	if err != nil {
		t.Fatal(err)
	}
	return p, ids
}

func TestLoadDir(t *testing.T) {
	p, ids := loadIDs(t)
	for name, want := range map[string]string{"acme": "ACME Signer", "acme-ec": "ACME EC Signer"} {
		id := ids[name]
		if id == nil {
			t.Fatalf("identity %s not loaded: %v", name, ids)
		}
		if id.Name != name || len(id.Chain) != 2 || id.Chain[0].Subject.CommonName != want ||
			id.Chain[1].Subject.CommonName != "Docrender Test CA" {
			t.Errorf("%s: name %q, chain %d, leaf %q", name, id.Name, len(id.Chain), id.Chain[0].Subject.CommonName)
		}
		if s := id.String(); strings.Contains(s, "PRIVATE") || s != "identity "+name {
			t.Errorf("String() = %q", s)
		}
	}
	if len(ids) != 2 {
		t.Errorf("loaded %d identities, want 2", len(ids))
	}
	names, err := Names(p.IDs)
	if err != nil || strings.Join(names, ",") != "acme,acme-ec" {
		t.Errorf("Names = %v, %v", names, err)
	}
	if m, err := LoadDir(""); err != nil || len(m) != 0 || m == nil {
		t.Errorf(`LoadDir("") = %v, %v`, m, err)
	}
	if n, err := Names(""); err != nil || len(n) != 0 {
		t.Errorf(`Names("") = %v, %v`, n, err)
	}
	if _, err := LoadDir(filepath.Join(p.Dir, "absent")); err == nil {
		t.Error("LoadDir of a missing directory: no error")
	}
}

// TestLoadDirFormats loads the key formats OpenSSL writes: PKCS #1 and
// SEC 1 besides PKCS #8, and a .p12 in the legacy encryption.
func TestLoadDirFormats(t *testing.T) {
	p := testPKI(t)
	dir := t.TempDir()
	cp := func(from, to string) {
		b, err := os.ReadFile(filepath.Join(p.Dir, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cp("rsa.crt", "pkcs1.crt")
	run(t, p.Dir, "openssl", "rsa", "-in", "rsa.key", "-traditional", "-out", filepath.Join(dir, "pkcs1.key"))
	cp("ec.crt", "sec1.crt")
	run(t, p.Dir, "openssl", "ec", "-in", "ids/acme-ec.key", "-out", filepath.Join(dir, "sec1.key"))
	run(t, p.Dir, "openssl", "pkcs12", "-export", "-legacy", "-in", "rsa.crt", "-inkey", "rsa.key", "-out", filepath.Join(dir, "legacy.p12"), "-passout", "pass:x")
	if err := os.WriteFile(filepath.Join(dir, "legacy.pass"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"pkcs1.key", "sec1.key"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		if !bytes.Contains(b, []byte("-----BEGIN RSA PRIVATE KEY-----")) && !bytes.Contains(b, []byte("-----BEGIN EC PRIVATE KEY-----")) {
			t.Fatalf("%s is not in the traditional format:\n%s", f, b)
		}
	}
	// Kubernetes mounts a secret with ..data links and a ..timestamp dir.
	if err := os.Mkdir(filepath.Join(dir, "..2026_01_01"), 0o700); err != nil {
		t.Fatal(err)
	}
	ids, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || ids["pkcs1"] == nil || ids["sec1"] == nil || ids["legacy"] == nil {
		t.Fatalf("loaded %v", ids)
	}
}

func TestLoadDirErrors(t *testing.T) {
	p := testPKI(t)
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(p.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	p12, rsaCrt, rsaKey, ecKey := read("ids/acme.p12"), read("rsa.crt"), read("rsa.key"), read("ids/acme-ec.key")
	long := strings.Repeat("a", 65)
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		// wantFile is the file the error must name.
		wantFile string
	}{
		{"garbage p12", map[string][]byte{"x.p12": []byte("not a pkcs12"), "x.pass": []byte("a")}, "x.p12"},
		{"wrong password", map[string][]byte{"x.p12": p12, "x.pass": []byte("wrong\n")}, "x.p12"},
		{"p12 without pass", map[string][]byte{"x.p12": p12}, "x.p12"},
		{"pass without p12", map[string][]byte{"x.pass": []byte("a")}, "x.pass"},
		{"crt without key", map[string][]byte{"x.crt": rsaCrt}, "x.crt"},
		{"key without crt", map[string][]byte{"x.key": rsaKey}, "x.key"},
		{"garbage key", map[string][]byte{"x.crt": rsaCrt, "x.key": []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")}, "x.key"},
		{"no certificate", map[string][]byte{"x.crt": []byte("nothing"), "x.key": rsaKey}, "x.crt"},
		{"key of another certificate", map[string][]byte{"x.crt": rsaCrt, "x.key": ecKey}, "x.crt"},
		{"both p12 and pem", map[string][]byte{"x.p12": p12, "x.pass": []byte("s3cret pass"), "x.crt": rsaCrt, "x.key": rsaKey}, "x.p12"},
		{"upper case", map[string][]byte{"Acme.p12": p12, "Acme.pass": []byte("s3cret pass")}, "Acme."},
		{"underscore", map[string][]byte{"a_b.crt": rsaCrt, "a_b.key": rsaKey}, "a_b."},
		{"space", map[string][]byte{"a b.crt": rsaCrt, "a b.key": rsaKey}, "a b."},
		{"too long", map[string][]byte{long + ".crt": rsaCrt, long + ".key": rsaKey}, long},
		{"stray file", map[string][]byte{"README.md": []byte("hi")}, "README.md"},
		{"empty stem", map[string][]byte{"-.crt": rsaCrt, "-.key": rsaKey, ".p12": p12}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, b := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := LoadDir(dir)
			if tc.name == "empty stem" {
				// "-" is a valid name and ".p12" a hidden file: no error.
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), filepath.Join(dir, tc.wantFile)) {
				t.Errorf("error %q does not name %s", err, tc.wantFile)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "wrong\n") {
				t.Errorf("error %q shows a password", err)
			}
			// Names fails alike on a layout problem, but reads no key.
			if _, nerr := Names(dir); nerr == nil && !strings.Contains(tc.name, "garbage") && !strings.Contains(tc.name, "password") &&
				!strings.Contains(tc.name, "certificate") {
				t.Errorf("Names: no error")
			}
		})
	}
	for _, name := range []string{"../x", "a/b", "", "A", "x.y", long, "é"} {
		if ValidName(name) {
			t.Errorf("ValidName(%q) = true", name)
		}
		if _, err := NewIdentity(name, nil, nil); err == nil {
			t.Errorf("NewIdentity(%q): no error", name)
		}
	}
}

// sigCase is one signature made and checked by the independent readers.
type sigCase struct {
	name     string
	identity string
	sig      *jobspb.Signature
}

func TestSign(t *testing.T) {
	needTools(t, "pdfsig", "qpdf", "pdffonts", "openssl")
	p, ids := loadIDs(t)
	srv := tsaServer(t, p)
	tsa := &TSA{URL: srv.URL}
	in := chromiumPDF(t)
	for _, tc := range []sigCase{
		{"rsa invisible B-B", "acme", &jobspb.Signature{Identity: "acme", Reason: "Approved", Location: "Zürich", ContactInfo: "ops@example.com"}},
		{"rsa visible B-T", "acme", &jobspb.Signature{Identity: "acme", Timestamp: true, Visible: &jobspb.SignBox{Page: 2, X: 350, Y: 40, Width: 220, Height: 60}}},
		{"ec invisible B-T", "acme-ec", &jobspb.Signature{Identity: "acme-ec", Reason: "Für die Akten (ünïcödé)", Timestamp: true}},
		{"ec visible B-B text", "acme-ec", &jobspb.Signature{Identity: "acme-ec", Visible: &jobspb.SignBox{Page: 1, X: 0, Y: 0, Width: 612, Height: 792, Text: "Approved by\nthe board"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := signPDF(t, in, tc.sig, ids[tc.identity], tsa)
			file := filepath.Join(dir, "out.pdf")
			if err := os.WriteFile(file, out, 0o600); err != nil {
				t.Fatal(err)
			}
			// poppler
			info := run(t, dir, "pdfsig", "-nocert", "-no-ocsp", "out.pdf")
			run(t, dir, "pdfsig", "-nocert", "-no-ocsp", "-dump", "out.pdf")
			for _, want := range []string{"Signature is Valid.", "Total document signed", "Signature Type: ETSI.CAdES.detached",
				"Signer Certificate Common Name: " + ids[tc.identity].Chain[0].Subject.CommonName} {
				if !strings.Contains(info, want) {
					t.Errorf("pdfsig does not say %q:\n%s", want, info)
				}
			}
			if strings.Count(info, "Signature #") != 1 {
				t.Errorf("pdfsig sees %d signatures", strings.Count(info, "Signature #"))
			}
			// OpenSSL: the CMS verifies over the signed bytes, to our CA.
			if err := os.WriteFile(filepath.Join(dir, "content"), signedBytes(t, out), 0o600); err != nil {
				t.Fatal(err)
			}
			run(t, dir, "openssl", "cms", "-verify", "-binary", "-inform", "DER", "-in", "out.pdf.sig0", "-content", "content",
				"-CAfile", p.CACrt, "-purpose", "any", "-out", os.DevNull)
			printed := run(t, dir, "openssl", "cms", "-cmsout", "-print", "-inform", "DER", "-in", "out.pdf.sig0")
			if !strings.Contains(printed, "signingCertificateV2") {
				t.Error("no signing-certificate-v2 attribute")
			}
			// No signingTime among the signed attributes (PAdES forbids it);
			// OpenSSL's time-stamp token has one of its own.
			if !tc.sig.Timestamp && strings.Contains(printed, "signingTime") {
				t.Error("a signingTime attribute")
			}
			if der, err := os.ReadFile(filepath.Join(dir, "out.pdf.sig0")); err != nil {
				t.Fatal(err)
			} else if p, err := parseCMS(der); err != nil {
				t.Fatal(err)
			} else if _, ok := p.attrs[oidAttrSigningTime.String()]; ok || len(p.attrs) != 3 {
				t.Errorf("signed attributes %v", p.attrs)
			}
			if tc.sig.Timestamp != strings.Contains(printed, "id-smime-aa-timeStampToken") {
				t.Errorf("time-stamp token present: %t, want %t", !tc.sig.Timestamp, tc.sig.Timestamp)
			}
			if tc.sig.Timestamp {
				token, sigValue := tokenOf(t, filepath.Join(dir, "out.pdf.sig0"))
				os.WriteFile(filepath.Join(dir, "tst.der"), token, 0o600)
				os.WriteFile(filepath.Join(dir, "sigvalue"), sigValue, 0o600)
				run(t, dir, "openssl", "ts", "-verify", "-in", "tst.der", "-token_in", "-data", "sigvalue", "-CAfile", p.CACrt)
			}
			run(t, dir, "qpdf", "--check", "out.pdf")
			if tc.sig.Visible != nil {
				fonts := run(t, dir, "pdffonts", "out.pdf")
				if !strings.Contains(fonts, "LiberationSans ") && !strings.Contains(fonts, "+LiberationSans") {
					t.Errorf("the appearance font is not listed:\n%s", fonts)
				}
				for _, line := range strings.Split(fonts, "\n")[2:] {
					if f := strings.Fields(line); len(f) > 4 && (f[len(f)-5] != "yes" || f[len(f)-3] != "yes") {
						t.Errorf("a font not embedded or without ToUnicode: %s", line)
					}
				}
			}
			// Read agrees.
			found, err := Read(out)
			if err != nil || len(found) != 1 {
				t.Fatalf("Read = %v, %v", found, err)
			}
			f := found[0]
			level := "B-B"
			if tc.sig.Timestamp {
				level = "B-T"
			}
			if !f.Valid || !f.CoversWholeDocument || f.Level != level || f.Signer != ids[tc.identity].Chain[0].Subject.CommonName ||
				f.Reason != tc.sig.Reason || time.Since(f.SignedAt) > time.Minute || time.Until(f.SignedAt) > 5*time.Second {
				t.Errorf("Read = %s", f)
			}
		})
	}
}

// tokenOf pulls the signatureTimeStampToken and the signature value out of
// a CMS file, with encoding/asn1 alone.
func tokenOf(t *testing.T, file string) (token, sigValue []byte) {
	t.Helper()
	der, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseCMS(der)
	if err != nil {
		t.Fatal(err)
	}
	tok, ok := p.unsigned[oidAttrSignatureTSToken.String()]
	if !ok {
		t.Fatal("no token")
	}
	return tok.FullBytes, p.si.Signature
}

// TestSignTagged: the widget of a tagged PDF is in its structure tree
// (PDF/UA 7.18.4), the form is signed (SigFlags 3), the widget printable.
func TestSignTagged(t *testing.T) {
	_, ids := loadIDs(t)
	out := signPDF(t, chromiumPDF(t), &jobspb.Signature{Identity: "acme"}, ids["acme"], nil)
	ctx := readPDF(t, out)
	x := ctx.XRefTable
	form, err := x.DereferenceDict(x.RootDict["AcroForm"])
	if err != nil || form == nil {
		t.Fatal("no AcroForm", err)
	}
	if n, _ := form["SigFlags"].(types.Integer); n != 3 {
		t.Errorf("SigFlags %v", form["SigFlags"])
	}
	fields, _ := x.DereferenceArray(form["Fields"])
	if len(fields) != 1 {
		t.Fatalf("fields %v", fields)
	}
	widgetRef := fields[0].(types.IndirectRef)
	widget, _ := x.DereferenceDict(widgetRef)
	if widget["F"] != types.Integer(4) || widget["FT"] != types.Name("Sig") || widget["TU"] == nil {
		t.Errorf("widget %v", widget)
	}
	sp, ok := widget["StructParent"].(types.Integer)
	if !ok || sp != 2 {
		t.Fatalf("widget StructParent %v, want 2 (ParentTreeNextKey was 2)", widget["StructParent"])
	}
	str, _ := x.DereferenceDict(x.RootDict["StructTreeRoot"])
	if str["ParentTreeNextKey"] != types.Integer(3) {
		t.Errorf("ParentTreeNextKey %v", str["ParentTreeNextKey"])
	}
	pt, _ := x.DereferenceDict(str["ParentTree"])
	nums, _ := x.DereferenceArray(pt["Nums"])
	if len(nums) != 6 || nums[4] != types.Integer(2) {
		t.Fatalf("ParentTree Nums %v", nums)
	}
	elem, _ := x.DereferenceDict(nums[5])
	objr, _ := x.DereferenceDict(elem["K"])
	if elem["S"] != types.Name("Form") || objr["Type"] != types.Name("OBJR") || objr["Obj"] != widgetRef {
		t.Errorf("struct elem %v, K %v", elem, objr)
	}
	// The element hangs under Document.
	doc, _ := x.DereferenceDict(elem["P"])
	kids, _ := x.DereferenceArray(doc["K"])
	if doc["S"] != types.Name("Document") || len(kids) != 5 {
		t.Errorf("parent %v, kids %v", doc["S"], kids)
	}
	// Invisible: Rect [0 0 0 0] on page 1.
	if r, _ := x.DereferenceArray(widget["Rect"]); len(r) != 4 || r[2] != types.Integer(0) {
		t.Errorf("Rect %v", widget["Rect"])
	}
}

func TestPrepareBadBox(t *testing.T) {
	_, ids := loadIDs(t)
	in := chromiumPDF(t) // 2 pages of 612 x 792
	for _, tc := range []struct {
		box   *jobspb.SignBox
		field string
	}{
		{&jobspb.SignBox{Page: 0, X: 10, Y: 10, Width: 10, Height: 10}, "sign.visible.page"},
		{&jobspb.SignBox{Page: 3, X: 10, Y: 10, Width: 10, Height: 10}, "sign.visible.page"},
		{&jobspb.SignBox{Page: -1, X: 10, Y: 10, Width: 10, Height: 10}, "sign.visible.page"},
		{&jobspb.SignBox{Page: 1, X: -1, Y: 10, Width: 10, Height: 10}, "sign.visible.x"},
		{&jobspb.SignBox{Page: 1, X: 612, Y: 10, Width: 10, Height: 10}, "sign.visible.x"},
		{&jobspb.SignBox{Page: 1, X: math.NaN(), Y: 10, Width: 10, Height: 10}, "sign.visible.x"},
		{&jobspb.SignBox{Page: 1, X: 10, Y: 800, Width: 10, Height: 10}, "sign.visible.y"},
		{&jobspb.SignBox{Page: 1, X: 10, Y: -0.5, Width: 10, Height: 10}, "sign.visible.y"},
		{&jobspb.SignBox{Page: 1, X: 10, Y: 10, Width: 0, Height: 10}, "sign.visible.width"},
		{&jobspb.SignBox{Page: 1, X: 10, Y: 10, Width: math.Inf(1), Height: 10}, "sign.visible.width"},
		{&jobspb.SignBox{Page: 1, X: 500, Y: 10, Width: 200, Height: 10}, "sign.visible.width"},
		{&jobspb.SignBox{Page: 2, X: 10, Y: 10, Width: 10, Height: -5}, "sign.visible.height"},
		{&jobspb.SignBox{Page: 2, X: 10, Y: 700, Width: 10, Height: 100}, "sign.visible.height"},
	} {
		ctx := readPDF(t, in)
		err := Prepare(ctx, &jobspb.Signature{Identity: "acme", Visible: tc.box}, ids["acme"], time.Now())
		var bad *BadBoxError
		if !errors.As(err, &bad) || bad.Field != tc.field {
			t.Errorf("%+v: error %v, want a BadBoxError naming %s", tc.box, err, tc.field)
		}
	}
}

// TestSealPlaceholders: Seal refuses a PDF without a placeholder, and a
// signature that does not fit.
func TestSealPlaceholders(t *testing.T) {
	_, ids := loadIDs(t)
	if _, err := Seal(context.Background(), chromiumPDF(t), &jobspb.Signature{}, ids["acme"], nil); !errors.Is(err, ErrNoPlaceholder) {
		t.Errorf("unprepared PDF: %v", err)
	}
	if _, err := Seal(context.Background(), []byte("%PDF-1.7\n1 0 obj\n<</ByteRange"+byteRangeText+"/Contents<0000>>>\nendobj\n"),
		&jobspb.Signature{}, ids["acme"], nil); err == nil || !strings.Contains(err.Error(), "larger than its placeholder") {
		t.Errorf("small placeholder: %v", err)
	}
	// B-T without a TSA.
	ctx := readPDF(t, chromiumPDF(t))
	sig := &jobspb.Signature{Identity: "acme", Timestamp: true}
	if err := Prepare(ctx, sig, ids["acme"], time.Now()); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeContext(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	if _, err := Seal(context.Background(), buf.Bytes(), sig, ids["acme"], nil); !errors.Is(err, ErrTSA) {
		t.Errorf("B-T without a TSA: %v", err)
	}
}

// The placeholder stays within PDF/A's string limit, with room for the
// token.
func TestContentsSize(t *testing.T) {
	_, ids := loadIDs(t)
	for _, id := range ids {
		n, err := contentsSize(id, true)
		if err != nil || n > maxContents || n < timestampRoom {
			t.Errorf("%s: %d, %v", id.Name, n, err)
		}
	}
	big := *ids["acme"]
	for range 30 {
		big.Chain = append(big.Chain, ids["acme"].Chain...)
	}
	if _, err := contentsSize(&big, true); err == nil {
		t.Error("a huge chain fits")
	}
}
