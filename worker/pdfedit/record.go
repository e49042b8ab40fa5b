package pdfedit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
)

// RecordSpec is what Finish does to a finished document (rendered or
// merged, watermark stamped): DESIGN §6's metadata and §8's documents of
// record, in §8's order, in one read and one write.
type RecordSpec struct {
	Info *jobspb.DocInfo
	// Record's attachments and e-invoice carry their bytes (blob.LoadRecord).
	Record *jobspb.Record
	// Prepare, when set, is the last edit before the write: a signature's
	// field and placeholder (sign.Prepare), sealed after the write.
	Prepare func(*model.Context) error
	// Written, when set, is shown the document as written (its Info as
	// pdfcpu stamped it, its XMP): the conformance check runs on this model
	// rather than parsing the output again. Its error fails Finish.
	Written func(*model.Context) error
}

// OptionError is an option the document cannot satisfy, found only once it
// is rendered (a PDF/UA without a title): the client's to fix, naming the
// field.
type OptionError struct {
	Field, Problem string
}

func (e *OptionError) Error() string { return e.Field + ": " + e.Problem }

// Finish applies spec to pdf and returns the new document. With nothing to
// do it returns pdf itself. A PDF pdfcpu cannot handle is a *BadInputError;
// a §8 demand the document cannot meet an *OptionError.
//
// pdfcpu stamps Info's CreationDate, ModDate and Producer as it writes, to
// the second; the XMP packet PDF/A needs must say the same, so it is built
// for the second the write is expected in, and the write is redone in the
// rare case it crossed into the next.
func Finish(ctx context.Context, pdf []byte, spec RecordSpec) ([]byte, error) {
	entries := infoEntries(spec.Info)
	rec := spec.Record
	if len(entries) == 0 && rec == nil && spec.Prepare == nil {
		return pdf, nil
	}
	var last error
	for range 3 {
		pc, err := readPDF(ctx, "", bytes.NewReader(pdf), newConf(model.ADDPROPERTIES))
		if err != nil {
			return nil, err
		}
		now := time.Now()
		err = safeEdit(pc, func(pc *model.Context) error { return editRecord(pc, entries, rec, spec.Prepare, now) })
		if err != nil {
			return nil, err
		}
		var out bytes.Buffer
		out.Grow(len(pdf) + 64<<10)
		if err := save(ctx, pc, &out); err != nil {
			return nil, err
		}
		if !withXMP(rec) || sameSecond(out.Bytes(), pc, now) {
			if spec.Written != nil {
				if err := spec.Written(pc); err != nil {
					return nil, err
				}
			}
			return out.Bytes(), nil
		}
		last = errors.New("pdfedit: the write kept crossing a second: Info and XMP dates differ")
	}
	return nil, last
}

// withXMP reports whether the record asks for XMP metadata.
func withXMP(rec *jobspb.Record) bool { return rec.GetPdfa() != "" || rec.GetPdfua() }

func editRecord(pc *model.Context, entries map[string]string, rec *jobspb.Record, prepare func(*model.Context) error, now time.Time) error {
	if len(entries) > 0 {
		if err := setInfo(pc, entries); err != nil {
			return err
		}
	}
	if rec != nil {
		root, err := pc.Catalog()
		if err != nil {
			return &BadInputError{Reason: "no document catalog", cause: err}
		}
		if rec.Lang != "" {
			root["Lang"] = types.StringLiteral(rec.Lang)
		}
		if err := embedFiles(pc, root, rec, now); err != nil {
			return err
		}
		if rec.Pdfa != "" {
			if err := conformPDFA(pc, root); err != nil {
				return err
			}
			if strings.HasPrefix(rec.Pdfa, "3") {
				associateFiles(pc, root)
			}
		}
		if rec.Pdfua {
			if err := conformPDFUA(pc, root); err != nil {
				return err
			}
		}
	}
	if prepare != nil {
		if err := prepare(pc); err != nil {
			return err
		}
		if rec.GetPdfa() != "" {
			// The signature box's font is new: its CIDSet goes too.
			dropCIDSets(pc)
		}
	}
	if withXMP(rec) {
		if err := cleanInfo(pc); err != nil {
			return err
		}
		return setXMP(pc, rec, now)
	}
	return nil
}

