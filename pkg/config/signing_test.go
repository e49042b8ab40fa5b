package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// DOCRENDER_SIGNING_DIR and DOCRENDER_TSA_URL (DESIGN §2, §8) are read and
// checked at start: the identities are listed by name, and a directory or
// address that cannot work refuses the start, naming the variable.
func TestSigningSettings(t *testing.T) {
	good := t.TempDir()
	for _, f := range []string{"acme.p12", "acme.pass", "beta.crt", "beta.key", "README"} {
		if err := os.WriteFile(filepath.Join(good, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	empty := t.TempDir()
	half := t.TempDir()
	if err := os.WriteFile(filepath.Join(half, "acme.p12"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		ids     []string
		tsa     string
		wantErr []string
	}{
		{"off", nil, nil, "", nil},
		{"identities", map[string]string{"DOCRENDER_SIGNING_DIR": good}, []string{"acme", "beta"}, "", nil},
		{"with a time-stamp authority", map[string]string{"DOCRENDER_SIGNING_DIR": good, "DOCRENDER_TSA_URL": "https://tsa.example.com/tsr"}, []string{"acme", "beta"}, "https://tsa.example.com/tsr", nil},
		{"plain http authority", map[string]string{"DOCRENDER_SIGNING_DIR": good, "DOCRENDER_TSA_URL": "http://127.0.0.1:3180"}, []string{"acme", "beta"}, "http://127.0.0.1:3180", nil},
		{"missing directory", map[string]string{"DOCRENDER_SIGNING_DIR": filepath.Join(good, "nope")}, nil, "", []string{"DOCRENDER_SIGNING_DIR", "nope"}},
		{"no identity", map[string]string{"DOCRENDER_SIGNING_DIR": empty}, nil, "", []string{"DOCRENDER_SIGNING_DIR", "at least one identity"}},
		{"half an identity", map[string]string{"DOCRENDER_SIGNING_DIR": half}, nil, "", []string{"DOCRENDER_SIGNING_DIR", "acme.p12 has no acme.pass"}},
		{"authority without scheme", map[string]string{"DOCRENDER_TSA_URL": "tsa.example.com"}, nil, "", []string{"DOCRENDER_TSA_URL", "http, https"}},
		{"authority of another scheme", map[string]string{"DOCRENDER_TSA_URL": "ftp://tsa.example.com"}, nil, "", []string{"DOCRENDER_TSA_URL"}},
		{"relative authority", map[string]string{"DOCRENDER_TSA_URL": "/tsr"}, nil, "", []string{"DOCRENDER_TSA_URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(env(tc.env))
			if tc.wantErr != nil {
				if err == nil {
					t.Fatal("Load succeeded")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.SigningIdentities, tc.ids) || c.TSAURL != tc.tsa || c.SigningDir != tc.env["DOCRENDER_SIGNING_DIR"] {
				t.Errorf("dir %q, identities %q, TSA %q; want %q, %q", c.SigningDir, c.SigningIdentities, c.TSAURL, tc.ids, tc.tsa)
			}
		})
	}
}

// Both are settings the service knows: no "did you mean" for them.
func TestSigningSettingsAreKnown(t *testing.T) {
	c, err := LoadEnviron([]string{"DOCRENDER_TSA_URL=https://tsa.example.com"})
	if err != nil || len(c.Warnings) != 0 {
		t.Fatalf("warnings %q, %v", c.Warnings, err)
	}
	if c, _ := LoadEnviron([]string{"DOCRENDER_SIGNING_DIRECTORY=/x"}); len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "DOCRENDER_SIGNING_DIR?") {
		t.Fatalf("warnings %q", c.Warnings)
	}
}
