package sign

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/font"
	pdffont "github.com/pdfcpu/pdfcpu/pkg/pdfcpu/font"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfedit"
)

// BadBoxError is a visible signature box that cannot be placed: a page out
// of range, a box off the page, a size that is not positive. It is the
// client's fault: the worker answers 400 naming Field.
type BadBoxError struct {
	// Field is the request field at fault: "sign.visible.page",
	// "sign.visible.x", "sign.visible.y", "sign.visible.width" or
	// "sign.visible.height".
	Field  string
	Reason string
}

func (e *BadBoxError) Error() string { return e.Field + ": " + e.Reason }

// The placeholders Prepare writes and Seal finds. The ByteRange
// placeholder is as wide as any real ByteRange of a file under 2 GiB.
const (
	byteRangeMax  = 2147483647
	byteRangeText = "[0 2147483647 2147483647 2147483647]"
)

// Sizes of the /Contents placeholder, in bytes of CMS (the hex string is
// twice as long): the certificates, the signature value and the rest of the
// CMS, plus room for a time-stamp token; never more than a PDF string may
// hold (PDF/A-2 6.1.13-3, ISO 32000-1 Annex C: 32767 bytes).
const (
	cmsOverhead   = 4096
	timestampRoom = 8192
	maxContents   = 32767
)

// contentsSize is how many bytes of CMS the /Contents placeholder holds
// for id, with or without a time stamp.
func contentsSize(id *Identity, withTimestamp bool) (int, error) {
	n := cmsOverhead
	for _, c := range id.Chain {
		n += len(c.Raw)
	}
	switch pub := id.Signer.Public().(type) {
	case *rsa.PublicKey:
		n += pub.Size()
	case *ecdsa.PublicKey:
		n += 2*((pub.Curve.Params().BitSize+7)/8) + 16
	default:
		return 0, fmt.Errorf("sign: unsupported key type %T", pub)
	}
	if withTimestamp {
		n += timestampRoom
	}
	if n > maxContents {
		return 0, fmt.Errorf("sign: identity %s: its certificate chain needs a %d-byte signature, over the %d bytes a PDF string may hold", id.Name, n, maxContents)
	}
	return n, nil
}

