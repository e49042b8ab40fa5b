package sign

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"slices"
)

// Object identifiers of the CMS (RFC 5652), ESS (RFC 5035), RFC 3161 and
// the algorithms we sign with.
var (
	oidData                  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	oidSignedData            = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 2}
	oidAttrContentType       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 3}
	oidAttrMessageDigest     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 4}
	oidAttrSigningTime       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 5}
	oidAttrSigningCertV2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 2, 47}
	oidAttrSignatureTSToken  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 2, 14}
	oidSHA256                = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 1}
	oidSHA384                = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 2}
	oidSHA512                = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 3}
	oidRSAEncryption         = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}
	oidSHA256WithRSA         = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 11}
	oidSHA384WithRSA         = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 12}
	oidSHA512WithRSA         = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 13}
	oidECDSAWithSHA256       = asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 2}
	oidECDSAWithSHA384       = asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 3}
	oidECDSAWithSHA512       = asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 4}
	oidSubFilterCAdES        = "ETSI.CAdES.detached"
	asn1Null                 = asn1.RawValue{Tag: asn1.TagNull}
	errUnsupportedAlgorithms = errors.New("unsupported digest or signature algorithm")
)

// contentInfo is CMS ContentInfo; Content is [0] EXPLICIT.
type contentInfo struct {
	ContentType asn1.ObjectIdentifier
	Content     asn1.RawValue `asn1:"explicit,tag:0"`
}

// signedData is CMS SignedData. Certificates and CRLs are [0] and [1]
// IMPLICIT SET OF, kept raw.
type signedData struct {
	Version          int
	DigestAlgorithms []pkix.AlgorithmIdentifier `asn1:"set"`
	EncapContentInfo encapContentInfo
	Certificates     asn1.RawValue `asn1:"optional,tag:0"`
	CRLs             asn1.RawValue `asn1:"optional,tag:1"`
	SignerInfos      []signerInfo  `asn1:"set"`
}

type encapContentInfo struct {
	EContentType asn1.ObjectIdentifier
	EContent     asn1.RawValue `asn1:"optional,explicit,tag:0"`
}

// signerInfo is CMS SignerInfo. SID is IssuerAndSerialNumber (a SEQUENCE)
// or [0] SubjectKeyIdentifier; the attribute sets are [0] and [1] IMPLICIT.
type signerInfo struct {
	Version            int
	SID                asn1.RawValue
	DigestAlgorithm    pkix.AlgorithmIdentifier
	SignedAttrs        asn1.RawValue `asn1:"optional,tag:0"`
	SignatureAlgorithm pkix.AlgorithmIdentifier
	Signature          []byte
	UnsignedAttrs      asn1.RawValue `asn1:"optional,tag:1"`
}

type issuerAndSerial struct {
	Issuer asn1.RawValue
	Serial *big.Int
}

type attribute struct {
	Type   asn1.ObjectIdentifier
	Values asn1.RawValue // SET OF
}

// essCertIDv2 is RFC 5035 ESSCertIDv2 with the default hash algorithm
// (SHA-256), which DER leaves out.
type essCertIDv2 struct {
	CertHash     []byte
	IssuerSerial essIssuerSerial
}

type essIssuerSerial struct {
	Issuer asn1.RawValue // GeneralNames: SEQUENCE { [4] EXPLICIT Name }
	Serial *big.Int
}

type signingCertificateV2 struct {
	Certs []essCertIDv2
}

// rawSet wraps DER elements, already sorted as DER wants a SET OF, into a
// SET with tag (class universal 17, or the context tag of an IMPLICIT SET).
func rawSet(class, tag int, elems ...[]byte) asn1.RawValue {
	return asn1.RawValue{Class: class, Tag: tag, IsCompound: true, Bytes: bytes.Join(elems, nil)}
}

func marshalAttribute(oid asn1.ObjectIdentifier, value any) ([]byte, error) {
	v, err := asn1.Marshal(value)
	if err != nil {
		return nil, err
	}
	return asn1.Marshal(attribute{Type: oid, Values: rawSet(asn1.ClassUniversal, asn1.TagSet, v)})
}

