// Package signids lists the signing identities an operator put in
// DOCRENDER_SIGNING_DIR (DESIGN §8) by name, without reading any key: the
// gateway checks requests and grants against the names, and only the
// worker loads the keys themselves.
//
// An identity NAME is either NAME.p12 (PKCS#12) with its password in
// NAME.pass, or a PEM certificate chain NAME.crt with its key in NAME.key.
package signids

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MaxName is the longest identity name.
const MaxName = 64

// The two forms of an identity: a file holding the certificate and a file
// holding what opens the key (or the key itself).
var pairs = [][2]string{{".p12", ".pass"}, {".crt", ".key"}}

// ValidName reports whether s is a possible identity name: 1 to 64 of
// a-z, 0-9 and '-'. Such a name is safe as a file stem and in a log.
func ValidName(s string) bool {
	if s == "" || len(s) > MaxName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// Names lists, sorted, the identities in dir. It reads the directory and
// stats the files (symbolic links followed, as in a Kubernetes secret
// volume), never their contents. Names starting with '.' and files of
// other suffixes are ignored. A file of an identity's suffixes whose stem
// is not a valid name, a half of a pair without its other half, or a name
// in both forms is an error naming the file: the operator meant an
// identity and it would not load.
func Names(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("signids: %w", err)
	}
	// files[stem][suffix]: which of the suffixes exist for each stem.
	files := map[string]map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue // ..data and friends of a secret volume, editor files
		}
		ext := filepath.Ext(name)
		if !known(ext) {
			continue
		}
		path := filepath.Join(dir, name)
		stem := strings.TrimSuffix(name, ext)
		if !ValidName(stem) {
			return nil, fmt.Errorf("signids: %s: an identity's name is 1 to %d of a-z, 0-9 and -", path, MaxName)
		}
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("signids: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("signids: %s: not a regular file", path)
		}
		if files[stem] == nil {
			files[stem] = map[string]bool{}
		}
		files[stem][ext] = true
	}
	var names []string
	var errs []error
	for stem, has := range files {
		forms := 0
		for _, p := range pairs {
			switch {
			case has[p[0]] && has[p[1]]:
				forms++
			case has[p[0]]:
				errs = append(errs, fmt.Errorf("signids: %s has no %s beside it", filepath.Join(dir, stem+p[0]), stem+p[1]))
			case has[p[1]]:
				errs = append(errs, fmt.Errorf("signids: %s has no %s beside it", filepath.Join(dir, stem+p[1]), stem+p[0]))
			}
		}
		if forms > 1 {
			errs = append(errs, fmt.Errorf("signids: %s: identity %q is both %s+%s and %s+%s: keep one",
				dir, stem, stem+pairs[0][0], stem+pairs[0][1], stem+pairs[1][0], stem+pairs[1][1]))
		}
		if forms == 1 {
			names = append(names, stem)
		}
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return nil, errors.Join(errs...)
	}
	slices.Sort(names)
	return names, nil
}

func known(ext string) bool {
	for _, p := range pairs {
		if ext == p[0] || ext == p[1] {
			return true
		}
	}
	return false
}