// Prepare adds to xctx, the document that pdfcpu's final write is about to
// write, a PAdES signature waiting for Seal: the signature dictionary
// (/Filter /Adobe.PPKLite, /SubFilter /ETSI.CAdES.detached, /M now,
// /Reason, /Location, /ContactInfo, and /ByteRange and /Contents
// placeholders sized for id's chain and, with sig.Timestamp, a time-stamp
// token), a signature field whose widget is invisible on page 1 (Rect
// [0 0 0 0]) or the sig.Visible box with an appearance in the embedded font
// (PDF/A 6.2.11.4.1), printable (F 4) with a /TU, the AcroForm with
// SigFlags 3, and for a tagged document a /Form structure element holding
// the widget (PDF/UA 7.18.4). It turns pdfcpu's object and xref streams off
// for the write: the signature dictionary must be plain bytes of the file.
// A box that cannot be placed is a *BadBoxError.
func Prepare(xctx *model.Context, sig *jobspb.Signature, id *Identity, now time.Time) (err error) {
	if xctx == nil || xctx.XRefTable == nil || sig == nil {
		return errors.New("sign: Prepare without a document or a signature")
	}
	if id == nil || id.Signer == nil || len(id.Chain) == 0 {
		return errors.New("sign: Prepare without an identity")
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sign: cannot add a signature to this PDF (%v)", r)
		}
	}()
	x := xctx.XRefTable
	if x.Encrypt != nil || x.E != nil {
		return errors.New("sign: an encrypted document cannot be signed")
	}
	size, err := contentsSize(id, sig.GetTimestamp())
	if err != nil {
		return err
	}
	pageNr := 1
	v := sig.GetVisible()
	if v != nil {
		pageNr = int(v.Page)
		if v.Page < 1 || pageNr > x.PageCount {
			return &BadBoxError{"sign.visible.page", fmt.Sprintf("page %d of a document of %d", v.Page, x.PageCount)}
		}
	}
	pageDict, pageRef, inh, err := x.PageDict(pageNr, false)
	if err != nil || pageDict == nil || pageRef == nil {
		return fmt.Errorf("sign: page %d: %v", pageNr, err)
	}
	rect := types.Array{types.Integer(0), types.Integer(0), types.Integer(0), types.Integer(0)}
	var ap *types.IndirectRef
	cn := signerName(id)
	tu := "Digital signature of " + cn
	if v != nil {
		box, err := placeBox(v, inh)
		if err != nil {
			return err
		}
		rect = types.Array{types.Float(box.LL.X), types.Float(box.LL.Y), types.Float(box.UR.X), types.Float(box.UR.Y)}
		text := v.Text
		if strings.TrimSpace(text) == "" {
			text = "Digitally signed by " + cn + "\n" + now.Format("2006-01-02 15:04:05 -07:00")
		}
		if ap, err = appearance(x, box.Width(), box.Height(), text); err != nil {
			return err
		}
		tu = strings.Join(strings.Fields(text), " ")
	}

	sigDict := types.Dict{
		"Type":      types.Name("Sig"),
		"Filter":    types.Name("Adobe.PPKLite"),
		"SubFilter": types.Name(oidSubFilterCAdES),
		"M":         types.StringLiteral(types.DateString(now)),
		"ByteRange": types.Array{types.Integer(0), types.Integer(byteRangeMax), types.Integer(byteRangeMax), types.Integer(byteRangeMax)},
		"Contents":  types.HexLiteral(strings.Repeat("0", 2*size)),
	}
	// Text strings as UTF-16BE hex: no byte of the client's text can look
	// like a key or a placeholder to Seal.
	for key, val := range map[string]string{"Reason": sig.Reason, "Location": sig.Location, "ContactInfo": sig.ContactInfo} {
		if val != "" {
			sigDict[key] = utf16Hex(val)
		}
	}
	sigRef, err := x.IndRefForNewObject(sigDict)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}

	form, err := acroForm(x)
	if err != nil {
		return err
	}
	fields, err := x.DereferenceArray(form["Fields"])
	if err != nil {
		return fmt.Errorf("sign: AcroForm fields: %w", err)
	}
	widget := types.Dict{
		"Type":    types.Name("Annot"),
		"Subtype": types.Name("Widget"),
		"FT":      types.Name("Sig"),
		"T":       types.StringLiteral(fieldName(x, fields)),
		"TU":      utf16Hex(tu),
		"V":       *sigRef,
		"F":       types.Integer(4), // print (PDF/A 6.3.2)
		"Rect":    rect,
		"P":       *pageRef,
	}
	if ap != nil {
		widget["AP"] = types.Dict{"N": *ap}
	}
	widgetRef, err := x.IndRefForNewObject(widget)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	form["Fields"] = append(fields, *widgetRef)
	form["SigFlags"] = types.Integer(3) // SignaturesExist | AppendOnly

	annots, err := x.DereferenceArray(pageDict["Annots"])
	if err != nil {
		return fmt.Errorf("sign: page %d annotations: %w", pageNr, err)
	}
	if ref, ok := pageDict["Annots"].(types.IndirectRef); ok {
		// The array is an object of its own: change it where it is.
		if e, found := x.FindTableEntryForIndRef(&ref); found && e != nil {
			e.Object = append(annots, *widgetRef)
		}
	} else {
		pageDict["Annots"] = append(annots, *widgetRef)
	}

	if err := tagWidget(x, widget, *widgetRef, *pageRef, pageDict); err != nil {
		return err
	}
	// Object streams would compress the signature dictionary out of reach.
	if xctx.Configuration != nil {
		xctx.WriteObjectStream = false
		xctx.WriteXRefStream = false
	}
	return nil
}

// signerName is the certificate's subject common name, else the whole
// subject.
func signerName(id *Identity) string {
	c := id.Chain[0]
	if c.Subject.CommonName != "" {
		return c.Subject.CommonName
	}
	return c.Subject.String()
}

func utf16Hex(s string) types.HexLiteral {
	return types.NewHexLiteral([]byte(types.EncodeUTF16String(strings.ToValidUTF8(s, "\uFFFD"))))
}

