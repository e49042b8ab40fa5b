package pdfopts

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/docrender/docrender/pkg/filename"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/signids"
	"github.com/docrender/docrender/proto/jobspb"
)

// Bounds of DESIGN §8's options. An attachment's bytes are the client's and
// are embedded as they are (never decompressed or parsed), so only their
// count and size need bounding; the request's own size limit bounds them
// together.
const (
	MaxAttachments        = 100
	MaxAttachmentBytes    = 25 << 20
	MaxEInvoiceBytes      = 5 << 20
	maxAttachmentName     = 200
	maxDescriptionChars   = 1000
	maxSignTextChars      = 500
	maxEInvoiceXMLDepth   = 256
	maxMIMETypeBytes      = 127
	defaultAttachmentMIME = "application/octet-stream"
)

// RecordRaw is DESIGN §8's options as the client sends them: part of
// PrintRaw (generate, batch options and documents) and of merge's options.
type RecordRaw struct {
	PDFA  *string `json:"pdfa"`
	PDFUA *bool   `json:"pdfua"`
	Lang  *string `json:"lang"`
	// Attachments in JSON: [{fileName, content (base64), mimeType?,
	// description?}]. Generate and merge also take uploaded parts named
	// "attachments" (AttachmentFromPart).
	Attachments            json.RawMessage `json:"attachments"`
	AttachmentRelationship *string         `json:"attachmentRelationship"`
	EInvoice               json.RawMessage `json:"einvoice"`
	Sign                   json.RawMessage `json:"sign"`
}

// Validate checks every §8 field; nil when none was sent. The rules that
// join fields (pdfa with attachments, with encryption, …) are CheckRecord's,
// run once the uploaded parts are in.
func (r RecordRaw) Validate() (*jobspb.Record, error) {
	rec := &jobspb.Record{}
	if r.PDFA != nil {
		switch v := strings.ToLower(strings.TrimSpace(*r.PDFA)); v {
		case "2b", "2u", "3b", "3u":
			rec.Pdfa = v
		case "":
		default:
			return nil, invalid.Field("pdfa", `must be "2b", "2u", "3b" or "3u"`)
		}
	}
	rec.Pdfua = r.PDFUA != nil && *r.PDFUA
	if r.Lang != nil {
		l := strings.TrimSpace(*r.Lang)
		if l != "" && (len(l) > 64 || !langTag.MatchString(l)) {
			return nil, invalid.Field("lang", "must be a BCP 47 language tag such as en, de-DE or zh-Hant")
		}
		rec.Lang = l
	}
	if r.AttachmentRelationship != nil {
		rel, ok := relationship(*r.AttachmentRelationship)
		if !ok {
			return nil, invalid.Field("attachmentRelationship", "must be Data, Source, Alternative, Supplement or Unspecified")
		}
		rec.AttachmentRelationship = rel
	}
	var err error
	if rec.Attachments, err = attachments(r.Attachments); err != nil {
		return nil, err
	}
	if rec.Einvoice, err = einvoice(r.EInvoice); err != nil {
		return nil, err
	}
	if rec.Sign, err = signature(r.Sign); err != nil {
		return nil, err
	}
	if proto0(rec) {
		return nil, nil
	}
	return rec, nil
}

// proto0 reports whether rec asks for nothing.
func proto0(rec *jobspb.Record) bool {
	return rec.Pdfa == "" && !rec.Pdfua && rec.Lang == "" && len(rec.Attachments) == 0 &&
		rec.AttachmentRelationship == "" && rec.Einvoice == nil && rec.Sign == nil
}

// langTag is a BCP 47 tag's shape as PDF/UA checks it (veraPDF 7.2-29).
var langTag = regexp.MustCompile(`^[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*$`)

// relationships are PDF/A-3's AFRelationship values (ISO 19005-3 Annex E).
var relationships = []string{"Data", "Source", "Alternative", "Supplement", "Unspecified"}

func relationship(s string) (string, bool) {
	s = strings.TrimSpace(s)
	for _, r := range relationships {
		if strings.EqualFold(r, s) {
			return r, true
		}
	}
	return "", false
}

// mimeType is an embedded file's /Subtype as PDF/A-3 checks it (veraPDF 6.8-1).
var mimeType = regexp.MustCompile(`^[-\w+.]+/[-\w+.]+$`)

