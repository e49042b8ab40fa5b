package pdfcheck

import (
	"bytes"
	"crypto/x509"
	"encoding/asn1"
	"math/big"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// signedDataOID is id-signedData (RFC 5652).
var signedDataOID = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 2}

// checkSignatureCMS: 6.4.3-2 (the CMS holds the signer's certificate) and
// 6.4.3-3 (exactly one SignerInfo), for the CMS SubFilters.
func (c *checker) checkSignatureCMS(s sigDict) {
	switch c.name(s.d["SubFilter"]) {
	case "adbe.pkcs7.detached", "adbe.pkcs7.sha1", "ETSI.CAdES.detached":
	default:
		return
	}
	obj := "signature (" + s.object + ")"
	o, _ := c.x.Dereference(s.d["Contents"])
	var der []byte
	switch v := o.(type) {
	case types.HexLiteral:
		der, _ = v.Bytes()
	case types.StringLiteral:
		der, _ = types.Unescape(string(v))
	}
	signers, hasCert, ok := parseCMS(der)
	if !ok {
		c.report("6.4.3-2", obj, "the signature's Contents is not a CMS SignedData object")
		return
	}
	if !hasCert {
		c.report("6.4.3-2", obj, "the signature does not include the signer's certificate")
	}
	if signers != 1 {
		c.report("6.4.3-3", obj, "the signature has %d SignerInfos, not exactly one", signers)
	}
}

// parseCMS reads a SignedData: its number of SignerInfos and whether the
// certificate of the first signer is among its certificates.
func parseCMS(der []byte) (signers int, hasCert, ok bool) {
	var ci struct {
		Type    asn1.ObjectIdentifier
		Content asn1.RawValue `asn1:"explicit,tag:0"`
	}
	if _, err := asn1.Unmarshal(der, &ci); err != nil || !ci.Type.Equal(signedDataOID) {
		return 0, false, false
	}
	var sd struct {
		Version          int
		DigestAlgorithms asn1.RawValue
		EncapContentInfo asn1.RawValue
		Certificates     asn1.RawValue `asn1:"optional,tag:0"`
		CRLs             asn1.RawValue `asn1:"optional,tag:1"`
		SignerInfos      asn1.RawValue `asn1:"set"`
	}
	if _, err := asn1.Unmarshal(ci.Content.Bytes, &sd); err != nil {
		return 0, false, false
	}
	var infos []asn1.RawValue
	rest := sd.SignerInfos.Bytes
	for len(rest) > 0 && len(infos) < 100 {
		var rv asn1.RawValue
		var err error
		if rest, err = asn1.Unmarshal(rest, &rv); err != nil {
			return 0, false, false
		}
		infos = append(infos, rv)
	}
	var certs []*x509.Certificate
	rest = sd.Certificates.Bytes
	for len(rest) > 0 && len(certs) < 100 {
		var rv asn1.RawValue
		var err error
		if rest, err = asn1.Unmarshal(rest, &rv); err != nil {
			break
		}
		if cert, err := x509.ParseCertificate(rv.FullBytes); err == nil {
			certs = append(certs, cert)
		}
	}
	if len(infos) == 0 {
		return 0, false, true
	}
	// SignerInfo ::= SEQUENCE { version, sid, ... }; sid is
	// IssuerAndSerialNumber or [0] SubjectKeyIdentifier.
	var si struct {
		Version int
		SID     asn1.RawValue
		Rest    asn1.RawValue
	}
	if _, err := asn1.Unmarshal(infos[0].FullBytes, &si); err != nil {
		return len(infos), false, true
	}
	for _, cert := range certs {
		if si.SID.Class == asn1.ClassContextSpecific && si.SID.Tag == 0 {
			if bytes.Equal(si.SID.Bytes, cert.SubjectKeyId) {
				return len(infos), true, true
			}
			continue
		}
		var ias struct {
			Issuer asn1.RawValue
			Serial *big.Int
		}
		if _, err := asn1.Unmarshal(si.SID.FullBytes, &ias); err == nil && ias.Serial != nil &&
			bytes.Equal(ias.Issuer.FullBytes, cert.RawIssuer) && ias.Serial.Cmp(cert.SerialNumber) == 0 {
			return len(infos), true, true
		}
	}
	return len(infos), false, true
}
