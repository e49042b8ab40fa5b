package pdfedit

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/pkg/pdfopts"
)

// The lazy split (Split's path for the layout Chromium writes): pdfcpu
// reads every object of the input before it can copy one page, and in a
// tagged Chromium PDF most objects are structure elements that no part
// carries (2,901 of 3,130 in the 50-page benchmark document). Like qpdf,
// this path reads only what the parts need, with the lazy join's reader
// (join_lazy.go): the xref table is indexed, the catalog, the page tree,
// /Dests, Info and the parts' annotations are parsed, and each part is the
// objects reachable from its pages copied as bytes, references renumbered.
//
// Each part has a new catalog and a flat page tree. A page gets the
// attributes it inherited (Resources, MediaBox, CropBox, Rotate), its
// /Parent is the new tree and its /StructParents goes (the parts carry no
// structure tree). A reference to a page outside the part, or to the
// source's catalog or page tree nodes, is written as null: a link to a
// page left out goes nowhere, as with pdfcpu's ExtractPages (whose writer
// leaves such a page out and its reference dangling), instead of dragging
// that page and the tree above it in. Nothing else is cut: an object the
// input shares, say between its structure tree and a page, is copied when
// a page reaches it. The catalog's /Dests keeps the names of the part's
// own pages (pdfcpu's extraction drops the catalog's, keeping only a
// /Names tree's); Info keeps what copyInfo copies.
//
// Anything else goes to pdfcpu (splitLazy's ok false), decided before a
// part is returned: another layout (object or xref streams, an incremental
// update, encryption), a catalog with /AcroForm or /Names, a page tree that
// is not a tree of /Pages and /Page dictionaries whose /Count adds up (a
// cycle, a node twice, over MaxToolPages pages or maxPageTreeDepth deep),
// a page without a MediaBox of four numbers, a form field widget, an
// object that cannot be read, a panic.

// Kinds of objects in a lazy split.
const (
	splitPlain = iota // copied when reachable
	splitCut          // never copied: references to it are null
	splitPage         // a page: copied in the parts holding it, else null
)

// lazySplit is a document being split by the lazy path; numbers are the
// input's (one part, base 0), new objects after them.
type lazySplit struct {
	d       *lazyDoc
	p       *lazyPart
	pages   []int   // the pages' object numbers, in order
	kind    []uint8 // by number
	version string

	// The new objects, the same numbers in every part: the catalog and
	// page tree root (filled for each part), Info, /Dests.
	catNr, rootNr, infoNr, destsNr int
	// dests are the catalog's named destinations by the number of the
	// page they go to; nil when it has none.
	dests map[int][]namedDest
	// annotsOK: the pages (by number) whose annotations were looked at.
	annotsOK map[int]bool

	// For the part being written: stamp marks the part's pages (allow)
	// and reached objects (mark), final numbers them.
	stamp              int32
	allow, mark, final []int32
	list, stack        []int
}

type namedDest struct {
	name  string
	value types.Object
}

// splitLazy is Split on data (its inflation checked) when the lazy path
// reads it: ok false sends Split to pdfcpu, nothing done. With ok, the
// parts or the error Split returns (the options against the page count,
// the size bound, ctx's).
func splitLazy(ctx context.Context, data []byte, ranges []pdfopts.PageRange, every, maxParts int) (parts [][]byte, ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			parts, ok, err = nil, false, nil
		}
	}()
	return splitLazyParts(ctx, data, ranges, every, maxParts)
}

// splitLazyParts is splitLazy without the recover (the fuzz target calls
// it, so a panic is found).
func splitLazyParts(ctx context.Context, data []byte, ranges []pdfopts.PageRange, every, maxParts int) ([][]byte, bool, error) {
	s := newLazySplit(data)
	if s == nil {
		return nil, false, nil
	}
	spans, field, err := splitSpans(ranges, every, len(s.pages), maxParts)
	if err != nil {
		return nil, true, err
	}
	for _, sp := range spans {
		for pg := sp.First; pg <= sp.Last; pg++ {
			if !s.plainAnnots(s.pages[pg-1]) {
				return nil, false, nil
			}
		}
	}
	parts := make([][]byte, 0, len(spans))
	total := 0
	for _, sp := range spans {
		if err := ctx.Err(); err != nil {
			return nil, true, err
		}
		var out bytes.Buffer
		if !s.writePart(s.pages[sp.First-1:sp.Last], &out) {
			return nil, false, nil
		}
		if total += out.Len(); total > maxSplitBytes {
			return nil, true, &OptionError{Field: field, Problem: fmt.Sprintf("the files would be over %d MiB together; split into fewer files", maxSplitBytes>>20)}
		}
		parts = append(parts, out.Bytes())
	}
	return parts, true, nil
}