// derSetOf sorts DER encodings as a SET OF needs (X.690 11.6).
func derSetOf(elems [][]byte) [][]byte {
	slices.SortFunc(elems, bytes.Compare)
	return elems
}

// signatureAlgorithm is the SignerInfo's signatureAlgorithm for a key,
// and the options to crypto.Signer.Sign with SHA-256.
func signatureAlgorithm(pub crypto.PublicKey) (pkix.AlgorithmIdentifier, error) {
	switch pub.(type) {
	case *rsa.PublicKey:
		// What OpenSSL writes: rsaEncryption with NULL parameters.
		return pkix.AlgorithmIdentifier{Algorithm: oidRSAEncryption, Parameters: asn1Null}, nil
	case *ecdsa.PublicKey:
		return pkix.AlgorithmIdentifier{Algorithm: oidECDSAWithSHA256}, nil
	}
	return pkix.AlgorithmIdentifier{}, fmt.Errorf("sign: unsupported key type %T", pub)
}

// signedAttributes are PAdES's: contentType (id-data), messageDigest and
// ESS signing-certificate-v2 of the leaf; no signing-time (ETSI EN 319
// 142-1 5.2.1: the time is the dictionary's /M). It returns the DER SET
// (tag 17) that is signed.
func signedAttributes(digest []byte, leaf *x509.Certificate) ([]byte, error) {
	ct, err := marshalAttribute(oidAttrContentType, oidData)
	if err != nil {
		return nil, err
	}
	md, err := marshalAttribute(oidAttrMessageDigest, digest)
	if err != nil {
		return nil, err
	}
	certHash := sha256.Sum256(leaf.Raw)
	dirName, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 4, IsCompound: true, Bytes: leaf.RawIssuer})
	if err != nil {
		return nil, err
	}
	sc, err := marshalAttribute(oidAttrSigningCertV2, signingCertificateV2{Certs: []essCertIDv2{{
		CertHash: certHash[:],
		IssuerSerial: essIssuerSerial{
			Issuer: asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSequence, IsCompound: true, Bytes: dirName},
			Serial: leaf.SerialNumber,
		},
	}}})
	if err != nil {
		return nil, err
	}
	return asn1.Marshal(rawSet(asn1.ClassUniversal, asn1.TagSet, derSetOf([][]byte{ct, md, sc})...))
}

// buildCMS signs digest (SHA-256 of the signed bytes) as a detached CMS
// SignedData through id.Signer. timestamp, when given, gets the signature
// value and returns an RFC 3161 token over it, added as the unsigned
// attribute signatureTimeStampToken.
func buildCMS(digest []byte, id *Identity, timestamp func(signature []byte) ([]byte, error)) ([]byte, error) {
	if id == nil || id.Signer == nil || len(id.Chain) == 0 {
		return nil, errors.New("sign: identity without a key or certificate")
	}
	leaf := id.Chain[0]
	sigAlg, err := signatureAlgorithm(id.Signer.Public())
	if err != nil {
		return nil, err
	}
	attrs, err := signedAttributes(digest, leaf)
	if err != nil {
		return nil, fmt.Errorf("sign: signed attributes: %w", err)
	}
	h := sha256.Sum256(attrs)
	sig, err := id.Signer.Sign(rand.Reader, h[:], crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("sign: signing with identity %s: %w", id.Name, err)
	}
	sid, err := asn1.Marshal(issuerAndSerial{Issuer: asn1.RawValue{FullBytes: leaf.RawIssuer}, Serial: leaf.SerialNumber})
	if err != nil {
		return nil, err
	}
	si := signerInfo{
		Version:            1,
		SID:                asn1.RawValue{FullBytes: sid},
		DigestAlgorithm:    pkix.AlgorithmIdentifier{Algorithm: oidSHA256},
		SignedAttrs:        asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: innerBytes(attrs)},
		SignatureAlgorithm: sigAlg,
		Signature:          sig,
	}
	if timestamp != nil {
		token, err := timestamp(sig)
		if err != nil {
			return nil, err
		}
		attr, err := asn1.Marshal(attribute{Type: oidAttrSignatureTSToken, Values: rawSet(asn1.ClassUniversal, asn1.TagSet, token)})
		if err != nil {
			return nil, err
		}
		si.UnsignedAttrs = rawSet(asn1.ClassContextSpecific, 1, attr)
	}
	var certs [][]byte
	for _, c := range id.Chain {
		certs = append(certs, c.Raw)
	}
	sd := signedData{
		Version:          1,
		DigestAlgorithms: []pkix.AlgorithmIdentifier{{Algorithm: oidSHA256}},
		EncapContentInfo: encapContentInfo{EContentType: oidData},
		Certificates:     rawSet(asn1.ClassContextSpecific, 0, certs...),
		SignerInfos:      []signerInfo{si},
	}
	inner, err := asn1.Marshal(sd)
	if err != nil {
		return nil, fmt.Errorf("sign: CMS: %w", err)
	}
	out, err := asn1.Marshal(struct {
		ContentType asn1.ObjectIdentifier
		Content     asn1.RawValue // [0] EXPLICIT, written out
	}{oidSignedData, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: inner}})
	if err != nil {
		return nil, fmt.Errorf("sign: CMS: %w", err)
	}
	return out, nil
}

