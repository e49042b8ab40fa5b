package sign

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/docrender/docrender/proto/jobspb"
)

// ErrNoPlaceholder is Seal given a PDF that Prepare did not prepare (or
// that was written with object streams).
var ErrNoPlaceholder = errors.New("sign: no signature placeholder in the PDF")

// Seal signs pdf, as written by pdfcpu after Prepare: it fills the
// /ByteRange (space-padded to the placeholder's width) and the /Contents
// (the CMS in hex, zero-padded), in place, so the file's length and its
// xref do not change; the signature covers the whole file but its
// /Contents (ByteRange [0 a b c], b+c = len(pdf)). The CMS is a detached
// SignedData by id (RSA PKCS #1 v1.5 or ECDSA, SHA-256) with PAdES's signed
// attributes; with sig.Timestamp, tsa stamps the signature value
// (signatureTimeStampToken, PAdES B-T). It returns pdf; on error pdf's
// bytes are unspecified.
func Seal(ctx context.Context, pdf []byte, sig *jobspb.Signature, id *Identity, tsa *TSA) ([]byte, error) {
	if id == nil || id.Signer == nil || len(id.Chain) == 0 {
		return nil, errors.New("sign: Seal without an identity")
	}
	brStart, brEnd, cStart, cEnd, err := findPlaceholders(pdf)
	if err != nil {
		return nil, err
	}
	// cStart is '<', cEnd is one past '>'.
	br := fmt.Sprintf("[0 %d %d %d", cStart, cEnd, len(pdf)-cEnd)
	width := brEnd - brStart
	if len(br)+1 > width {
		return nil, errors.New("sign: the PDF is too large for its ByteRange placeholder")
	}
	copy(pdf[brStart:], br)
	for i := brStart + len(br); i < brEnd-1; i++ {
		pdf[i] = ' '
	}
	pdf[brEnd-1] = ']'

	h := sha256.New()
	h.Write(pdf[:cStart])
	h.Write(pdf[cEnd:])
	var stamp func([]byte) ([]byte, error)
	if sig.GetTimestamp() {
		if tsa == nil {
			return nil, fmt.Errorf("%w: no time-stamp authority configured", ErrTSA)
		}
		stamp = func(signature []byte) ([]byte, error) { return tsa.Stamp(ctx, signature) }
	}
	cms, err := buildCMS(h.Sum(nil), id, stamp)
	if err != nil {
		return nil, err
	}
	room := (cEnd - cStart - 2) / 2
	if len(cms) > room {
		return nil, fmt.Errorf("sign: the signature (%d bytes) is larger than its placeholder (%d bytes)", len(cms), room)
	}
	hex.Encode(pdf[cStart+1:], cms)
	return pdf, nil
}

// findPlaceholders finds Prepare's /ByteRange placeholder, which must occur
// exactly once, and the zero /Contents hex string after it in the same
// dictionary. It returns the offsets of the ByteRange array ('[' to one
// past ']') and of the Contents string ('<' to one past '>').
func findPlaceholders(pdf []byte) (brStart, brEnd, cStart, cEnd int, err error) {
	placeholder := []byte(byteRangeText)
	brStart = -1
	for from := 0; ; {
		i := bytes.Index(pdf[from:], placeholder)
		if i < 0 {
			break
		}
		i += from
		from = i + len(placeholder)
		// It must be the value of /ByteRange.
		j := i
		for j > 0 && isSpace(pdf[j-1]) {
			j--
		}
		if !bytes.HasSuffix(pdf[:j], []byte("/ByteRange")) {
			continue
		}
		if brStart >= 0 {
			return 0, 0, 0, 0, errors.New("sign: more than one signature placeholder in the PDF")
		}
		brStart, brEnd = i, from
	}
	if brStart < 0 {
		return 0, 0, 0, 0, ErrNoPlaceholder
	}
	// The signature dictionary around it holds names, hex strings, the
	// /M date and the ByteRange: no "<<" or ">>" inside it.
	open := bytes.LastIndex(pdf[:brStart], []byte("<<"))
	end := bytes.Index(pdf[brEnd:], []byte(">>"))
	if open < 0 || end < 0 {
		return 0, 0, 0, 0, ErrNoPlaceholder
	}
	dict := pdf[open : brEnd+end]
	k := bytes.Index(dict, []byte("/Contents"))
	if k < 0 || bytes.Count(dict, []byte("/Contents")) != 1 {
		return 0, 0, 0, 0, ErrNoPlaceholder
	}
	p := open + k + len("/Contents")
	for p < len(pdf) && isSpace(pdf[p]) {
		p++
	}
	if p >= len(pdf) || pdf[p] != '<' {
		return 0, 0, 0, 0, ErrNoPlaceholder
	}
	cStart = p
	p++
	for p < len(pdf) && pdf[p] == '0' {
		p++
	}
	if p >= len(pdf) || pdf[p] != '>' || p-cStart-1 < 2 {
		return 0, 0, 0, 0, ErrNoPlaceholder
	}
	return brStart, brEnd, cStart, p + 1, nil
}

func isSpace(b byte) bool {
	switch b {
	case ' ', '\t', '\r', '\n', '\f', 0:
		return true
	}
	return false
}