// newLazySplit indexes data and reads its catalog, page tree, /Dests and
// Info; nil when the lazy path does not take it.
func newLazySplit(data []byte) *lazySplit {
	d, err := newLazyDoc([][]byte{data})
	if err != nil {
		return nil
	}
	p := d.parts[0]
	s := &lazySplit{d: d, p: p, version: model.V17.String()}
	if v, err := model.PDFVersion(string(data[5:min(len(data), 8)])); err == nil && v > model.V17 {
		s.version = v.String()
	}
	cat, err := d.DereferenceDict(*types.NewIndirectRef(p.root, 0))
	if err != nil || cat == nil || d.err != nil {
		return nil
	}
	if t := cat.Type(); t == nil || *t != "Catalog" {
		return nil
	}
	for _, k := range []string{"AcroForm", "Names"} {
		if _, ok := cat[k]; ok {
			return nil
		}
	}
	pagesRef, ok := cat["Pages"].(types.IndirectRef)
	if !ok {
		return nil
	}

	// The new objects, numbered after the input's.
	for _, nr := range []*int{&s.catNr, &s.rootNr, &s.destsNr} {
		ref, err := d.IndRefForNewObject(types.Dict{})
		if err != nil {
			return nil
		}
		*nr = ref.ObjectNumber.Value()
	}
	if !s.info() {
		return nil
	}
	s.kind = make([]uint8, len(p.offs))
	s.kind[p.root] = splitCut
	if !s.walk(pagesRef, 0, inherited{}) || len(s.pages) == 0 || d.err != nil {
		return nil
	}
	for _, nr := range s.pages {
		if !s.isBox(d.x.Table[nr].Object.(types.Dict)["MediaBox"]) {
			return nil
		}
	}
	// The walk may have added objects (shared).
	size := *d.x.Size
	s.kind = append(s.kind, make([]uint8, size-len(s.kind))...)
	if !s.readDests(cat["Dests"]) {
		return nil
	}
	s.allow = make([]int32, size)
	s.mark = make([]int32, size)
	s.final = make([]int32, size)
	s.annotsOK = map[int]bool{}
	return s
}

// inheritable are the page attributes a page tree node passes down (ISO
// 32000-1 7.7.3.4); inherited their values, in that order.
var inheritable = [...]string{"Resources", "MediaBox", "CropBox", "Rotate"}

type inherited [len(inheritable)]types.Object

// walk reads the page tree node at ref and what is under it, depth deep,
// appending its pages to s.pages; false when it is not a tree the lazy
// path copies with certainty.
func (s *lazySplit) walk(ref types.Object, depth int, inh inherited) bool {
	r, ok := ref.(types.IndirectRef)
	if !ok || depth > maxPageTreeDepth {
		return false
	}
	nr := r.ObjectNumber.Value()
	if nr <= 0 || nr >= len(s.p.offs) || s.kind[nr] != splitPlain {
		return false // missing, or seen already: a cycle or a shared node
	}
	node, err := s.d.DereferenceDict(r)
	if err != nil || node == nil || s.d.err != nil {
		return false
	}
	t := node.Type()
	switch {
	case t != nil && *t == "Pages":
		s.kind[nr] = splitCut
		for i, k := range inheritable {
			if o := node[k]; o != nil {
				if inh[i], ok = s.shared(o); !ok {
					return false
				}
			}
		}
		kids, ok := node["Kids"].(types.Array)
		count, ok2 := node["Count"].(types.Integer)
		if !ok || !ok2 {
			return false
		}
		before := len(s.pages)
		for _, k := range kids {
			if !s.walk(k, depth+1, inh) || len(s.pages) > MaxToolPages {
				return false
			}
		}
		return len(s.pages)-before == int(count)
	case t != nil && *t == "Page":
		if _, ok := node["Kids"]; ok {
			return false
		}
		s.kind[nr] = splitPage
		for i, k := range inheritable {
			if node[k] == nil && inh[i] != nil {
				node[k] = inh[i]
			}
		}
		if node["MediaBox"] == nil {
			return false
		}
		delete(node, "StructParents")
		node["Parent"] = *types.NewIndirectRef(s.rootNr, 0)
		s.pages = append(s.pages, nr)
		return true
	}
	return false
}

