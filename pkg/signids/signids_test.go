package signids

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"acme", true},
		{"acme-2", true},
		{"0", true},
		{strings.Repeat("a", 64), true},
		{"", false},
		{strings.Repeat("a", 65), false},
		{"Acme", false},
		{"acme_2", false},
		{"acme.p12", false},
		{"../acme", false},
		{"a/b", false},
		{"acme ", false},
		{"é", false},
	} {
		if got := ValidName(tc.name); got != tc.ok {
			t.Errorf("ValidName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

// write makes each file (a name ending in / is a directory) in a new directory.
func write(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		p := filepath.Join(dir, n)
		if strings.HasSuffix(n, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte("not read"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   []string
		want    []string
		wantErr []string // each in the error; nil: no error
	}{
		{"empty", nil, nil, nil},
		{"both forms", []string{"acme.p12", "acme.pass", "beta-2.crt", "beta-2.key"}, []string{"acme", "beta-2"}, nil},
		{"other files ignored", []string{"acme.p12", "acme.pass", "README.md", "ca.pem", "acme.p12.bak", ".acme.p12.swp", ".hidden.p12"}, []string{"acme"}, nil},
		{"p12 without pass", []string{"acme.p12"}, nil, []string{"acme.p12 has no acme.pass"}},
		{"pass without p12", []string{"acme.pass"}, nil, []string{"acme.pass has no acme.p12"}},
		{"crt without key", []string{"acme.crt"}, nil, []string{"acme.crt has no acme.key"}},
		{"key without crt", []string{"acme.key"}, nil, []string{"acme.key has no acme.crt"}},
		{"both forms of one name", []string{"acme.p12", "acme.pass", "acme.crt", "acme.key"}, nil, []string{`"acme" is both`}},
		{"bad stem", []string{"Acme.p12", "Acme.pass"}, nil, []string{"Acme.p12", "a-z, 0-9"}},
		{"directory named like a file", []string{"acme.p12/", "acme.pass"}, nil, []string{"acme.p12: not a regular file"}},
		{"every problem named", []string{"a.p12", "b.key"}, nil, []string{"a.p12 has no a.pass", "b.key has no b.crt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Names(write(t, tc.files...))
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("Names = %q, want %q", got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Names = %q, want an error", got)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// A Kubernetes secret volume: the files are symbolic links into a hidden
// directory, which is itself reached through a link.
func TestNamesFollowsLinks(t *testing.T) {
	dir := write(t, "..2026_01_01/", "..2026_01_01/acme.p12", "..2026_01_01/acme.pass")
	for _, l := range [][2]string{{"..2026_01_01", "..data"}, {"..data/acme.p12", "acme.p12"}, {"..data/acme.pass", "acme.pass"}} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Names(dir)
	if err != nil || !slices.Equal(got, []string{"acme"}) {
		t.Fatalf("Names = %q, %v", got, err)
	}
	if err := os.Symlink("missing.p12", filepath.Join(dir, "gone.p12")); err != nil {
		t.Fatal(err)
	}
	if _, err := Names(dir); err == nil || !strings.Contains(err.Error(), "gone.p12") {
		t.Fatalf("a dangling link: %v", err)
	}
}

func TestNamesOfMissingDir(t *testing.T) {
	if _, err := Names(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Fatal("no error for a missing directory")
	}
}
