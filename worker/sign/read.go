package sign

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/asn1"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/digitorus/timestamp"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// Found is one signature of a PDF, as POST /pdf/inspect reports it.
type Found struct {
	// Signer is the signing certificate's subject common name (else the
	// whole subject); "" when the CMS cannot be read.
	Signer string
	// SignedAt is the time stamp's time for B-T (or a document time
	// stamp), else the claimed /M; zero when neither can be read.
	SignedAt time.Time
	// Level is "B-T", "B-B" or "" (not PAdES baseline).
	Level string
	// CoversWholeDocument: ByteRange [0 b c d] with c+d = the file's
	// length, the gap exactly the /Contents string.
	CoversWholeDocument bool
	// Valid: the CMS signature verifies over the ByteRange's bytes with the
	// signer's certificate (integrity, not trust: no chain, no
	// revocation).
	Valid  bool
	Reason string
}

// Bounds of Read on a hostile file.
const (
	maxSignatures = 100
	maxReason     = 1000
)

// Read finds the signatures of pdf and checks each, offline and without
// trusting anything the file says about sizes: it scans the bytes for
// signature dictionaries (an object holding a /ByteRange), parses each
// such object on its own, and verifies the CMS over the ranges. A broken
// or hostile signature is reported with Valid false; Read never panics and
// allocates no more than in proportion to len(pdf). Signatures inside
// compressed object streams are not seen (a signature dictionary there
// could not be found by the byte offsets of its own /ByteRange either).
func Read(pdf []byte) ([]Found, error) {
	heads, ends := objectBounds(pdf)
	var found []Found
	done := map[int]bool{} // object header offsets already read
	// Each signature hashes up to the whole file: a file of many
	// signatures over everything gets 8 passes, then no more checks.
	budget := 8 * int64(len(pdf))
	for from := 0; from < len(pdf) && len(found) < maxSignatures; {
		i := bytes.Index(pdf[from:], []byte("/ByteRange"))
		if i < 0 {
			break
		}
		i += from
		from = i + len("/ByteRange")
		// The object around it: the last header before, the first endobj
		// after.
		h := sort.SearchInts(heads, i+1) - 1
		if h < 0 || done[heads[h]] {
			continue
		}
		e := sort.SearchInts(ends, i)
		if e == len(ends) || (h+1 < len(heads) && heads[h+1] < ends[e]) {
			continue // no endobj before the next object: not an object
		}
		done[heads[h]] = true
		// Objects read are disjoint, so all of them together are at most
		// the file.
		for _, d := range sigDicts(pdf[heads[h]:ends[e]]) {
			if len(found) < maxSignatures {
				found = append(found, check(pdf, d, &budget))
			}
		}
	}
	return found, nil
}

// objectBounds returns, sorted, the offsets just after every "N G obj"
// header and of every "endobj" keyword.
func objectBounds(pdf []byte) (heads, ends []int) {
	for from := 0; ; {
		i := bytes.Index(pdf[from:], []byte("obj"))
		if i < 0 {
			return heads, ends
		}
		i += from
		from = i + 3
		if from < len(pdf) && !isDelimOrSpace(pdf[from]) {
			continue
		}
		if i >= 3 && string(pdf[i-3:i]) == "end" {
			ends = append(ends, i-3)
			continue
		}
		// whitespace, generation digits, whitespace, number digits
		j := i
		j, ok1 := skipBack(pdf, j, isSpace)
		j, ok2 := skipBack(pdf, j, isDigit)
		j, ok3 := skipBack(pdf, j, isSpace)
		_, ok4 := skipBack(pdf, j, isDigit)
		if ok1 && ok2 && ok3 && ok4 {
			heads = append(heads, from)
		}
	}
}

// skipBack steps back over at most 20 bytes of class from j, reporting
// whether there was at least one.
func skipBack(pdf []byte, j int, class func(byte) bool) (int, bool) {
	k := j
	for k > 0 && j-k < 20 && class(pdf[k-1]) {
		k--
	}
	return k, k < j
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func isDelimOrSpace(b byte) bool {
	return isSpace(b) || strings.IndexByte("()<>[]{}/%", b) >= 0
}

// sigDicts parses one object's text and returns its dictionaries that have
// a /ByteRange (the object itself, or a field's direct /V), at most a few
// levels deep.
func sigDicts(obj []byte) (out []types.Dict) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	s := string(obj)
	o, err := model.ParseObject(&s)
	if err != nil {
		return nil
	}
	var walk func(o types.Object, depth int)
	walk = func(o types.Object, depth int) {
		d, ok := o.(types.Dict)
		if !ok || depth > 4 {
			return
		}
		if _, ok := d["ByteRange"]; ok {
			out = append(out, d)
			return
		}
		for _, v := range d {
			walk(v, depth+1)
		}
	}
	walk(o, 0)
	return out
}

// check verifies one signature dictionary against the file.
func check(pdf []byte, d types.Dict, budget *int64) (f Found) {
	defer func() {
		if r := recover(); r != nil {
			f.Valid = false
		}
	}()
	f.Reason = textString(d["Reason"])
	if m := textString(d["M"]); m != "" {
		if t, ok := types.DateTime(m, true); ok {
			f.SignedAt = t
		}
	}
	subFilter := ""
	if n, ok := d["SubFilter"].(types.Name); ok {
		subFilter = n.Value()
	}
	ranges, covers := byteRanges(pdf, d["ByteRange"])
	f.CoversWholeDocument = covers
	contents := stringBytes(d["Contents"])
	if ranges == nil || len(contents) == 0 {
		return f
	}
	if *budget -= int64(len(ranges[0]) + len(ranges[1])); *budget < 0 {
		return f
	}
	if subFilter == "ETSI.RFC3161" {
		return checkDocTimestamp(f, contents, ranges)
	}
	p, err := parseCMS(contents)
	if err != nil {
		return f
	}
	f.Signer = certName(p.signer)
	f.Valid = p.verify(ranges) == nil
	if subFilter == oidSubFilterCAdES {
		if _, ok := p.attrs[oidAttrSigningCertV2.String()]; ok {
			f.Level = "B-B"
		}
	}
	if tok, ok := p.unsigned[oidAttrSignatureTSToken.String()]; ok {
		if t, ok := checkSignatureTimestamp(tok.FullBytes, p.si.Signature); ok {
			f.SignedAt = t
			if f.Level == "B-B" {
				f.Level = "B-T"
			}
		}
	}
	return f
}