// placeBox is v on its page: x, y from the bottom left of the visible page
// (its CropBox, else MediaBox), the whole box on the page.
func placeBox(v *jobspb.SignBox, inh *model.InheritedPageAttrs) (*types.Rectangle, error) {
	page := inh.MediaBox
	if inh.CropBox != nil {
		page = inh.CropBox
	}
	if page == nil {
		return nil, errors.New("sign: the page has no MediaBox")
	}
	finite := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
	w, h := page.Width(), page.Height()
	pt := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	switch {
	case !finite(v.Width) || v.Width <= 0:
		return nil, &BadBoxError{"sign.visible.width", "must be more than 0 points"}
	case !finite(v.Height) || v.Height <= 0:
		return nil, &BadBoxError{"sign.visible.height", "must be more than 0 points"}
	case !finite(v.X) || v.X < 0 || v.X >= w:
		return nil, &BadBoxError{"sign.visible.x", "off the page (0 to " + pt(w) + " points)"}
	case !finite(v.Y) || v.Y < 0 || v.Y >= h:
		return nil, &BadBoxError{"sign.visible.y", "off the page (0 to " + pt(h) + " points)"}
	case v.X+v.Width > w:
		return nil, &BadBoxError{"sign.visible.width", "the box reaches past the page's right edge (" + pt(w) + " points)"}
	case v.Y+v.Height > h:
		return nil, &BadBoxError{"sign.visible.height", "the box reaches past the page's top edge (" + pt(h) + " points)"}
	}
	llx, lly := page.LL.X+v.X, page.LL.Y+v.Y
	return types.NewRectangle(llx, lly, llx+v.Width, lly+v.Height), nil
}

// acroForm is the catalog's interactive form dictionary, made when there is
// none, with its Fields array.
func acroForm(x *model.XRefTable) (types.Dict, error) {
	root := x.RootDict
	if root == nil {
		return nil, errors.New("sign: the document has no catalog")
	}
	if o, ok := root["AcroForm"]; ok && o != nil {
		d, err := x.DereferenceDict(o)
		if err != nil {
			return nil, fmt.Errorf("sign: AcroForm: %w", err)
		}
		if d != nil {
			// PDF/A 6.4.2: no XFA with a signature's form; PDF 2.0 deprecates
			// NeedAppearances, PDF/A 6.4.1 forbids it true.
			delete(d, "XFA")
			delete(d, "NeedAppearances")
			if _, ok := d["Fields"]; !ok {
				d["Fields"] = types.Array{}
			}
			x.Form = d
			return d, nil
		}
	}
	d := types.Dict{"Fields": types.Array{}}
	root["AcroForm"] = d
	x.Form = d
	return d, nil
}

// fieldName is "Signature1", or the first SignatureN no top-level field is
// called already.
func fieldName(x *model.XRefTable, fields types.Array) string {
	taken := map[string]bool{}
	for _, f := range fields {
		d, err := x.DereferenceDict(f)
		if err != nil || d == nil {
			continue
		}
		if t, err := x.DereferenceStringOrHexLiteral(d["T"], model.V10, nil); err == nil {
			taken[t] = true
		}
	}
	for i := 1; ; i++ {
		if n := "Signature" + strconv.Itoa(i); !taken[n] {
			return n
		}
	}
}