// innerBytes is the content of a DER element (its tag and length gone).
func innerBytes(der []byte) []byte {
	var rv asn1.RawValue
	if _, err := asn1.Unmarshal(der, &rv); err != nil {
		return nil
	}
	return rv.Bytes
}

// parsedCMS is what Read needs of a CMS SignedData.
type parsedCMS struct {
	sd     signedData
	si     signerInfo
	signer *x509.Certificate
	certs  []*x509.Certificate
	// attrs: signed attributes by type (first value, raw), and whether
	// each type occurred once.
	attrs map[string]asn1.RawValue
	// unsigned attributes.
	unsigned map[string]asn1.RawValue
}

// parseCMS parses a DER ContentInfo holding a SignedData with exactly one
// SignerInfo (PDF/A 6.4.3-3), and finds its signer's certificate. Trailing
// bytes (the zeros after the CMS in a /Contents) are ignored.
func parseCMS(der []byte) (*parsedCMS, error) {
	var ci contentInfo
	if _, err := asn1.Unmarshal(der, &ci); err != nil {
		return nil, fmt.Errorf("not a CMS ContentInfo: %w", err)
	}
	if !ci.ContentType.Equal(oidSignedData) {
		return nil, errors.New("not a CMS SignedData")
	}
	p := &parsedCMS{attrs: map[string]asn1.RawValue{}, unsigned: map[string]asn1.RawValue{}}
	if rest, err := asn1.Unmarshal(ci.Content.Bytes, &p.sd); err != nil || len(rest) > 0 {
		return nil, fmt.Errorf("bad CMS SignedData: %v", err)
	}
	if len(p.sd.SignerInfos) != 1 {
		return nil, fmt.Errorf("%d SignerInfos, want 1", len(p.sd.SignerInfos))
	}
	p.si = p.sd.SignerInfos[0]
	if len(p.sd.Certificates.Bytes) > 0 {
		certs, err := x509.ParseCertificates(p.sd.Certificates.Bytes)
		if err != nil {
			return nil, fmt.Errorf("bad certificate: %w", err)
		}
		p.certs = certs
	}
	p.signer = findSigner(p.si.SID, p.certs)
	if p.signer == nil {
		return nil, errors.New("the signer's certificate is not in the CMS")
	}
	if len(p.si.SignedAttrs.FullBytes) > 0 {
		if err := parseAttributes(p.si.SignedAttrs.Bytes, p.attrs); err != nil {
			return nil, fmt.Errorf("signed attributes: %w", err)
		}
	}
	if len(p.si.UnsignedAttrs.FullBytes) > 0 {
		if err := parseAttributes(p.si.UnsignedAttrs.Bytes, p.unsigned); err != nil {
			return nil, fmt.Errorf("unsigned attributes: %w", err)
		}
	}
	return p, nil
}

