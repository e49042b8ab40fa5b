package pdfedit

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/docrender/docrender/proto/jobspb"
)

func encrypted(tb testing.TB, in []byte, enc *jobspb.Encryption) []byte {
	tb.Helper()
	var out bytes.Buffer
	if err := Encrypt(context.Background(), bytes.NewReader(in), &out, enc); err != nil {
		tb.Fatalf("Encrypt: %v", err)
	}
	return out.Bytes()
}

// exitCode runs a tool and returns its exit status and combined output.
func exitCode(tb testing.TB, name string, args ...string) (int, string) {
	tb.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	tb.Fatalf("%s: %v", name, err)
	return 0, ""
}

// popplerPasswordBytes is as much of a -upw password as poppler's tools
// keep (a 33-byte buffer): a longer one is checked with qpdf alone.
const popplerPasswordBytes = 32

// qpdf --requires-password exit codes (qpdf --help=--requires-password).
const (
	qpdfPasswordRequired = 0
	qpdfNotEncrypted     = 2
	qpdfOpensWithout     = 3 // encrypted, no password needed to open
)

var showEncRe = regexp.MustCompile(`(?m)^([^:=\n]+?)\s*[:=]\s*(.*)$`)

// showEncryption is qpdf --show-encryption's "key: value" and "key = value"
// lines of the PDF at path, opened with the owner password.
func showEncryption(tb testing.TB, path, owner string) map[string]string {
	tb.Helper()
	out := run(tb, "qpdf", "--password="+owner, "--show-encryption", path)
	m := map[string]string{}
	for _, f := range showEncRe.FindAllStringSubmatch(out, -1) {
		m[strings.TrimSpace(f[1])] = strings.TrimSpace(f[2])
	}
	return m
}

// allowed is qpdf's word for a permission.
func allowed(b bool) string {
	if b {
		return "allowed"
	}
	return "not allowed"
}

// TestEncrypt checks with qpdf and poppler what a reader sees: AES-256 of
// revision 6, the permissions asked for, the user password (if any) needed
// and sufficient to open the document, any other refused.
func TestEncrypt(t *testing.T) {
	needTools(t, "qpdf", "pdfinfo", "pdftotext")
	tests := []struct {
		name string
		in   []byte
		enc  *jobspb.Encryption
	}{
		{"gateway defaults", chromiumPDF(t), &jobspb.Encryption{UserPassword: "open sesame", OwnerPassword: "owner secret", AllowPrinting: true, AllowCopying: true}},
		{"no user password", chromiumPDF(t), &jobspb.Encryption{OwnerPassword: "owner secret", AllowPrinting: true, AllowCopying: true}},
		{"nothing allowed", chromiumPDF(t), &jobspb.Encryption{UserPassword: "u", OwnerPassword: "o"}},
		{"nothing allowed, no user password", rawPDF("RAW", 3, 2), &jobspb.Encryption{OwnerPassword: "o"}},
		{"only printing", chromiumPDF(t), &jobspb.Encryption{UserPassword: "u", OwnerPassword: "o", AllowPrinting: true}},
		{"only copying", qpdfPDF(t, "QPDF", 2), &jobspb.Encryption{UserPassword: "u", OwnerPassword: "o", AllowCopying: true}},
		{"everything", rawPDF("RAW", 1, 1), &jobspb.Encryption{UserPassword: "u", OwnerPassword: "o", AllowPrinting: true, AllowCopying: true, AllowModifying: true}},
		{"UTF-8 passwords", chromiumPDF(t), &jobspb.Encryption{UserPassword: "pässwört", OwnerPassword: "所有者", AllowPrinting: true}},
		{"longest passwords", chromiumPDF(t), &jobspb.Encryption{UserPassword: strings.Repeat("u", MaxPasswordBytes), OwnerPassword: strings.Repeat("o", MaxPasswordBytes)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tmpPDF(t, encrypted(t, tt.in, tt.enc))
			user, owner := tt.enc.UserPassword, tt.enc.OwnerPassword

			want := qpdfPasswordRequired
			if user == "" {
				want = qpdfOpensWithout
			}
			if code, out := exitCode(t, "qpdf", "--requires-password", path); code != want {
				t.Errorf("qpdf --requires-password: exit %d, want %d\n%s", code, want, out)
			}

			enc := showEncryption(t, path, owner)
			for k, v := range map[string]string{
				"R":                        "6",
				"stream encryption method": "AESv3", "string encryption method": "AESv3", "file encryption method": "AESv3",
				"print high resolution":     allowed(tt.enc.AllowPrinting),
				"print low resolution":      allowed(tt.enc.AllowPrinting),
				"extract for any purpose":   allowed(tt.enc.AllowCopying),
				"extract for accessibility": allowed(true),
				"modify document assembly":  allowed(tt.enc.AllowModifying),
				"modify forms":              allowed(tt.enc.AllowModifying),
				"modify annotations":        allowed(tt.enc.AllowModifying),
				"modify other":              allowed(tt.enc.AllowModifying),
				"modify anything":           allowed(tt.enc.AllowModifying),
			} {
				if enc[k] != v {
					t.Errorf("qpdf --show-encryption: %s = %q, want %q", k, enc[k], v)
				}
			}

			// The owner password opens it too, and qpdf finds no fault.
			if code, out := exitCode(t, "qpdf", "--password="+owner, "--check", path); code != 0 {
				t.Errorf("qpdf --check: exit %d\n%s", code, out)
			}
			// The user password opens it (no password at all when there is
			// none), with every page; a wrong one does not.
			if code, out := exitCode(t, "qpdf", "--requires-password", "--password="+user, path); code != qpdfOpensWithout {
				t.Errorf("qpdf --requires-password with the user password: exit %d, want %d\n%s", code, qpdfOpensWithout, out)
			}
			if user != "" {
				if code, out := exitCode(t, "qpdf", "--requires-password", "--password=x"+user, path); code != qpdfPasswordRequired {
					t.Errorf("qpdf --requires-password with a wrong password: exit %d, want %d\n%s", code, qpdfPasswordRequired, out)
				}
			}
			if len(user) > popplerPasswordBytes {
				return
			}
			pages := pdfinfoPages(t, tmpPDF(t, tt.in))
			if got := pdfinfoFields(t, path, "-upw", user)["Pages"]; got != strconv.Itoa(pages) {
				t.Errorf("pdfinfo -upw: Pages %q, want %d", got, pages)
			}
			if text := run(t, "pdftotext", "-upw", user, path, "-"); len(strings.Fields(text)) == 0 {
				t.Error("pdftotext -upw: no text")
			}
			if user != "" {
				if code, out := exitCode(t, "pdftotext", "-upw", "x"+user, path, "-"); code == 0 {
					t.Errorf("pdftotext with a wrong password succeeded:\n%.200s", out)
				}
				if code, _ := exitCode(t, "pdftotext", path, "-"); code == 0 {
					t.Error("pdftotext without the password succeeded")
				}
			}
		})
	}
}

