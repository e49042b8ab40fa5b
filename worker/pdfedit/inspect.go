package pdfedit

import (
	"context"
	"errors"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/proto/jobspb"
)

// Bounds of an inspection's answer: a hostile PDF may declare a million
// fonts or attachments.
const (
	maxPageSizes   = 100
	maxFonts       = 500
	maxAttachments = 1000
	// maxXMP bounds how much of the XMP metadata is searched for the PDF/A
	// and PDF/UA claims (a few KB in practice). The stream itself was
	// decoded by pdfcpu's validation, under its own bound per stream
	// (filter.DefaultMaxDecodeBytes, 512 MiB), as for every PDF we read.
	maxXMP = 1 << 20
)

// Inspect reads one PDF and reports what it is and claims (DESIGN §8,
// POST /pdf/inspect): pages and their sizes, version, whether it is tagged
// or encrypted, the PDF/A and PDF/UA claims of its XMP metadata, its
// language, document information, fonts and embedded files. An encrypted
// PDF that opens only with a password reports that alone. A file that is
// not a usable PDF is a *BadInputError naming it.
func Inspect(ctx context.Context, name string, rs io.ReadSeeker) (*jobspb.InspectReport, error) {
	// pdfcpu's VALIDATE mode spends seconds on some malformed files
	// (FuzzInspect ran at 0 execs/s with it); its info mode reads as
	// merge does.
	pc, err := readPDF(ctx, name, rs, newConf(model.LISTINFO))
	var bad *BadInputError
	if errors.As(err, &bad) && bad.encrypted() {
		return &jobspb.InspectReport{Encrypted: true}, nil
	}
	if err != nil {
		return nil, err
	}
	var r *jobspb.InspectReport
	if err := safeEdit(pc, func(pc *model.Context) error {
		r = inspect(pc)
		return nil
	}); err != nil {
		return nil, &BadInputError{Name: name, Reason: reasonFor(err)}
	}
	return r, nil
}