// cleanInfo trims the Info dictionary's text entries and drops control
// characters from them, as the XMP packet says them (XML cannot hold most
// of them): Info and XMP must agree to the character (PDF/A-1 6.7.3).
// A <title> of "  Invoice\t" becomes "Invoice" in both.
func cleanInfo(pc *model.Context) error {
	if pc.Info == nil {
		return nil
	}
	d, err := pc.DereferenceDict(*pc.Info)
	if err != nil || d == nil {
		return nil
	}
	for _, key := range []string{"Title", "Author", "Subject", "Keywords", "Creator"} {
		o, ok := d[key]
		if !ok {
			continue
		}
		v, err := pc.DereferenceStringOrHexLiteral(o, model.V10, nil)
		if err != nil {
			delete(d, key) // unreadable text cannot agree with anything
			continue
		}
		clean := strings.TrimSpace(strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0xfffe || r == 0xffff {
				return -1
			}
			return r
		}, strings.ToValidUTF8(v, "")))
		if clean == v {
			continue
		}
		if clean == "" {
			delete(d, key)
			continue
		}
		esc, err := types.EscapedUTF16String(clean)
		if err != nil {
			return fmt.Errorf("pdfedit: info %s: %w", key, err)
		}
		d[key] = types.StringLiteral(*esc)
	}
	return nil
}

// embedFiles embeds the attachments and the e-invoice's XML (DESIGN §8):
// each a file specification with F and UF, its MIME type as the stream's
// Subtype, Size and ModDate in Params, in the EmbeddedFiles name tree; in a
// PDF/A-3 also an associated file (listed in the catalog's AF, with its
// AFRelationship), as ISO 19005-3 6.8 asks.
func embedFiles(pc *model.Context, root types.Dict, rec *jobspb.Record, now time.Time) error {
	type file struct {
		name, mime, desc, rel string
		data                  []byte
	}
	var files []file
	for _, a := range rec.Attachments {
		rel := rec.AttachmentRelationship
		if rel == "" {
			rel = "Data"
		}
		files = append(files, file{a.FileName, a.MimeType, a.Description, rel, a.Data})
	}
	if e := rec.Einvoice; e != nil {
		files = append(files, file{pdfopts.EInvoiceFileName(e.Profile), "text/xml", "Factur-X/ZUGFeRD invoice", pdfopts.EInvoiceRelationship(e.Profile), e.Xml})
	}
	if len(files) == 0 {
		return nil
	}
	associated := strings.HasPrefix(rec.Pdfa, "3")
	var af types.Array
	if old, ok := root["AF"]; ok {
		if a, err := pc.DereferenceArray(old); err == nil {
			af = a
		}
	}
	if err := pc.LocateNameTree("EmbeddedFiles", true); err != nil {
		return fmt.Errorf("pdfedit: EmbeddedFiles name tree: %w", err)
	}
	for _, f := range files {
		sref, err := pc.NewEmbeddedStreamDict(bytes.NewReader(f.data), now)
		if err != nil {
			return fmt.Errorf("pdfedit: embed %q: %w", f.name, err)
		}
		sd, _, err := pc.DereferenceStreamDict(*sref)
		if err != nil || sd == nil {
			return fmt.Errorf("pdfedit: embed %q: %w", f.name, err)
		}
		sd.InsertName("Subtype", f.mime)
		fs, err := pc.NewFileSpecDict(f.name, f.name, f.desc, *sref)
		if err != nil {
			return fmt.Errorf("pdfedit: embed %q: %w", f.name, err)
		}
		if f.desc == "" {
			delete(fs, "Desc")
		}
		if associated {
			fs.InsertName("AFRelationship", f.rel)
		}
		ref, err := pc.IndRefForNewObject(fs)
		if err != nil {
			return fmt.Errorf("pdfedit: embed %q: %w", f.name, err)
		}
		m := model.NameMap{f.name: []types.Dict{fs}}
		if err := pc.Names["EmbeddedFiles"].Add(pc.XRefTable, f.name, *ref, m, []string{"F", "UF"}); err != nil {
			return fmt.Errorf("pdfedit: embed %q: %w", f.name, err)
		}
		af = append(af, *ref)
	}
	if associated {
		root["AF"] = af
	}
	return nil
}

// allowedActions are the action types PDF/A-2 and -3 permit (6.5.1).
var allowedActions = map[string]bool{"GoTo": true, "GoToR": true, "GoToE": true, "Thread": true, "URI": true, "Named": true, "SubmitForm": true}