// TestInfoThenEncrypt is a job's order: the information set first is there,
// encrypted, for a reader holding the user password.
func TestInfoThenEncrypt(t *testing.T) {
	needTools(t, "pdfinfo", "qpdf")
	info := &jobspb.DocInfo{Author: "Jane Doe", Subject: "Secret plans", Keywords: []string{"a", "b"}, Creator: "Plans Inc"}
	pdf := encrypted(t, withInfo(t, chromiumPDF(t), info), &jobspb.Encryption{UserPassword: "u", OwnerPassword: "o", AllowPrinting: true})
	path := tmpPDF(t, pdf)
	got := pdfinfoFields(t, path, "-upw", "u")
	for k, want := range map[string]string{"Title": chromiumTitle, "Author": "Jane Doe", "Subject": "Secret plans",
		"Keywords": "a, b", "Creator": "Plans Inc", "Encrypted": "yes (print:yes copy:no change:no addNotes:no algorithm:AES-256)"} {
		if got[k] != want {
			t.Errorf("pdfinfo %s = %q, want %q", k, got[k], want)
		}
	}
	// The strings are encrypted: the title is not in the file's bytes.
	if bytes.Contains(pdf, []byte("Secret plans")) || bytes.Contains(pdf, []byte("Quarterly")) {
		t.Error("document information readable without decrypting")
	}
}

// TestEncryptNil: no encryption copies the input as it is.
func TestEncryptNil(t *testing.T) {
	in := chromiumPDF(t)
	if got := encrypted(t, in, nil); !bytes.Equal(got, in) {
		t.Error("nil encryption: output differs from the input")
	}
}

func TestEncryptInvalidOptions(t *testing.T) {
	long := strings.Repeat("p", MaxPasswordBytes+1)
	tests := []struct {
		name string
		enc  *jobspb.Encryption
	}{
		{"no owner password", &jobspb.Encryption{UserPassword: "u"}},
		{"nothing", &jobspb.Encryption{}},
		{"same passwords", &jobspb.Encryption{UserPassword: "same", OwnerPassword: "same"}},
		{"long owner password", &jobspb.Encryption{OwnerPassword: long}},
		{"long user password", &jobspb.Encryption{UserPassword: long, OwnerPassword: "o"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Encrypt(context.Background(), bytes.NewReader(chromiumPDF(t)), &out, tt.enc)
			if !errors.Is(err, ErrInvalidEncryption) {
				t.Fatalf("err = %v, want ErrInvalidEncryption", err)
			}
			if out.Len() != 0 {
				t.Errorf("%d bytes written", out.Len())
			}
		})
	}
}

func TestEncryptErrors(t *testing.T) {
	needTools(t, "qpdf")
	enc := &jobspb.Encryption{OwnerPassword: "o"}
	good := rawPDF("E", 2, 3)
	var be *BadInputError
	for name, in := range map[string][]byte{"text": []byte("not a pdf"), "truncated": good[:len(good)/2], "empty": nil,
		// Already encrypted: nothing in a job encrypts twice, but it must fail cleanly.
		"encrypted": encrypted(t, good, &jobspb.Encryption{UserPassword: "u", OwnerPassword: "o2"})} {
		if err := Encrypt(context.Background(), bytes.NewReader(in), &bytes.Buffer{}, enc); !errors.As(err, &be) {
			t.Errorf("%s: err = %v, want *BadInputError", name, err)
		}
	}
	if err := Encrypt(context.Background(), bytes.NewReader(good), nil, enc); err == nil {
		t.Error("nil writer: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Encrypt(ctx, bytes.NewReader(good), &bytes.Buffer{}, enc); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
}
