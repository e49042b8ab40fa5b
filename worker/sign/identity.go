// Package sign makes and reads the PAdES signatures of DESIGN §8: a
// server-held identity signs the whole file (ETSI.CAdES.detached, level
// B-B, or B-T with an RFC 3161 time stamp) as the last step of the
// post-processing, and POST /pdf/inspect reports the signatures a PDF holds.
//
// Signing is two steps around pdfcpu's final write: Prepare adds the
// signature field and a signature dictionary whose /ByteRange and
// /Contents are placeholders; Seal fills them in the written bytes, in
// place, without changing the file's length (so its xref stays right). The
// CMS SignedData is our own (encoding/asn1): PAdES wants signed attributes
// that the CMS libraries of the Go ecosystem do not all allow (no
// signing-time, an ESS signing-certificate-v2); see docs/decisions.md.
package sign

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/docrender/docrender/pkg/signids"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"software.sslmate.com/src/go-pkcs12"
)

// Identity is a server-held signing identity: the key behind a
// crypto.Signer (a KMS or HSM can stand in later) and its certificate
// chain, leaf first. The key never leaves the worker; an Identity is never
// logged.
type Identity struct {
	Name   string
	Signer crypto.Signer
	Chain  []*x509.Certificate
}

// String keeps keys out of logs whatever prints an Identity.
func (id *Identity) String() string {
	if id == nil {
		return "<nil identity>"
	}
	return "identity " + id.Name
}

// ValidName reports whether name can name an identity: the file stem in
// the signing directory and the name a request gives (signids' rule, the
// gateway's too).
func ValidName(name string) bool { return signids.ValidName(name) }

// The files of an identity: NAME.p12 with its password in NAME.pass, or
// NAME.crt (PEM chain) with NAME.key (PEM private key).
const (
	extP12  = ".p12"
	extPass = ".pass"
	extCrt  = ".crt"
	extKey  = ".key"
)

// maxIdentityFile bounds what is read of one file of the signing directory.
const maxIdentityFile = 1 << 20

// identityFiles lists dir: identity name → the extensions present. Hidden
// entries (a leading dot: editors' files, Kubernetes' ..data links of a
// mounted secret) and directories are skipped; any other file must be one
// of an identity's, named by a valid stem, and complete.
func identityFiles(dir string) (map[string][]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("sign: signing directory: %w", err)
	}
	files := map[string][]string{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		fi, err := os.Stat(path) // follows links, as a mounted secret's are
		if err != nil {
			return nil, fmt.Errorf("sign: %s: %w", path, err)
		}
		if fi.IsDir() {
			continue
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("sign: %s: not a regular file", path)
		}
		ext := filepath.Ext(name)
		stem := strings.TrimSuffix(name, ext)
		switch ext {
		case extP12, extPass, extCrt, extKey:
		default:
			return nil, fmt.Errorf("sign: %s: not an identity file (NAME.p12 + NAME.pass, or NAME.crt + NAME.key)", path)
		}
		if !ValidName(stem) {
			return nil, fmt.Errorf("sign: %s: an identity's name is 1 to 64 of a-z, 0-9 and -", path)
		}
		files[stem] = append(files[stem], ext)
	}
	for stem, exts := range files {
		has := func(ext string) bool { return slices.Contains(exts, ext) }
		p12, pass, crt, key := has(extP12), has(extPass), has(extCrt), has(extKey)
		switch {
		case p12 && (crt || key):
			return nil, fmt.Errorf("sign: %s: identity %q is both a .p12 and a .crt/.key", filepath.Join(dir, stem+extP12), stem)
		case p12 && !pass:
			return nil, fmt.Errorf("sign: %s: no password file %s", filepath.Join(dir, stem+extP12), stem+extPass)
		case pass && !p12:
			return nil, fmt.Errorf("sign: %s: no %s beside it", filepath.Join(dir, stem+extPass), stem+extP12)
		case crt && !key:
			return nil, fmt.Errorf("sign: %s: no key file %s", filepath.Join(dir, stem+extCrt), stem+extKey)
		case key && !crt:
			return nil, fmt.Errorf("sign: %s: no certificate file %s", filepath.Join(dir, stem+extKey), stem+extCrt)
		}
	}
	return files, nil
}