// byteRanges returns the two signed ranges of a /ByteRange, nil when they
// are not four integers within the file in order, and whether they cover
// the whole file but the /Contents string.
func byteRanges(pdf []byte, o types.Object) ([][]byte, bool) {
	a, ok := o.(types.Array)
	if !ok || len(a) != 4 {
		return nil, false
	}
	var v [4]int64
	for i, e := range a {
		n, ok := e.(types.Integer)
		if !ok {
			return nil, false
		}
		v[i] = int64(n.Value())
	}
	size := int64(len(pdf))
	start1, len1, start2, len2 := v[0], v[1], v[2], v[3]
	if start1 < 0 || len1 < 0 || start2 < 0 || len2 < 0 ||
		start1 > size || len1 > size-start1 || start2 < start1+len1 || start2 > size || len2 > size-start2 {
		return nil, false
	}
	ranges := [][]byte{pdf[start1 : start1+len1], pdf[start2 : start2+len2]}
	covers := start1 == 0 && start2+len2 == size && gapIsContents(pdf[len1:start2])
	return ranges, covers
}

// gapIsContents: the unsigned bytes are exactly one hex string.
func gapIsContents(gap []byte) bool {
	if len(gap) < 2 || gap[0] != '<' || gap[len(gap)-1] != '>' {
		return false
	}
	for _, b := range gap[1 : len(gap)-1] {
		if !isSpace(b) && !isHex(b) {
			return false
		}
	}
	return true
}

func isHex(b byte) bool {
	return isDigit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F')
}

// stringBytes is the bytes of a PDF string object.
func stringBytes(o types.Object) []byte {
	switch s := o.(type) {
	case types.HexLiteral:
		b, err := s.Bytes()
		if err != nil {
			return nil
		}
		return b
	case types.StringLiteral:
		b, err := types.Unescape(s.Value())
		if err != nil {
			return nil
		}
		return b
	}
	return nil
}

// textString decodes a PDF text string (PDFDocEncoding or UTF-16BE), capped.
func textString(o types.Object) string {
	var s string
	var err error
	switch v := o.(type) {
	case types.StringLiteral:
		s, err = types.StringLiteralToString(v)
	case types.HexLiteral:
		s, err = types.HexLiteralToString(v)
	default:
		return ""
	}
	if err != nil {
		return ""
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxReason {
		s = strings.ToValidUTF8(s[:maxReason], "")
	}
	return s
}

func certName(c *x509.Certificate) string {
	if c == nil {
		return ""
	}
	if c.Subject.CommonName != "" {
		return c.Subject.CommonName
	}
	return c.Subject.String()
}

// checkSignatureTimestamp verifies an RFC 3161 token over a signature
// value: the token's own signature (with the certificate it carries) and
// its message imprint. It returns the token's time.
func checkSignatureTimestamp(token, signature []byte) (t time.Time, ok bool) {
	ts, ok := parseToken(token)
	if !ok {
		return time.Time{}, false
	}
	if !ts.HashAlgorithm.Available() {
		return time.Time{}, false
	}
	h := ts.HashAlgorithm.New()
	h.Write(signature)
	if !bytes.Equal(h.Sum(nil), ts.HashedMessage) {
		return time.Time{}, false
	}
	return ts.Time, true
}

// parseToken parses and verifies a time-stamp token, which must carry its
// signer's certificate.
func parseToken(token []byte) (ts *timestamp.Timestamp, ok bool) {
	defer func() {
		if recover() != nil {
			ts, ok = nil, false
		}
	}()
	// Trailing zeros (a /Contents' padding) are not part of the token.
	var rv asn1.RawValue
	if _, err := asn1.Unmarshal(token, &rv); err != nil {
		return nil, false
	}
	ts, err := timestamp.Parse(rv.FullBytes)
	if err != nil || len(ts.Certificates) == 0 {
		return nil, false
	}
	switch ts.HashAlgorithm {
	case crypto.SHA256, crypto.SHA384, crypto.SHA512:
	default:
		return nil, false
	}
	return ts, true
}

// checkDocTimestamp checks a document time stamp (/SubFilter
// /ETSI.RFC3161): its token's imprint is the digest of the ranges.
func checkDocTimestamp(f Found, contents []byte, ranges [][]byte) Found {
	ts, ok := parseToken(contents)
	if !ok {
		return f
	}
	if len(ts.Certificates) > 0 {
		f.Signer = certName(ts.Certificates[0])
	}
	h := ts.HashAlgorithm.New()
	for _, r := range ranges {
		h.Write(r)
	}
	f.Valid = bytes.Equal(h.Sum(nil), ts.HashedMessage)
	if f.Valid {
		f.SignedAt = ts.Time
	}
	return f
}

// String is a one-line description, for logs and test failures.
func (f Found) String() string {
	return fmt.Sprintf("signer=%q signedAt=%s level=%q covers=%t valid=%t reason=%q",
		f.Signer, f.SignedAt.Format(time.RFC3339), f.Level, f.CoversWholeDocument, f.Valid, f.Reason)
}