// isBox says whether o is a rectangle a page keeps: four numbers, or an
// object of the input holding them that is not cut (a page tree node,
// whose reference the parts write as null).
func (s *lazySplit) isBox(o types.Object) bool {
	if r, ok := o.(types.IndirectRef); ok {
		if nr := r.ObjectNumber.Value(); nr <= 0 || nr >= len(s.kind) || s.kind[nr] != splitPlain {
			return false
		}
	}
	v, ok := s.peek(o)
	a, isArr := v.(types.Array)
	if !ok || !isArr || len(a) != 4 {
		return false
	}
	for _, e := range a {
		switch e.(type) {
		case types.Integer, types.Float:
		default:
			return false
		}
	}
	return true
}

// shared is a value a node passes down as its pages will hold it: a
// number or a box as it is, anything else (a resource dictionary) in an
// object of its own that they all refer to, so that a node's value is
// written once a part, not once a page (a megabyte of resources on a node
// above 10,000 pages would otherwise make a 10 GB part).
func (s *lazySplit) shared(o types.Object) (types.Object, bool) {
	switch v := o.(type) {
	case types.IndirectRef, types.Integer, types.Float:
		return o, true
	case types.Array:
		small := len(v) <= 4
		for _, e := range v {
			switch e.(type) {
			case types.Integer, types.Float:
			default:
				small = false
			}
		}
		if small {
			return o, true
		}
	}
	ref, err := s.d.IndRefForNewObject(o)
	if err != nil {
		return nil, false
	}
	return *ref, true
}

// peek is o, or the object it refers to, parsed without keeping it in
// s.d.x (an object only looked at is copied as bytes); ok false when it
// cannot be read.
func (s *lazySplit) peek(o types.Object) (types.Object, bool) {
	r, isRef := o.(types.IndirectRef)
	if !isRef {
		return o, true
	}
	nr := r.ObjectNumber.Value()
	if e, ok := s.d.x.Table[nr]; ok {
		return e.Object, true
	}
	p, n := s.d.part(nr)
	if p == nil {
		return nil, true // a dangling reference: null
	}
	obj, err := p.parse(n)
	return obj, err == nil
}

// readDests groups the catalog's /Dests (o) by the page each goes to, for
// each part to keep those of its pages; a destination to no page is left
// out of all.
func (s *lazySplit) readDests(o types.Object) bool {
	if o == nil {
		return true
	}
	v, ok := s.peek(o)
	if !ok {
		return false
	}
	dd, ok := v.(types.Dict)
	if !ok {
		return v == nil
	}
	s.dests = map[int][]namedDest{}
	for name, val := range dd {
		dest, ok := s.peek(val)
		if !ok {
			return false
		}
		if dict, isDict := dest.(types.Dict); isDict {
			if dest, ok = s.peek(dict["D"]); !ok {
				return false
			}
		}
		arr, _ := dest.(types.Array)
		if len(arr) == 0 {
			continue
		}
		if r, ok := arr[0].(types.IndirectRef); ok {
			nr := r.ObjectNumber.Value()
			if nr > 0 && nr < len(s.kind) && s.kind[nr] == splitPage {
				s.dests[nr] = append(s.dests[nr], namedDest{name, val})
			}
		}
	}
	return true
}

// info makes the parts' Info: the input's text entries copyInfo copies,
// and what pdfcpu's writer stamps.
func (s *lazySplit) info() bool {
	entries := map[string]string{}
	if s.p.info > 0 {
		src, err := s.d.DereferenceDict(*types.NewIndirectRef(s.p.info, 0))
		if err == nil && src != nil {
			for _, key := range []string{"Title", "Author", "Subject", "Keywords", "Creator"} {
				// As infoString reads it (DereferenceStringOrHexLiteral,
				// which needs a model's version to compare).
				o, err := s.d.Dereference(src[key])
				var v string
				switch str := o.(type) {
				case types.StringLiteral:
					v, err = types.StringLiteralToString(str)
				case types.HexLiteral:
					v, err = types.HexLiteralToString(str)
				}
				if v = strings.TrimSpace(v); err == nil && v != "" {
					entries[key] = v
				}
			}
		}
		// Parsed only to be read: not written as it is.
		delete(s.d.x.Table, s.p.info)
		s.d.err = nil
	}
	pc := &model.Context{XRefTable: s.d.x}
	if err := setInfo(pc, entries); err != nil || pc.Info == nil {
		return false
	}
	s.infoNr = pc.Info.ObjectNumber.Value()
	di, err := s.d.DereferenceDict(*pc.Info)
	if err != nil || di == nil {
		return false
	}
	now := types.StringLiteral(types.DateString(time.Now()))
	di["Producer"] = types.StringLiteral("pdfcpu " + model.VersionStr)
	di["CreationDate"], di["ModDate"] = now, now
	return true
}