// appearance is the visible box's normal appearance: text in the embedded
// font, black (DeviceRGB, which PDF/A's sRGB output intent covers), sized to
// fit the box.
func appearance(x *model.XRefTable, w, h float64, text string) (*types.IndirectRef, error) {
	if err := pdfedit.UseEmbeddedFont(); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	fontName := pdfedit.EmbeddedFont
	ttf, ok, err := font.UserFont(fontName)
	if err != nil || !ok {
		return nil, fmt.Errorf("sign: font %s: %v", fontName, err)
	}
	if x.UsedGIDs == nil {
		x.UsedGIDs = map[string]map[uint16]bool{}
	}
	used := x.UsedGIDs[fontName]
	if used == nil {
		used = map[uint16]bool{}
		x.UsedGIDs[fontName] = used
	}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[:20]
	}
	// Glyph IDs (Identity-H) and widths at 1 pt.
	hexLines := make([]string, len(lines))
	widest := 0.0
	for i, line := range lines {
		var b strings.Builder
		width := 0
		for _, r := range line {
			gid, ok := ttf.Chars[uint32(r)]
			if !ok {
				continue
			}
			used[gid] = true
			fmt.Fprintf(&b, "%04X", gid)
			if int(gid) < len(ttf.GlyphWidths) {
				width += ttf.GlyphWidths[gid]
			}
		}
		hexLines[i] = b.String()
		widest = max(widest, float64(width)/1000)
	}
	// pdfcpu keeps metrics in PDF glyph space (1000 to the em).
	ascent, descent := float64(ttf.Ascent)/1000, float64(-ttf.Descent)/1000
	if ascent <= 0 {
		ascent, descent = 0.9, 0.25
	}
	const leading = 1.2
	margin := min(2, w/10, h/10)
	size := 10.0
	if widest > 0 {
		size = min(size, (w-2*margin)/widest)
	}
	size = min(size, (h-2*margin)/((float64(len(lines)-1))*leading+ascent+descent))
	size = max(size, 0.1)

	var cs strings.Builder
	fmt.Fprintf(&cs, "q 0 0 0 rg BT /F0 %.3f Tf %.3f TL %.3f %.3f Td", size, size*leading, margin, h-margin-ascent*size)
	for i, hx := range hexLines {
		if i > 0 {
			cs.WriteString(" T*")
		}
		fmt.Fprintf(&cs, " <%s> Tj", hx)
	}
	cs.WriteString(" ET Q\n")

	fontRef, err := pdffont.EnsureFontDict(x, fontName, "", "", false, nil)
	if err != nil {
		return nil, fmt.Errorf("sign: font %s: %w", fontName, err)
	}
	sd, err := x.NewStreamDictForBuf([]byte(cs.String()))
	if err != nil {
		return nil, fmt.Errorf("sign: appearance: %w", err)
	}
	sd.InsertName("Type", "XObject")
	sd.InsertName("Subtype", "Form")
	sd.Insert("BBox", types.Array{types.Integer(0), types.Integer(0), types.Float(w), types.Float(h)})
	sd.Insert("Resources", types.Dict{"Font": types.Dict{"F0": *fontRef}})
	if err := sd.Encode(); err != nil {
		return nil, fmt.Errorf("sign: appearance: %w", err)
	}
	ref, err := x.IndRefForNewObject(*sd)
	if err != nil {
		return nil, fmt.Errorf("sign: appearance: %w", err)
	}
	return ref, nil
}

// tagWidget puts the widget of a tagged document into its structure tree
// (PDF/UA 7.18.4): a /Form element under the document's top element with an
// object reference to the widget, the widget's /StructParent entry in the
// parent tree, and /Tabs /S on the page (PDF/UA 7.18.3).
func tagWidget(x *model.XRefTable, widget types.Dict, widgetRef, pageRef types.IndirectRef, pageDict types.Dict) error {
	o, ok := x.RootDict["StructTreeRoot"]
	if !ok || o == nil {
		return nil
	}
	str, err := x.DereferenceDict(o)
	if err != nil || str == nil {
		return nil // not a structure tree we can extend: leave it
	}
	rootRef, _ := o.(types.IndirectRef)
	// The parent: the tree's only top element (Document), else the root.
	parent, parentRef := str, rootRef
	kids, _ := x.Dereference(str["K"])
	switch k := kids.(type) {
	case types.Dict:
		if r, ok := str["K"].(types.IndirectRef); ok {
			parent, parentRef = k, r
		}
	case types.Array:
		if len(k) == 1 {
			if r, ok := k[0].(types.IndirectRef); ok {
				if d, err := x.DereferenceDict(r); err == nil && d != nil {
					parent, parentRef = d, r
				}
			}
		}
	}
	if parentRef.ObjectNumber == 0 {
		return nil
	}
	key, err := nextParentKey(x, str)
	if err != nil {
		return err
	}
	elem := types.Dict{
		"Type": types.Name("StructElem"),
		"S":    types.Name("Form"),
		"P":    parentRef,
		"Pg":   pageRef,
		"K":    types.Dict{"Type": types.Name("OBJR"), "Obj": widgetRef, "Pg": pageRef},
	}
	elemRef, err := x.IndRefForNewObject(elem)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	appendKid(x, parent, elemRef)
	if err := addParentTreeEntry(x, str, key, elemRef); err != nil {
		return err
	}
	widget["StructParent"] = types.Integer(key)
	str["ParentTreeNextKey"] = types.Integer(key + 1)
	if _, ok := pageDict["Tabs"]; !ok {
		pageDict["Tabs"] = types.Name("S")
	}
	return nil
}