func parseAttributes(b []byte, into map[string]asn1.RawValue) error {
	for len(b) > 0 {
		var a attribute
		var err error
		if b, err = asn1.Unmarshal(b, &a); err != nil {
			return err
		}
		var first asn1.RawValue
		if _, err := asn1.Unmarshal(a.Values.Bytes, &first); err != nil {
			return fmt.Errorf("attribute %v: %w", a.Type, err)
		}
		k := a.Type.String()
		if _, dup := into[k]; dup {
			return fmt.Errorf("attribute %v twice", a.Type)
		}
		into[k] = first
	}
	return nil
}

func findSigner(sid asn1.RawValue, certs []*x509.Certificate) *x509.Certificate {
	switch {
	case sid.Class == asn1.ClassUniversal && sid.Tag == asn1.TagSequence:
		var ias issuerAndSerial
		if _, err := asn1.Unmarshal(sid.FullBytes, &ias); err != nil || ias.Serial == nil {
			return nil
		}
		for _, c := range certs {
			if c.SerialNumber.Cmp(ias.Serial) == 0 && bytes.Equal(c.RawIssuer, ias.Issuer.FullBytes) {
				return c
			}
		}
	case sid.Class == asn1.ClassContextSpecific && sid.Tag == 0:
		for _, c := range certs {
			if len(c.SubjectKeyId) > 0 && bytes.Equal(c.SubjectKeyId, sid.Bytes) {
				return c
			}
		}
	}
	return nil
}

// hashFor is the crypto.Hash of a digest algorithm we accept.
func hashFor(oid asn1.ObjectIdentifier) (crypto.Hash, bool) {
	switch {
	case oid.Equal(oidSHA256):
		return crypto.SHA256, true
	case oid.Equal(oidSHA384):
		return crypto.SHA384, true
	case oid.Equal(oidSHA512):
		return crypto.SHA512, true
	}
	return 0, false
}

// verify checks p's signature over content: the messageDigest attribute is
// the digest of content (or, without signed attributes, the signature is
// over it directly), and the signature verifies with the signer's key. It
// returns the digest algorithm used.
func (p *parsedCMS) verify(content [][]byte) error {
	h, ok := hashFor(p.si.DigestAlgorithm.Algorithm)
	if !ok {
		return errUnsupportedAlgorithms
	}
	hh := h.New()
	for _, c := range content {
		hh.Write(c)
	}
	digest := hh.Sum(nil)
	signed := []byte(nil)
	if len(p.si.SignedAttrs.FullBytes) > 0 {
		md, ok := p.attrs[oidAttrMessageDigest.String()]
		if !ok {
			return errors.New("no messageDigest attribute")
		}
		var got []byte
		if _, err := asn1.Unmarshal(md.FullBytes, &got); err != nil {
			return errors.New("bad messageDigest attribute")
		}
		if !bytes.Equal(got, digest) {
			return errors.New("messageDigest does not match the signed bytes")
		}
		// The signature is over the DER SET OF the attributes: the [0]
		// IMPLICIT tag becomes SET (RFC 5652 5.4).
		signed = slices.Clone(p.si.SignedAttrs.FullBytes)
		signed[0] = 0x31
		hh.Reset()
		hh.Write(signed)
		digest = hh.Sum(nil)
	}
	return checkSignature(p.signer.PublicKey, p.si.SignatureAlgorithm, h, digest, p.si.Signature)
}

func checkSignature(pub crypto.PublicKey, alg pkix.AlgorithmIdentifier, h crypto.Hash, digest, sig []byte) error {
	a := alg.Algorithm
	switch pub := pub.(type) {
	case *rsa.PublicKey:
		switch {
		case a.Equal(oidRSAEncryption),
			a.Equal(oidSHA256WithRSA) && h == crypto.SHA256,
			a.Equal(oidSHA384WithRSA) && h == crypto.SHA384,
			a.Equal(oidSHA512WithRSA) && h == crypto.SHA512:
			return rsa.VerifyPKCS1v15(pub, h, digest, sig)
		}
	case *ecdsa.PublicKey:
		switch {
		case a.Equal(oidECDSAWithSHA256), a.Equal(oidECDSAWithSHA384), a.Equal(oidECDSAWithSHA512):
			if !ecdsa.VerifyASN1(pub, digest, sig) {
				return errors.New("ECDSA signature does not verify")
			}
			return nil
		}
	}
	return errUnsupportedAlgorithms
}