func inspect(pc *model.Context) *jobspb.InspectReport {
	x := pc.XRefTable
	r := &jobspb.InspectReport{
		Pages:      int32(pc.PageCount),
		PdfVersion: x.Version().String(),
		Tagged:     x.Tagged,
		Encrypted:  x.Encrypt != nil || x.E != nil,
		Metadata:   docInfo(x),
	}
	if dims, err := x.PageDims(); err == nil {
		for _, d := range dims[:min(len(dims), maxPageSizes)] {
			r.PageSizes = append(r.PageSizes, &jobspb.InspectReport_PageSize{Width: round2(d.Width), Height: round2(d.Height)})
		}
	}
	if lang, ok := x.RootDict["Lang"]; ok {
		r.Lang, _ = x.DereferenceStringOrHexLiteral(lang, model.V10, nil)
	}
	if xmp := catalogXMP(x); xmp != "" {
		r.PdfaPart, r.PdfaConformance = xmpValue(xmp, "pdfaid", "part"), xmpValue(xmp, "pdfaid", "conformance")
		r.PdfuaPart = xmpValue(xmp, "pdfuaid", "part")
	}
	r.Fonts, r.Attachments = fontsAndFiles(x)
	return r
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

// docInfo is the document information dictionary, dates as RFC 3339.
func docInfo(x *model.XRefTable) map[string]string {
	m := map[string]string{}
	for k, v := range map[string]string{"title": x.Title, "author": x.Author, "subject": x.Subject, "keywords": x.Keywords,
		"creator": x.Creator, "producer": x.Producer, "creationDate": x.CreationDate, "modDate": x.ModDate} {
		if v == "" {
			continue
		}
		if strings.HasSuffix(k, "Date") {
			if t, ok := types.DateTime(v, true); ok {
				v = t.UTC().Format(time.RFC3339)
			}
		}
		m[k] = v
	}
	return m
}

// catalogXMP is the catalog's XMP metadata stream, decoded; "" when there
// is none or it cannot be read.
func catalogXMP(x *model.XRefTable) string {
	o, ok := x.RootDict["Metadata"]
	if !ok {
		return ""
	}
	sd, _, err := x.DereferenceStreamDict(o)
	if err != nil || sd == nil {
		return ""
	}
	if sd.Content == nil {
		if err := sd.Decode(); err != nil {
			return ""
		}
	}
	return string(sd.Content[:min(len(sd.Content), maxXMP)])
}

// xmpValue is the value of prefix:name in an XMP packet, written as an
// attribute (pdfaid:part="3") or an element (<pdfaid:part>3</pdfaid:part>).
func xmpValue(xmp, prefix, name string) string {
	q := regexp.QuoteMeta(prefix + ":" + name)
	for _, re := range []string{q + `\s*=\s*["']([^"']*)["']`, `<` + q + `>\s*([^<]*?)\s*</` + q + `>`} {
		if m := regexp.MustCompile(re).FindStringSubmatch(xmp); m != nil {
			return strings.TrimSpace(m[1])
		}
	}
	return ""
}

// fontsAndFiles walks the file's objects once for its fonts (a composite
// font counts once, its descendant not again) and its embedded files.
func fontsAndFiles(x *model.XRefTable) ([]*jobspb.InspectReport_Font, []*jobspb.InspectReport_Attachment) {
	fonts := map[string]bool{} // name → embedded
	var files []*jobspb.InspectReport_Attachment
	for _, nr := range slices.Sorted(maps.Keys(x.Table)) {
		e := x.Table[nr]
		if e == nil || e.Free || e.Object == nil {
			continue
		}
		d, ok := e.Object.(types.Dict)
		if !ok {
			continue
		}
		switch t := d.NameEntry("Type"); {
		case t != nil && *t == "Font":
			sub := d.NameEntry("Subtype")
			if sub != nil && (*sub == "CIDFontType0" || *sub == "CIDFontType2") {
				continue // a descendant of a Type0 font, reported with it
			}
			if len(fonts) >= maxFonts {
				continue
			}
			name := "(unnamed)"
			if bf := d.NameEntry("BaseFont"); bf != nil {
				name = *bf
			}
			fonts[name] = fonts[name] || fontEmbedded(x, d, sub)
		case t != nil && *t == "Filespec" && len(files) < maxAttachments:
			if a := attachment(x, d); a != nil {
				files = append(files, a)
			}
		}
	}
	var out []*jobspb.InspectReport_Font
	for _, name := range slices.Sorted(maps.Keys(fonts)) {
		out = append(out, &jobspb.InspectReport_Font{Name: name, Embedded: fonts[name]})
	}
	return out, files
}

// fontEmbedded reports whether a font's program is in the file: a Type3
// font's glyphs always are; a Type0 font's is its descendant's.
func fontEmbedded(x *model.XRefTable, d types.Dict, sub *string) bool {
	if sub != nil && *sub == "Type3" {
		return true
	}
	if sub != nil && *sub == "Type0" {
		a, err := x.DereferenceArray(d["DescendantFonts"])
		if err != nil || len(a) == 0 {
			return false
		}
		if d, err = x.DereferenceDict(a[0]); err != nil || d == nil {
			return false
		}
	}
	fd, err := x.DereferenceDict(d["FontDescriptor"])
	if err != nil || fd == nil {
		return false
	}
	for _, k := range []string{"FontFile", "FontFile2", "FontFile3"} {
		if _, ok := fd[k]; ok {
			return true
		}
	}
	return false
}

// attachment describes an embedded file's file specification, nil for a
// specification of a file not in the PDF.
func attachment(x *model.XRefTable, d types.Dict) *jobspb.InspectReport_Attachment {
	ef, err := x.DereferenceDict(d["EF"])
	if err != nil || ef == nil {
		return nil
	}
	a := &jobspb.InspectReport_Attachment{}
	for _, k := range []string{"UF", "F"} {
		if o, ok := d[k]; ok {
			if s, err := x.DereferenceStringOrHexLiteral(o, model.V10, nil); err == nil && s != "" {
				a.FileName = s
				break
			}
		}
	}
	if rel := d.NameEntry("AFRelationship"); rel != nil {
		a.Relationship = *rel
	}
	o, ok := ef["UF"]
	if !ok {
		o = ef["F"]
	}
	sd, _, err := x.DereferenceStreamDict(o)
	if err != nil || sd == nil {
		return a
	}
	if st := sd.NameEntry("Subtype"); st != nil {
		a.MimeType = strings.ReplaceAll(*st, "#2F", "/")
	}
	if p, err := x.DereferenceDict(sd.Dict["Params"]); err == nil && p != nil {
		if n, err := x.DereferenceInteger(p["Size"]); err == nil && n != nil {
			a.Size = int64(n.Value())
		}
	}
	return a
}

// encrypted reports whether the input was refused for its password.
func (e *BadInputError) encrypted() bool {
	return errors.Is(e.cause, pdfcpu.ErrEncrypted) || errors.Is(e.cause, pdfcpu.ErrWrongPassword) ||
		errors.Is(e.cause, pdfcpu.ErrOwnerPasswordRequired)
}