// appendKid adds ref to the /K of a structure element, whatever form /K
// has (absent, one kid, an array, an array object).
func appendKid(x *model.XRefTable, parent types.Dict, ref *types.IndirectRef) {
	k, ok := parent["K"]
	if !ok || k == nil {
		parent["K"] = *ref
		return
	}
	if r, ok := k.(types.IndirectRef); ok {
		if e, found := x.FindTableEntryForIndRef(&r); found && e != nil {
			if a, ok := e.Object.(types.Array); ok {
				e.Object = append(a, *ref)
				return
			}
		}
	}
	if a, ok := k.(types.Array); ok {
		parent["K"] = append(a, *ref)
		return
	}
	parent["K"] = types.Array{k, *ref}
}

// nextParentKey is the structure tree's ParentTreeNextKey, or one more than
// the largest key of its parent tree.
func nextParentKey(x *model.XRefTable, str types.Dict) (int, error) {
	if n, err := x.DereferenceInteger(str["ParentTreeNextKey"]); err == nil && n != nil && *n >= 0 {
		return n.Value(), nil
	}
	largest := -1
	var walk func(o types.Object, depth int)
	walk = func(o types.Object, depth int) {
		d, err := x.DereferenceDict(o)
		if err != nil || d == nil || depth > 32 {
			return
		}
		if nums, err := x.DereferenceArray(d["Nums"]); err == nil {
			for i := 0; i < len(nums); i += 2 {
				if n, ok := nums[i].(types.Integer); ok {
					largest = max(largest, n.Value())
				}
			}
		}
		if kids, err := x.DereferenceArray(d["Kids"]); err == nil {
			for _, k := range kids {
				walk(k, depth+1)
			}
		}
	}
	walk(str["ParentTree"], 0)
	return largest + 1, nil
}

// addParentTreeEntry adds key → ref to the parent tree (a number tree);
// key is above every key it has, so it goes last.
func addParentTreeEntry(x *model.XRefTable, str types.Dict, key int, ref *types.IndirectRef) error {
	pt, err := x.DereferenceDict(str["ParentTree"])
	if err != nil {
		return fmt.Errorf("sign: ParentTree: %w", err)
	}
	if pt == nil {
		str["ParentTree"] = types.Dict{"Nums": types.Array{types.Integer(key), *ref}}
		return nil
	}
	if _, ok := pt["Kids"]; ok {
		kids, err := x.DereferenceArray(pt["Kids"])
		if err != nil {
			return fmt.Errorf("sign: ParentTree kids: %w", err)
		}
		leaf, err := x.IndRefForNewObject(types.Dict{
			"Nums":   types.Array{types.Integer(key), *ref},
			"Limits": types.Array{types.Integer(key), types.Integer(key)},
		})
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		if r, ok := pt["Kids"].(types.IndirectRef); ok {
			if e, found := x.FindTableEntryForIndRef(&r); found && e != nil {
				e.Object = append(kids, *leaf)
				return nil
			}
		}
		pt["Kids"] = append(kids, *leaf)
		return nil
	}
	nums, err := x.DereferenceArray(pt["Nums"])
	if err != nil {
		return fmt.Errorf("sign: ParentTree: %w", err)
	}
	nums = append(nums, types.Integer(key), *ref)
	if r, ok := pt["Nums"].(types.IndirectRef); ok {
		if e, found := x.FindTableEntryForIndRef(&r); found && e != nil {
			e.Object = nums
			return nil
		}
	}
	pt["Nums"] = nums
	return nil
}