// knownTypes names the MIME type of common attachments when the client
// gives none; a fixed table, so the answer never depends on the host's
// /etc/mime.types.
var knownTypes = map[string]string{
	".xml": "text/xml", ".json": "application/json", ".csv": "text/csv", ".txt": "text/plain",
	".pdf": "application/pdf", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
	".zip": "application/zip", ".html": "text/html", ".htm": "text/html",
	".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}

// Attachment checks one attachment's name, MIME type and description,
// whether it came as JSON or as an uploaded part; field names it in an
// error ("attachments[2]"). mime "" picks one from the name's extension.
func Attachment(field, name, mime, description string) (*jobspb.Attachment, error) {
	n := strings.TrimSpace(filename.Clean(name))
	n = strings.Trim(unsafeName.ReplaceAllString(n, "_"), ". ")
	if n == "" || !utf8.ValidString(n) {
		return nil, invalid.Field(field+".fileName", "is required")
	}
	if utf8.RuneCountInString(n) > maxAttachmentName {
		return nil, invalid.Field(field+".fileName", fmt.Sprintf("at most %d characters", maxAttachmentName))
	}
	mime = strings.ToLower(strings.TrimSpace(mime))
	if i := strings.IndexByte(mime, ';'); i >= 0 {
		mime = strings.TrimSpace(mime[:i]) // parameters (charset) have no place in /Subtype
	}
	switch {
	case mime == "":
		mime = knownTypes[strings.ToLower(path.Ext(n))]
		if mime == "" {
			mime = defaultAttachmentMIME
		}
	case len(mime) > maxMIMETypeBytes || !mimeType.MatchString(mime):
		return nil, invalid.Field(field+".mimeType", "must be a MIME type such as text/xml")
	}
	if utf8.RuneCountInString(description) > maxDescriptionChars || !utf8.ValidString(description) {
		return nil, invalid.Field(field+".description", fmt.Sprintf("at most %d characters", maxDescriptionChars))
	}
	return &jobspb.Attachment{FileName: n, MimeType: mime, Description: strings.TrimSpace(description)}, nil
}

func attachments(raw json.RawMessage) ([]*jobspb.Attachment, error) {
	if isNull(raw) {
		return nil, nil
	}
	var list []struct {
		FileName    *string `json:"fileName"`
		Content     *string `json:"content"`
		MimeType    *string `json:"mimeType"`
		Description *string `json:"description"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, invalid.Field("attachments", "must be an array of {fileName, content (base64), mimeType?, description?}")
	}
	if len(list) > MaxAttachments {
		return nil, invalid.Field("attachments", fmt.Sprintf("at most %d attachments (got %d)", MaxAttachments, len(list)))
	}
	out := make([]*jobspb.Attachment, 0, len(list))
	for i, a := range list {
		field := fmt.Sprintf("attachments[%d]", i)
		if a.FileName == nil {
			return nil, invalid.Field(field+".fileName", "is required")
		}
		if a.Content == nil {
			return nil, invalid.Field(field+".content", "is required (base64)")
		}
		if base64.StdEncoding.DecodedLen(len(*a.Content)) > MaxAttachmentBytes+3 {
			return nil, invalid.Field(field+".content", fmt.Sprintf("at most %d bytes", MaxAttachmentBytes))
		}
		data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(*a.Content))
		if err != nil {
			return nil, invalid.Field(field+".content", "must be base64")
		}
		if len(data) > MaxAttachmentBytes {
			return nil, invalid.Field(field+".content", fmt.Sprintf("at most %d bytes", MaxAttachmentBytes))
		}
		at, err := Attachment(field, *a.FileName, deref(a.MimeType), deref(a.Description))
		if err != nil {
			return nil, err
		}
		at.Data, at.Size = data, int64(len(data))
		out = append(out, at)
	}
	return out, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// EInvoice profiles as Factur-X's XMP ConformanceLevel writes them, XRECHNUNG
// as Mustang does (docs/plans/issue-22.md §0.7).
var einvoiceProfiles = []string{"MINIMUM", "BASIC WL", "BASIC", "EN 16931", "EXTENDED", "XRECHNUNG"}

// EInvoiceProfile normalises a profile name: case, spaces, "-" and "_" do
// not matter ("en16931", "basic_wl").
func EInvoiceProfile(s string) (string, bool) {
	squash := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == ' ' || r == '-' || r == '_' {
				return -1
			}
			return r
		}, strings.ToUpper(s))
	}
	want := squash(s)
	for _, p := range einvoiceProfiles {
		if squash(p) == want {
			return p, true
		}
	}
	return "", false
}

// EInvoiceFileName is the embedded XML's name the standard gives the
// profile: xrechnung.xml for XRECHNUNG, else factur-x.xml.
func EInvoiceFileName(profile string) string {
	if profile == "XRECHNUNG" {
		return "xrechnung.xml"
	}
	return "factur-x.xml"
}

// EInvoiceRelationship is the AFRelationship Factur-X 1.0 names for the
// profile: Data for MINIMUM and BASIC WL (not invoices under the EN 16931
// norm), Alternative for the rest.
func EInvoiceRelationship(profile string) string {
	if profile == "MINIMUM" || profile == "BASIC WL" {
		return "Data"
	}
	return "Alternative"
}

func einvoice(raw json.RawMessage) (*jobspb.EInvoice, error) {
	if isNull(raw) {
		return nil, nil
	}
	var e struct {
		Profile *string `json:"profile"`
		XML     *string `json:"xml"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, invalid.Field("einvoice", "must be an object {profile, xml}")
	}
	if e.Profile == nil {
		return nil, invalid.Field("einvoice.profile", "is required: MINIMUM, BASIC WL, BASIC, EN 16931, EXTENDED or XRECHNUNG")
	}
	p, ok := EInvoiceProfile(*e.Profile)
	if !ok {
		return nil, invalid.Field("einvoice.profile", "must be MINIMUM, BASIC WL, BASIC, EN 16931, EXTENDED or XRECHNUNG")
	}
	out := &jobspb.EInvoice{Profile: p}
	if e.XML != nil {
		if err := CheckEInvoiceXML([]byte(*e.XML)); err != nil {
			return nil, err
		}
		out.Xml, out.XmlSize = []byte(*e.XML), int64(len(*e.XML))
	}
	return out, nil
}

// ciiNamespace is the root namespace of a UN/CEFACT Cross Industry Invoice,
// the syntax of Factur-X / ZUGFeRD (and of XRechnung's CII flavour).
const ciiNamespace = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"

// CheckEInvoiceXML checks an e-invoice's XML before it is embedded: at most
// MaxEInvoiceBytes of UTF-8, well formed, no DOCTYPE (no entities to
// expand), nesting bounded, and a root rsm:CrossIndustryInvoice. The
// content itself is the sender's (we do not validate it against the
// Factur-X schematron). Errors name einvoice.xml.
func CheckEInvoiceXML(data []byte) error {
	bad := func(problem string) error { return invalid.Field("einvoice.xml", problem) }
	switch {
	case len(data) == 0:
		return bad("is required: the invoice as Factur-X / ZUGFeRD CII XML")
	case len(data) > MaxEInvoiceBytes:
		return bad(fmt.Sprintf("at most %d bytes", MaxEInvoiceBytes))
	case !utf8.Valid(data):
		return bad("must be UTF-8")
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	dec.CharsetReader = func(charset string, r io.Reader) (io.Reader, error) {
		if strings.EqualFold(charset, "utf-8") {
			return r, nil
		}
		return nil, fmt.Errorf("encoding %q", charset)
	}
	depth, root := 0, false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return bad("is not well-formed XML: " + err.Error())
		}
		switch t := tok.(type) {
		case xml.Directive:
			return bad("must not have a DOCTYPE or other declarations")
		case xml.StartElement:
			if depth == 0 {
				if root {
					return bad("has more than one root element")
				}
				root = true
				if t.Name.Local != "CrossIndustryInvoice" || t.Name.Space != ciiNamespace {
					return bad("the root element must be rsm:CrossIndustryInvoice in " + ciiNamespace)
				}
			}
			if depth++; depth > maxEInvoiceXMLDepth {
				return bad(fmt.Sprintf("nests deeper than %d elements", maxEInvoiceXMLDepth))
			}
		case xml.EndElement:
			depth--
		}
	}
	if !root {
		return bad("has no root element")
	}
	return nil
}