// conformPDFA makes what PDF/A forbids or requires of a rendered or merged
// document so: the sRGB output intent (Chromium paints in DeviceRGB),
// no additional or forbidden actions, no JavaScript, printable
// annotations, no CIDSet (Skia's subsets' sets are not always complete),
// no image interpolation, no NeedAppearances or XFA. Fonts are not
// touched: what is not embedded cannot be made so, and the checker names it.
func conformPDFA(pc *model.Context, root types.Dict) error {
	icc := types.NewDict()
	icc.InsertInt("N", 3)
	sd, err := pc.NewStreamDictForBuf(SRGBProfile)
	if err != nil {
		return err
	}
	sd.Dict = icc
	sd.InsertName("Filter", "FlateDecode")
	if err := sd.Encode(); err != nil {
		return fmt.Errorf("pdfedit: output intent profile: %w", err)
	}
	iccRef, err := pc.IndRefForNewObject(*sd)
	if err != nil {
		return err
	}
	oi := types.NewDict()
	oi.InsertName("Type", "OutputIntent")
	oi.InsertName("S", "GTS_PDFA1")
	oi.InsertString("OutputConditionIdentifier", "sRGB IEC61966-2.1")
	oi.InsertString("Info", "sRGB IEC61966-2.1")
	oi.InsertString("RegistryName", "http://www.color.org")
	oi.Insert("DestOutputProfile", *iccRef)
	oiRef, err := pc.IndRefForNewObject(oi)
	if err != nil {
		return err
	}
	root["OutputIntents"] = types.Array{*oiRef}

	delete(root, "AA")
	if oa, ok := root["OpenAction"]; ok {
		if d, err := pc.DereferenceDict(oa); err == nil && d != nil && !allowedActions[nameOf(d, "S")] {
			delete(root, "OpenAction")
		}
	}
	if names, err := pc.DereferenceDict(root["Names"]); err == nil && names != nil {
		delete(names, "JavaScript")
		delete(pc.Names, "JavaScript")
	}
	if form, err := pc.DereferenceDict(root["AcroForm"]); err == nil && form != nil {
		delete(form, "NeedAppearances")
		delete(form, "XFA")
	}
	delete(root, "NeedsRendering")
	for nr, e := range pc.Table {
		if nr == 0 || e == nil || e.Free || e.Object == nil {
			continue
		}
		switch o := e.Object.(type) {
		case types.Dict:
			conformDict(pc, o)
		case types.StreamDict:
			if nameOf(o.Dict, "Subtype") == "Image" {
				delete(o.Dict, "Interpolate")
			}
		}
	}
	return nil
}

// dropCIDSets removes every font descriptor's CIDSet: optional, and
// PDF/A-2 6.2.11.4.2 wants it complete, which subsetting writers (Skia,
// pdfcpu) do not promise.
func dropCIDSets(pc *model.Context) {
	for _, e := range pc.Table {
		if e == nil || e.Free {
			continue
		}
		if d, ok := e.Object.(types.Dict); ok && nameOf(d, "Type") == "FontDescriptor" {
			delete(d, "CIDSet")
		}
	}
}

// associateFiles makes every embedded file of a PDF/A-3 an associated
// file (6.8-1…4), those a merged input brought too: a MIME type
// (application/octet-stream when it has none), F and UF, an
// AFRelationship (Unspecified: we cannot know it), and a place in the
// catalog's AF.
func associateFiles(pc *model.Context, root types.Dict) {
	listed := map[int]bool{}
	af, _ := pc.DereferenceArray(root["AF"])
	for _, o := range af {
		if r, ok := o.(types.IndirectRef); ok {
			listed[r.ObjectNumber.Value()] = true
		}
	}
	for nr, e := range pc.Table {
		if e == nil || e.Free {
			continue
		}
		fs, ok := e.Object.(types.Dict)
		if !ok || fs["EF"] == nil || (nameOf(fs, "Type") != "Filespec" && nameOf(fs, "Type") != "F") {
			continue
		}
		if fs["AFRelationship"] == nil {
			fs.InsertName("AFRelationship", "Unspecified")
		}
		name := ""
		for _, k := range []string{"UF", "F"} {
			if v, err := pc.DereferenceStringOrHexLiteral(fs[k], model.V10, nil); err == nil && v != "" {
				name = v
				break
			}
		}
		if name == "" {
			name = "attachment"
		}
		for _, k := range []string{"F", "UF"} {
			if fs[k] == nil {
				if s, err := types.EscapedUTF16String(name); err == nil {
					fs[k] = types.StringLiteral(*s)
				}
			}
		}
		if ef, err := pc.DereferenceDict(fs["EF"]); err == nil && ef != nil {
			for _, k := range []string{"F", "UF"} {
				if sd, _, err := pc.DereferenceStreamDict(ef[k]); err == nil && sd != nil && sd.Dict["Subtype"] == nil {
					sd.InsertName("Subtype", "application/octet-stream")
				}
			}
		}
		if !listed[nr] {
			af = append(af, *types.NewIndirectRef(nr, 0))
			listed[nr] = true
		}
	}
	if len(af) > 0 {
		root["AF"] = af
	}
}