// plainAnnots says whether the annotations of page nr can be copied as
// they are: no form field widgets (a field's tree and /AcroForm are
// pdfcpu's to carry).
func (s *lazySplit) plainAnnots(nr int) bool {
	if s.annotsOK[nr] {
		return true
	}
	e, ok := s.d.x.Table[nr]
	if !ok {
		return false
	}
	page, ok := e.Object.(types.Dict)
	if !ok {
		return false
	}
	o, ok := s.peek(page["Annots"])
	if !ok {
		return false
	}
	annots, isArr := o.(types.Array)
	if !isArr && o != nil {
		return false
	}
	for _, a := range annots {
		v, ok := s.peek(a)
		if !ok {
			return false
		}
		ad, isDict := v.(types.Dict)
		if !isDict {
			if v == nil {
				continue
			}
			return false
		}
		sub := ad.NameEntry("Subtype")
		if sub != nil && *sub == "Widget" {
			return false
		}
		if _, ok := ad["FT"]; ok {
			return false
		}
		if _, ok := ad["Parent"]; ok && (sub == nil || *sub != "Popup") {
			return false
		}
	}
	s.annotsOK[nr] = true
	return true
}

// writePart writes the document of pages (object numbers) to w; false
// when an object it reaches cannot be read or written (w, in memory,
// cannot fail: the document is at fault, and pdfcpu may read it).
func (s *lazySplit) writePart(pages []int, w *bytes.Buffer) bool {
	x := s.d.x
	kids := make(types.Array, len(pages))
	s.stamp++
	for i, nr := range pages {
		kids[i] = *types.NewIndirectRef(nr, 0)
		s.allow[nr] = s.stamp
	}
	x.Table[s.rootNr].Object = types.Dict{"Type": types.Name("Pages"), "Kids": kids, "Count": types.Integer(len(pages))}
	cat := types.Dict{"Type": types.Name("Catalog"), "Pages": *types.NewIndirectRef(s.rootNr, 0)}
	if s.dests != nil {
		dd := types.Dict{}
		for _, nr := range pages {
			for _, e := range s.dests[nr] {
				dd[e.name] = e.value
			}
		}
		if len(dd) > 0 {
			x.Table[s.destsNr].Object = dd
			cat["Dests"] = *types.NewIndirectRef(s.destsNr, 0)
		}
	}
	x.Table[s.catNr].Object = cat

	// The objects reachable from the catalog and Info, each located and
	// scanned before anything is written.
	list, stack := s.list[:0], s.stack[:0]
	push := func(nr int) {
		if nr <= 0 || nr >= len(s.mark) || s.mark[nr] == s.stamp {
			return
		}
		switch s.kind[nr] {
		case splitCut:
			return
		case splitPage:
			if s.allow[nr] != s.stamp {
				return
			}
		}
		if _, parsed := x.Table[nr]; !parsed && (nr >= len(s.p.offs) || s.p.offs[nr] == 0) {
			return // a dangling reference: null
		}
		s.mark[nr] = s.stamp
		list = append(list, nr)
		stack = append(stack, nr)
	}
	push(s.catNr)
	push(s.infoNr)
	for len(stack) > 0 {
		nr := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if e, parsed := x.Table[nr]; parsed {
			walkRefs(e.Object, push)
			continue
		}
		o, err := s.p.locate(nr)
		if err != nil {
			return false
		}
		if _, _, err := scanObject(s.p.data[:o.end], o.body, func(_, _, ref int, _ bool) {
			if ref > 0 && ref < len(s.p.offs) && s.p.offs[ref] != 0 {
				push(ref)
			}
		}, nil); err != nil {
			return false
		}
	}
	s.list, s.stack = list, stack
	slices.Sort(list)
	for i, nr := range list {
		s.final[nr] = int32(i + 1)
	}
	toFinal := func(nr int) int {
		if nr <= 0 || nr >= len(s.mark) || s.mark[nr] != s.stamp {
			return -1
		}
		return int(s.final[nr])
	}
	return s.d.writeObjs(w, list, toFinal, toFinal(s.catNr), toFinal(s.infoNr), s.version) == nil
}