func signature(raw json.RawMessage) (*jobspb.Signature, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s struct {
		Identity    *string         `json:"identity"`
		Reason      *string         `json:"reason"`
		Location    *string         `json:"location"`
		ContactInfo *string         `json:"contactInfo"`
		Level       *string         `json:"level"`
		Visible     json.RawMessage `json:"visible"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, invalid.Field("sign", "must be an object {identity, reason?, location?, contactInfo?, level?, visible?}")
	}
	if s.Identity == nil || !signids.ValidName(strings.TrimSpace(*s.Identity)) {
		return nil, invalid.Field("sign.identity", "must name a signing identity (a-z, 0-9 and -, at most 64)")
	}
	out := &jobspb.Signature{Identity: strings.TrimSpace(*s.Identity)}
	for _, f := range []struct {
		name string
		in   *string
		out  *string
	}{{"reason", s.Reason, &out.Reason}, {"location", s.Location, &out.Location}, {"contactInfo", s.ContactInfo, &out.ContactInfo}} {
		if f.in == nil {
			continue
		}
		if utf8.RuneCountInString(*f.in) > maxInfoChars || !utf8.ValidString(*f.in) {
			return nil, invalid.Field("sign."+f.name, fmt.Sprintf("at most %d characters", maxInfoChars))
		}
		*f.out = strings.TrimSpace(*f.in)
	}
	if s.Level != nil {
		switch strings.ToUpper(strings.TrimSpace(*s.Level)) {
		case "B-B", "":
		case "B-T":
			out.Timestamp = true
		default:
			return nil, invalid.Field("sign.level", `must be "B-B" or "B-T"`)
		}
	}
	if !isNull(s.Visible) {
		box, err := signBox(s.Visible)
		if err != nil {
			return nil, err
		}
		out.Visible = box
	}
	return out, nil
}

// signBox reads sign.visible with its numbers checked one by one, so an
// error names the one that is wrong. Whether the box lies on its page is
// the worker's to check: only it knows the page's size.
func signBox(raw json.RawMessage) (*jobspb.SignBox, error) {
	var v struct {
		Page   json.RawMessage `json:"page"`
		X      json.RawMessage `json:"x"`
		Y      json.RawMessage `json:"y"`
		Width  json.RawMessage `json:"width"`
		Height json.RawMessage `json:"height"`
		Text   *string         `json:"text"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, invalid.Field("sign.visible", "must be an object {page, x, y, width, height, text?}")
	}
	box := &jobspb.SignBox{Page: 1}
	num := func(name string, raw json.RawMessage, min float64, required bool) (float64, error) {
		if isNull(raw) {
			if required {
				return 0, invalid.Field("sign.visible."+name, "is required (points)")
			}
			return 0, nil
		}
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < min || f > maxPageIn*72 {
			return 0, invalid.Field("sign.visible."+name, fmt.Sprintf("must be a number of points from %g to %g", min, maxPageIn*72))
		}
		return f, nil
	}
	if !isNull(v.Page) {
		var p int
		if err := json.Unmarshal(v.Page, &p); err != nil || p < 1 || p > 100_000 {
			return nil, invalid.Field("sign.visible.page", "must be a page number from 1")
		}
		box.Page = int32(p)
	}
	var err error
	if box.X, err = num("x", v.X, 0, true); err != nil {
		return nil, err
	}
	if box.Y, err = num("y", v.Y, 0, true); err != nil {
		return nil, err
	}
	if box.Width, err = num("width", v.Width, 1, true); err != nil {
		return nil, err
	}
	if box.Height, err = num("height", v.Height, 1, true); err != nil {
		return nil, err
	}
	if v.Text != nil {
		if utf8.RuneCountInString(*v.Text) > maxSignTextChars || !utf8.ValidString(*v.Text) {
			return nil, invalid.Field("sign.visible.text", fmt.Sprintf("at most %d characters", maxSignTextChars))
		}
		box.Text = *v.Text
	}
	return box, nil
}