// Names lists the identity names in dir, sorted, without reading any key
// (the gateway validates requests with it). dir "" → none.
func Names(dir string) ([]string, error) {
	if dir == "" {
		return nil, nil
	}
	files, err := identityFiles(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// LoadDir loads every identity in dir: NAME.p12 (PKCS#12, as OpenSSL 3
// writes it by default: AES-256-CBC with PBKDF2, or the legacy 3DES/RC2)
// with its password in NAME.pass (one trailing newline ignored), or
// NAME.crt (PEM certificates) with NAME.key (PEM PKCS#8, PKCS#1 or SEC 1,
// unencrypted). A file that cannot be read or parsed, a key that does not
// match its certificate, or a stray file is an error naming the file: the
// worker refuses to start. dir "" → an empty map.
func LoadDir(dir string) (map[string]*Identity, error) {
	ids := map[string]*Identity{}
	if dir == "" {
		return ids, nil
	}
	files, err := identityFiles(dir)
	if err != nil {
		return nil, err
	}
	for name, exts := range files {
		var id *Identity
		if slices.Contains(exts, extP12) {
			id, err = loadP12(filepath.Join(dir, name+extP12), filepath.Join(dir, name+extPass))
		} else {
			id, err = loadPEM(filepath.Join(dir, name+extCrt), filepath.Join(dir, name+extKey))
		}
		if err != nil {
			return nil, err
		}
		id.Name = name
		ids[name] = id
	}
	return ids, nil
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxIdentityFile+1))
	if err != nil {
		return nil, fmt.Errorf("sign: %s: %w", path, err)
	}
	if len(data) > maxIdentityFile {
		return nil, fmt.Errorf("sign: %s: larger than 1 MiB", path)
	}
	return data, nil
}

func loadP12(p12Path, passPath string) (*Identity, error) {
	data, err := readSmall(p12Path)
	if err != nil {
		return nil, err
	}
	pass, err := readSmall(passPath)
	if err != nil {
		return nil, err
	}
	password := strings.TrimSuffix(strings.TrimSuffix(string(pass), "\n"), "\r")
	key, leaf, cas, err := pkcs12.DecodeChain(data, password)
	if err != nil {
		// go-pkcs12's errors name no secret (a wrong password is
		// "pkcs12: decryption password incorrect").
		return nil, fmt.Errorf("sign: %s: %w", p12Path, err)
	}
	id, err := newIdentity(key, append([]*x509.Certificate{leaf}, cas...))
	if err != nil {
		return nil, fmt.Errorf("sign: %s: %w", p12Path, err)
	}
	return id, nil
}

func loadPEM(crtPath, keyPath string) (*Identity, error) {
	crtData, err := readSmall(crtPath)
	if err != nil {
		return nil, err
	}
	var chain []*x509.Certificate
	for rest := crtData; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("sign: %s: %w", crtPath, err)
		}
		chain = append(chain, c)
	}
	if len(chain) == 0 {
		return nil, fmt.Errorf("sign: %s: no PEM certificate", crtPath)
	}
	keyData, err := readSmall(keyPath)
	if err != nil {
		return nil, err
	}
	key, err := parsePEMKey(keyData)
	if err != nil {
		return nil, fmt.Errorf("sign: %s: %w", keyPath, err)
	}
	id, err := newIdentity(key, chain)
	if err != nil {
		return nil, fmt.Errorf("sign: %s: %w", crtPath, err)
	}
	return id, nil
}

func parsePEMKey(data []byte) (any, error) {
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New("no PEM private key (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)")
		}
		if _, enc := b.Headers["Proc-Type"]; enc {
			return nil, errors.New("an encrypted PEM key; give it unencrypted, or as a .p12 with a .pass")
		}
		switch b.Type {
		case "PRIVATE KEY":
			return x509.ParsePKCS8PrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			return x509.ParsePKCS1PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			return x509.ParseECPrivateKey(b.Bytes)
		case "ENCRYPTED PRIVATE KEY":
			return nil, errors.New("an encrypted PEM key; give it unencrypted, or as a .p12 with a .pass")
		}
	}
}

// newIdentity checks that key is an RSA or ECDSA signer whose public key is
// one of the certificates', and orders chain leaf first.
func newIdentity(key any, chain []*x509.Certificate) (*Identity, error) {
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported key type %T", key)
	}
	switch signer.Public().(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey:
	default:
		return nil, fmt.Errorf("unsupported key type %T (RSA or ECDSA)", signer.Public())
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok {
		return nil, errors.New("unsupported key type")
	}
	leaf := -1
	for i, c := range chain {
		if c != nil && pub.Equal(c.PublicKey) {
			leaf = i
			break
		}
	}
	if leaf < 0 {
		return nil, errors.New("the private key matches none of the certificates")
	}
	ordered := append([]*x509.Certificate{chain[leaf]}, slices.Delete(slices.Clone(chain), leaf, leaf+1)...)
	return &Identity{Signer: signer, Chain: ordered}, nil
}

// NewIdentity makes an identity of a signer (a KMS or HSM key, say) and its
// certificate chain; the certificate of the signer's public key goes first.
func NewIdentity(name string, signer crypto.Signer, chain []*x509.Certificate) (*Identity, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("sign: identity name %q: 1 to 64 of a-z, 0-9 and -", name)
	}
	id, err := newIdentity(signer, chain)
	if err != nil {
		return nil, fmt.Errorf("sign: identity %s: %w", name, err)
	}
	id.Name = name
	return id, nil
}
