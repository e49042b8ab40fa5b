package pdfedit

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// Annotation flags (ISO 32000-1 table 165) that keep an annotation off
// the screen: flattening draws what a reader sees.
const (
	annotHidden = 1 << 1
	annotNoView = 1 << 5
)

// Flatten writes in to w with its form fields and annotations burned into
// the page content: each annotation's normal appearance (for a check box or
// radio button, the one of its current state) is drawn where the
// annotation sits, as a Form XObject at the end of the page's content, and
// the annotation leaves the page; the AcroForm (fields, XFA) leaves the
// document, so nothing stays fillable.
//
// Kept as they are: links, which mark nothing and are how the document
// is navigated, and annotations other than form fields that have no
// appearance stream (a reader draws those itself; there is nothing to
// burn in, and dropping them would lose the mark). Dropped without being
// drawn: popups (a reader shows them only when asked), hidden annotations,
// and form fields without an appearance (pdfcpu cannot make one for us: a
// field whose value only a reader's NeedAppearances would draw loses it).
// Annotations flagged NoRotate are drawn rotated with the page.
//
// pdfcpu has no flattening of its own (only locking fields), so this is
// built on its object model. An unusable PDF is a *BadInputError;
// cancelling ctx returns ctx's error.
func Flatten(ctx context.Context, in io.ReadSeeker, w io.Writer) error {
	if w == nil {
		return fmt.Errorf("pdfedit: flatten: nil writer")
	}
	_, pc, err := readTool(ctx, in, model.REMOVEANNOTATIONS)
	if err != nil {
		return err
	}
	err = safeEdit(pc, func(pc *model.Context) error {
		for p := 1; p <= pc.PageCount; p++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := flattenPage(pc, p); err != nil {
				return err
			}
		}
		root, err := pc.Catalog()
		if err != nil {
			return &BadInputError{Reason: "no document catalog", cause: err}
		}
		delete(root, "AcroForm")
		pc.Form = nil
		return nil
	})
	if err != nil {
		return err
	}
	return save(ctx, pc, w)
}

// flattenPage draws page p's annotations into its content and removes
// them.
func flattenPage(pc *model.Context, p int) error {
	d, _, inh, err := pc.PageDict(p, false)
	if err != nil || d == nil {
		return &BadInputError{Reason: fmt.Sprintf("page %d cannot be read", p)}
	}
	annots, err := pc.DereferenceArray(d["Annots"])
	if err != nil || len(annots) == 0 {
		return nil
	}
	var draw strings.Builder
	var keep types.Array
	var xobjs types.Dict
	for _, a := range annots {
		ad, err := pc.DereferenceDict(a)
		if err != nil || ad == nil {
			continue // not an annotation: nothing a reader would show
		}
		sub := ""
		if s := ad.NameEntry("Subtype"); s != nil {
			sub = *s
		}
		if sub == "Link" {
			keep = append(keep, a)
			continue
		}
		flags := 0
		if f := ad.IntEntry("F"); f != nil {
			flags = *f
		}
		if sub == "Popup" || flags&(annotHidden|annotNoView) != 0 {
			continue
		}
		ap, form, err := appearance(pc, ad)
		if err != nil {
			return err
		}
		if ap == nil {
			if sub != "Widget" {
				keep = append(keep, a)
			}
			continue
		}
		cm, ok := placement(pc, ad, form)
		if !ok {
			continue
		}
		if xobjs == nil {
			if xobjs, err = pageXObjects(pc, d, inh); err != nil {
				return err
			}
		}
		name := fmt.Sprintf("DrFlat%d", ap.ObjectNumber.Value())
		xobjs[name] = *ap
		fmt.Fprintf(&draw, "q %s cm /%s Do Q\n", cm, name)
	}
	if len(keep) == 0 {
		delete(d, "Annots")
	} else {
		d["Annots"] = keep
	}
	if draw.Len() == 0 {
		return nil
	}
	return wrapContent(pc, d, draw.String())
}

// formBox is an appearance stream's geometry: its /BBox and /Matrix.
type formBox struct {
	bbox   [4]float64
	matrix [6]float64
}