// conformDict fixes one dictionary of the file for PDF/A by what it is.
func conformDict(pc *model.Context, d types.Dict) {
	switch {
	case nameOf(d, "Type") == "FontDescriptor":
		delete(d, "CIDSet")
	case nameOf(d, "Type") == "Page":
		delete(d, "AA")
	case d["Subtype"] != nil && (d["Rect"] != nil) && nameOf(d, "Type") != "XObject":
		// An annotation: printable, never hidden (6.3.2); no additional
		// actions on widgets (6.4.1); only permitted actions.
		f := 0
		if i, err := pc.DereferenceInteger(d["F"]); err == nil && i != nil {
			f = i.Value()
		}
		if nameOf(d, "Subtype") != "Popup" {
			d["F"] = types.Integer(f&^(1|2|32|256) | 4)
		}
		delete(d, "AA")
		if a, err := pc.DereferenceDict(d["A"]); err == nil && a != nil && !allowedActions[nameOf(a, "S")] {
			delete(d, "A")
		}
	}
}

func nameOf(d types.Dict, key string) string {
	if n := d.NameEntry(key); n != nil {
		return *n
	}
	return ""
}

// conformPDFUA sets what PDF/UA-1 asks of a tagged document that Chromium
// may leave out, and fails for what only the client can give: a title
// (7.1-9) and a language (7.2-34).
func conformPDFUA(pc *model.Context, root types.Dict) error {
	if infoString(pc, "Title") == "" {
		return &OptionError{Field: "metadata.title", Problem: "a PDF/UA needs a title: set metadata.title or the page's <title>"}
	}
	if lang, err := pc.DereferenceStringOrHexLiteral(root["Lang"], model.V10, nil); err != nil || strings.TrimSpace(lang) == "" {
		return &OptionError{Field: "lang", Problem: `a PDF/UA needs the document's language: set lang or <html lang="…">`}
	}
	if _, ok := root["StructTreeRoot"]; !ok {
		return &OptionError{Field: "pdfua", Problem: "the document has no structure tags (PDF/UA needs a tagged PDF; merged inputs must be tagged)"}
	}
	vp, err := pc.DereferenceDict(root["ViewerPreferences"])
	if err != nil || vp == nil {
		vp = types.NewDict()
		root["ViewerPreferences"] = vp
	}
	vp["DisplayDocTitle"] = types.Boolean(true)
	mi, err := pc.DereferenceDict(root["MarkInfo"])
	if err != nil || mi == nil {
		mi = types.NewDict()
		root["MarkInfo"] = mi
	}
	mi["Marked"] = types.Boolean(true)
	for nr := 1; nr <= pc.PageCount; nr++ {
		page, _, _, err := pc.PageDict(nr, false)
		if err != nil || page == nil {
			continue
		}
		annots, err := pc.DereferenceArray(page["Annots"])
		if err != nil || len(annots) == 0 {
			continue
		}
		page["Tabs"] = types.Name("S")
		for _, o := range annots {
			a, err := pc.DereferenceDict(o)
			if err != nil || a == nil || nameOf(a, "Subtype") != "Link" {
				continue
			}
			if _, ok := a["Contents"]; ok {
				continue
			}
			// 7.18.5-2: a link says where it goes.
			desc := "Link"
			if act, err := pc.DereferenceDict(a["A"]); err == nil && act != nil {
				if uri, err := pc.DereferenceStringOrHexLiteral(act["URI"], model.V10, nil); err == nil && uri != "" {
					desc = "Link to " + uri
				} else if nameOf(act, "S") == "GoTo" {
					desc = "Link within the document"
				}
			} else if _, ok := a["Dest"]; ok {
				desc = "Link within the document"
			}
			if s, err := types.EscapedUTF16String(desc); err == nil {
				a["Contents"] = types.StringLiteral(*s)
			}
		}
	}
	return nil
}

// infoString is a text entry of the Info dictionary, decoded.
func infoString(pc *model.Context, key string) string {
	if pc.Info == nil {
		return ""
	}
	d, err := pc.DereferenceDict(*pc.Info)
	if err != nil || d == nil {
		return ""
	}
	s, err := pc.DereferenceStringOrHexLiteral(d[key], model.V10, nil)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// modDate finds the ModDate pdfcpu wrote into the Info dictionary (object
// pc.Info) of out.
var modDateRe = regexp.MustCompile(`/ModDate\s*\((D:[^)]*)\)`)

// sameSecond reports whether out's Info ModDate is the second of now, as
// the XMP says.
func sameSecond(out []byte, pc *model.Context, now time.Time) bool {
	if pc.Info == nil {
		return false
	}
	head := []byte(fmt.Sprintf("\n%d %d obj", pc.Info.ObjectNumber.Value(), pc.Info.GenerationNumber.Value()))
	i := bytes.Index(out, head)
	if i < 0 {
		return false
	}
	obj := out[i:]
	if end := bytes.Index(obj, []byte("endobj")); end >= 0 {
		obj = obj[:end]
	}
	m := modDateRe.FindSubmatch(obj)
	return m != nil && string(m[1]) == types.DateString(now)
}