// CheckRecord applies §8's rules that join fields, on the whole request
// (JSON fields and uploaded parts), and fills in what they imply: an
// e-invoice is a PDF/A-3b unless 3u was asked for. untagged is
// "tagged": false.
func CheckRecord(rec *jobspb.Record, enc *jobspb.Encryption, untagged bool) error {
	if rec == nil {
		return nil
	}
	if rec.Einvoice != nil {
		switch rec.Pdfa {
		case "":
			rec.Pdfa = "3b"
		case "2b", "2u":
			return invalid.Field("pdfa", "an e-invoice is a PDF/A-3 (PDF/A-2 may embed only PDF/A files): send 3b or 3u, or leave pdfa out")
		}
	}
	if len(rec.Attachments) > MaxAttachments {
		return invalid.Field("attachments", fmt.Sprintf("at most %d attachments (got %d)", MaxAttachments, len(rec.Attachments)))
	}
	seen := make(map[string]bool, len(rec.Attachments)+1)
	if rec.Einvoice != nil {
		seen[strings.ToLower(EInvoiceFileName(rec.Einvoice.Profile))] = true
	}
	for i, a := range rec.Attachments {
		k := strings.ToLower(a.FileName)
		if seen[k] {
			return invalid.Field(fmt.Sprintf("attachments[%d].fileName", i), fmt.Sprintf("%q is embedded twice (names must differ, the e-invoice's included)", a.FileName))
		}
		seen[k] = true
	}
	if len(rec.Attachments) > 0 && strings.HasPrefix(rec.Pdfa, "2") {
		return invalid.Field("attachments", "PDF/A-2 may embed only PDF/A files: use pdfa 3b or 3u to attach files")
	}
	switch {
	case enc != nil && rec.Sign != nil:
		return invalid.Field("sign", "a PDF is either encrypted or signed (DESIGN §8): drop encryption or sign")
	case enc != nil && rec.Pdfa != "":
		return invalid.Field("encryption", "a PDF/A must not be encrypted")
	case rec.Pdfua && untagged:
		return invalid.Field("tagged", "a PDF/UA must be tagged: drop tagged:false or pdfua")
	}
	return nil
}