// appearance is the indirect reference of ad's normal appearance stream,
// made indirect if it was direct, and its geometry; nil when ad has none
// usable.
func appearance(pc *model.Context, ad types.Dict) (*types.IndirectRef, formBox, error) {
	box := formBox{matrix: [6]float64{1, 0, 0, 1, 0, 0}}
	apd, err := pc.DereferenceDict(ad["AP"])
	if err != nil || apd == nil {
		return nil, box, nil
	}
	n := apd["N"]
	if states, err := pc.DereferenceDict(n); err == nil && states != nil {
		// A dictionary of states: the one /AS names.
		as := ad.NameEntry("AS")
		if as == nil {
			return nil, box, nil
		}
		n = states[*as]
	}
	sd, _, err := pc.DereferenceStreamDict(n)
	if err != nil || sd == nil {
		return nil, box, nil
	}
	bb, ok := numbers(pc, sd.Dict["BBox"], 4)
	if !ok {
		return nil, box, nil
	}
	copy(box.bbox[:], bb)
	if m, ok := numbers(pc, sd.Dict["Matrix"], 6); ok {
		copy(box.matrix[:], m)
	}
	if sd.Subtype() == nil {
		sd.InsertName("Subtype", "Form")
	}
	if ref, ok := n.(types.IndirectRef); ok {
		return &ref, box, nil
	}
	ref, err := pc.IndRefForNewObject(*sd)
	return ref, box, err
}

// placement is the matrix (as cm operands) that draws an appearance of
// geometry f where ad's /Rect is (ISO 32000-1 12.5.5): the box as the
// form's /Matrix transforms it, scaled and moved onto the rectangle. The
// form's own /Matrix is applied by Do. ok is false for a degenerate
// rectangle or box.
func placement(pc *model.Context, ad types.Dict, f formBox) (string, bool) {
	rect, ok := numbers(pc, ad["Rect"], 4)
	if !ok {
		return "", false
	}
	m, bbox := f.matrix, f.bbox
	x0, y0, x1, y1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, c := range [][2]float64{{bbox[0], bbox[1]}, {bbox[2], bbox[1]}, {bbox[0], bbox[3]}, {bbox[2], bbox[3]}} {
		x := m[0]*c[0] + m[2]*c[1] + m[4]
		y := m[1]*c[0] + m[3]*c[1] + m[5]
		x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
	}
	rx0, ry0 := min(rect[0], rect[2]), min(rect[1], rect[3])
	rx1, ry1 := max(rect[0], rect[2]), max(rect[1], rect[3])
	if x1-x0 < 1e-6 || y1-y0 < 1e-6 || rx1-rx0 < 1e-6 || ry1-ry0 < 1e-6 {
		return "", false
	}
	sx, sy := (rx1-rx0)/(x1-x0), (ry1-ry0)/(y1-y0)
	return fmt.Sprintf("%.6g 0 0 %.6g %.6g %.6g", sx, sy, rx0-x0*sx, ry0-y0*sy), true
}

// numbers reads an array of n numbers.
func numbers(pc *model.Context, o types.Object, n int) ([]float64, bool) {
	a, err := pc.DereferenceArray(o)
	if err != nil || len(a) != n {
		return nil, false
	}
	out := make([]float64, n)
	for i, v := range a {
		f, err := pc.DereferenceNumber(v)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		out[i] = f
	}
	return out, true
}

// pageXObjects is the XObject resource dictionary of page d, made its own
// (from the inherited resources) when the page has none. A dictionary
// shared with other pages is edited in place: the names added are unique
// to the appearance stream they name.
func pageXObjects(pc *model.Context, d types.Dict, inh *model.InheritedPageAttrs) (types.Dict, error) {
	res, err := pc.DereferenceDict(d["Resources"])
	if err != nil || res == nil {
		res = types.NewDict()
		if inh != nil && inh.Resources != nil {
			res = inh.Resources.Clone().(types.Dict)
		}
		d["Resources"] = res
	}
	x, err := pc.DereferenceDict(res["XObject"])
	if err != nil || x == nil {
		x = types.NewDict()
		res["XObject"] = x
	}
	return x, nil
}

// wrapContent puts the page's content between q and Q (so a graphics
// state it leaves changed does not move the drawings) and draw after it.
func wrapContent(pc *model.Context, d types.Dict, draw string) error {
	stream := func(s string) (types.IndirectRef, error) {
		sd, _ := pc.NewStreamDictForBuf([]byte(s))
		if err := sd.Encode(); err != nil {
			return types.IndirectRef{}, fmt.Errorf("pdfedit: flatten: %w", err)
		}
		ref, err := pc.IndRefForNewObject(*sd)
		if err != nil {
			return types.IndirectRef{}, err
		}
		return *ref, nil
	}
	var contents types.Array
	switch c := d["Contents"].(type) {
	case types.IndirectRef:
		if a, err := pc.DereferenceArray(c); err == nil && a != nil {
			contents = append(contents, a...)
		} else {
			contents = types.Array{c}
		}
	case types.Array:
		contents = c
	}
	if len(contents) == 0 {
		only, err := stream(draw)
		d["Contents"] = only
		return err
	}
	head, err := stream("q\n")
	if err != nil {
		return err
	}
	tail, err := stream("Q\n" + draw)
	d["Contents"] = append(append(types.Array{head}, contents...), tail)
	return err
}
