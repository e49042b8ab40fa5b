package pdfedit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// The lazy join (Join's path for the parts Chromium writes): pdfcpu reads
// a PDF whole into maps and interfaces, ~30 bytes of Go heap per byte of a
// tagged part (a 1,041-page tagged ledger, 100 MB of parts: 2.8 GB of
// heap; 5,721 pages: 18 GB), nearly all of it the structure tree's
// millions of small elements that the join never changes. Chromium (Skia)
// writes one classic xref table, no object streams, no encryption: each
// object can be found by its offset and copied as bytes, its references
// renumbered on the way out. So a part stays its bytes and an index of
// its objects; the objects the join looks at or changes (catalogs, page
// tree nodes and pages, the structure tree's roots, top elements and the
// elements at the cuts, parent and ID trees, /Dests) are parsed into a
// pdfcpu table (lazyDoc.x) on first use and written from it; every other
// object reachable from the result's catalog is copied from its part.
// The joiner's logic (join.go) is the same for both paths.
//
// Numbers: object n of part i is number base_i + n in the table
// ("provisional"); objects the join adds follow all the parts'. The
// output numbers the reachable objects 1, 2, … in that order.

// errNotLazy: a part the lazy join does not read (another writer's
// layout); Join uses pdfcpu's full read for all the parts then.
var errNotLazy = errors.New("pdfedit: join: part not in the layout of the lazy join")

// lazyPart is one part: its bytes and where its objects start.
type lazyPart struct {
	data []byte
	offs []int64 // by object number; 0: no such object
	base int     // provisional number of its object 0
	root int     // the catalog's number
	info int     // the Info dictionary's number, 0 if none
	// sorted are the object numbers in the order of their offsets.
	sorted []int32
	// patched are objects whose value the join rewrote as bytes
	// (patchHeaders), by object number: copied from here, not from data.
	patched map[int][]byte
}

// lazyDoc is the parts being joined and the objects parsed from them.
type lazyDoc struct {
	parts []*lazyPart
	x     *model.XRefTable // parsed (and new) objects, by provisional number
	total int              // the parts' provisional numbers are below total
	err   error            // the first object that could not be parsed
	// located are the objects reachable found, by provisional number
	// (end 0: not located), kept for writing them.
	located []lazyObj
}

// locate is object n of p, provisional number nr, as reachable located it
// or found now.
func (d *lazyDoc) locate(p *lazyPart, n, nr int) (lazyObj, error) {
	if nr >= 0 && nr < len(d.located) && d.located[nr].end > 0 {
		return d.located[nr], nil
	}
	return p.locate(n)
}

func newLazyDoc(parts [][]byte) (*lazyDoc, error) {
	d := &lazyDoc{}
	for _, b := range parts {
		p, err := readLazyPart(b)
		if err != nil {
			return nil, err
		}
		p.base = d.total
		d.total += len(p.offs)
		d.parts = append(d.parts, p)
	}
	size := d.total
	d.x = &model.XRefTable{Table: map[int]*model.XRefTableEntry{0: model.NewFreeHeadXRefTableEntry()}, Size: &size, ValidationMode: model.ValidationRelaxed}
	return d, nil
}

// readLazyPart indexes b's objects from its one classic xref table, read
// as chromiumPageCount reads it (xrefTable: Skia's 20-byte entries).
// Object numbers are bounded by b's size (a dense table takes 20 bytes an
// object): a sparse or lying table goes to pdfcpu instead of sizing the
// index by a number read from the file.
func readLazyPart(b []byte) (*lazyPart, error) {
	tail := b[max(0, len(b)-1024):]
	i := bytes.LastIndex(tail, []byte("startxref"))
	if i < 0 || !bytes.HasPrefix(b, []byte("%PDF-")) {
		return nil, errNotLazy
	}
	xref, _, ok := lexInt(tail, i+len("startxref"))
	if !ok || xref <= 0 || xref >= len(b) {
		return nil, errNotLazy
	}
	pos := skipWS(b, xref)
	if !bytes.HasPrefix(b[pos:], []byte("xref")) {
		return nil, errNotLazy // an xref stream
	}
	table, trailer, ok := xrefTable(b, pos+len("xref"))
	if !ok {
		return nil, errNotLazy
	}
	maxNr := len(b) / 16
	n := 0
	for _, sub := range table {
		if sub.first > maxNr || sub.count > maxNr-sub.first {
			return nil, errNotLazy
		}
		n = max(n, sub.first+sub.count)
	}
	offs := make([]int64, n)
	for _, sub := range table {
		for k := range sub.count {
			e := b[sub.at+20*k : sub.at+20*k+20]
			nr := sub.first + k
			switch {
			case e[17] == 'f' || nr == 0:
				offs[nr] = 0
			case e[17] == 'n':
				off, err := strconv.Atoi(string(e[:10]))
				if err != nil || off <= 0 || off >= len(b) {
					return nil, errNotLazy
				}
				offs[nr] = int64(off)
			default:
				return nil, errNotLazy
			}
		}
	}
	p := &lazyPart{data: b}
	s := string(trailer)
	o, err := model.ParseObject(&s)
	if err != nil {
		return nil, errNotLazy
	}
	tr, ok := o.(types.Dict)
	if !ok {
		return nil, errNotLazy
	}
	for _, k := range []string{"Prev", "Encrypt", "XRefStm"} {
		if _, ok := tr[k]; ok {
			return nil, errNotLazy
		}
	}
	// Objects between the table's last and /Size are missing: null, as
	// beyond /Size.
	if size, ok := tr["Size"].(types.Integer); !ok || int(size) < len(offs) {
		return nil, errNotLazy
	}
	root, ok := tr["Root"].(types.IndirectRef)
	if !ok || root.ObjectNumber.Value() <= 0 || root.ObjectNumber.Value() >= len(offs) || offs[root.ObjectNumber.Value()] == 0 {
		return nil, errNotLazy
	}
	p.root = root.ObjectNumber.Value()
	if info, ok := tr["Info"].(types.IndirectRef); ok && info.ObjectNumber.Value() > 0 && info.ObjectNumber.Value() < len(offs) {
		p.info = info.ObjectNumber.Value()
	}
	p.offs = offs
	for n, off := range offs {
		if off > 0 {
			p.sorted = append(p.sorted, int32(n))
		}
	}
	slices.SortFunc(p.sorted, func(a, b int32) int { return int(offs[a] - offs[b]) })
	return p, nil
}

// part is the part holding provisional number nr, and nr in it.
func (d *lazyDoc) part(nr int) (*lazyPart, int) {
	if nr <= 0 || nr >= d.total {
		return nil, 0
	}
	i, found := slices.BinarySearchFunc(d.parts, nr, func(p *lazyPart, nr int) int { return p.base - nr })
	if !found {
		i--
	}
	p := d.parts[i]
	n := nr - p.base
	if n <= 0 || p.offs[n] == 0 {
		return nil, 0
	}
	return p, n
}

// lazyObj is where object n's parts lie in its part's bytes: its value
// (the dictionary of a stream) at [body, end), its stream's data at
// [data, data+length) when it is a stream.
type lazyObj struct {
	body, end    int
	stream       bool
	data, length int
	// patch, when set, is the object's value to write instead of
	// data[body:end] (lazyPart.patched).
	patch []byte
}

// locate finds object n of p.
func (p *lazyPart) locate(n int) (lazyObj, error) {
	return p.locateObj(n, true, nil)
}

// locateObj is locate; a stream's /Length given as a reference is read
// only when lengthRef (the object it names must be a plain integer, not
// looked up in turn: a /Length naming its own stream, or two streams
// naming each other, would recurse without end). refs, when not nil, is
// called with each reference in the object's value, found by the same
// scan (the join's reachability walk would otherwise scan it again).
func (p *lazyPart) locateObj(n int, lengthRef bool, refs func(ref int)) (lazyObj, error) {
	b := p.data
	bad := func(what string) (lazyObj, error) {
		return lazyObj{}, fmt.Errorf("object %d: %s", n, what)
	}
	nr, q, ok := lexInt(b, int(p.offs[n]))
	if !ok || nr != n {
		return bad("not at its offset")
	}
	if _, q, ok = lexInt(b, q); !ok {
		return bad("no generation")
	}
	q = skipWS(b, q)
	if !bytes.HasPrefix(b[q:], []byte("obj")) {
		return bad("no obj keyword")
	}
	o := lazyObj{body: q + 3}
	var length, lenRef int = -1, 0
	end, kw, err := scanObject(b, o.body, func(s, e, ref int, afterLength bool) {
		if afterLength {
			lenRef = ref
		}
		if refs != nil {
			refs(ref)
		}
	}, &length)
	if err != nil {
		return bad(err.Error())
	}
	o.end = end
	if kw == "endobj" {
		o.patch = p.patched[n]
		return o, nil
	}
	// A stream: its data follows "stream" and an end of line.
	q = end + len("stream")
	if q < len(b) && b[q] == '\r' {
		q++
	}
	if q < len(b) && b[q] == '\n' {
		q++
	}
	if lenRef > 0 {
		if !lengthRef {
			return bad("a stream where a stream length was expected")
		}
		if lenRef >= len(p.offs) || p.offs[lenRef] == 0 {
			return bad("stream length missing")
		}
		lo, err := p.locateObj(lenRef, false, nil)
		if err != nil || lo.stream {
			return bad("stream length unreadable")
		}
		v, _, ok := lexInt(b[:lo.end], lo.body)
		if !ok {
			return bad("stream length not an integer")
		}
		length = v
	}
	if length < 0 || length > len(b)-q {
		return bad("stream length out of range")
	}
	r := skipWS(b, q+length)
	if !bytes.HasPrefix(b[r:], []byte("endstream")) {
		return bad("stream length wrong")
	}
	o.stream, o.data, o.length = true, q, length
	return o, nil
}

// load parses provisional object nr into d.x once; references to objects
// its part lacks become null.
func (d *lazyDoc) load(nr int) {
	if nr <= 0 || nr >= d.total {
		return
	}
	if _, ok := d.x.Table[nr]; ok {
		return
	}
	p, n := d.part(nr)
	if p == nil {
		return
	}
	obj, err := p.parse(n)
	if err != nil {
		if d.err == nil {
			d.err = err
		}
		return
	}
	d.x.Table[nr] = model.NewXRefTableEntryGen0(obj)
}

// parse is object n of p as a pdfcpu object, in provisional numbers.
func (p *lazyPart) parse(n int) (types.Object, error) {
	o, err := p.locate(n)
	if err != nil {
		return nil, err
	}
	text, err := p.rewrite(nil, o, func(ref int) int {
		if ref <= 0 || ref >= len(p.offs) || p.offs[ref] == 0 {
			return -1
		}
		return p.base + ref
	})
	if err != nil {
		return nil, err
	}
	s := string(text)
	obj, err := model.ParseObject(&s)
	if err != nil {
		return nil, fmt.Errorf("object %d: %v", n, err)
	}
	if !o.stream {
		return obj, nil
	}
	dict, ok := obj.(types.Dict)
	if !ok {
		return nil, fmt.Errorf("object %d: a stream without a dictionary", n)
	}
	l := int64(o.length)
	return types.StreamDict{Dict: dict, Raw: p.data[o.data : o.data+o.length], StreamLength: &l}, nil
}

// rewrite appends object o's value with every reference renumbered by to
// (-1: null) to dst.
func (p *lazyPart) rewrite(dst []byte, o lazyObj, to func(int) int) ([]byte, error) {
	if o.patch != nil {
		return rewriteRefs(dst, o.patch, 0, to)
	}
	return rewriteRefs(dst, p.data[:o.end], o.body, to)
}

// rewriteRefs appends b[from:] with each reference "n g R" renumbered by
// to (-1: null).
func rewriteRefs(dst, b []byte, from int, to func(int) int) ([]byte, error) {
	last := from
	_, _, err := scanObject(b, from, func(s, e, ref int, _ bool) {
		dst = appendRef(append(dst, b[last:s]...), to(ref))
		last = e
	}, nil)
	if err != nil {
		return nil, err
	}
	return append(dst, b[last:]...), nil
}

// appendRef appends a reference to object n as the join writes it: null
// for n < 0 (an object left out).
func appendRef(dst []byte, n int) []byte {
	if n < 0 {
		return append(dst, "null"...)
	}
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, " 0 R"...)
}

// Dereference, DereferenceDict, DereferenceArray and IndRefForNewObject
// are the joiner's store (joinStore).

func (d *lazyDoc) Dereference(o types.Object) (types.Object, error) {
	if ref, ok := o.(types.IndirectRef); ok {
		d.load(ref.ObjectNumber.Value())
	}
	return d.x.Dereference(o)
}

func (d *lazyDoc) DereferenceDict(o types.Object) (types.Dict, error) {
	if ref, ok := o.(types.IndirectRef); ok {
		d.load(ref.ObjectNumber.Value())
	}
	return d.x.DereferenceDict(o)
}

func (d *lazyDoc) DereferenceArray(o types.Object) (types.Array, error) {
	if ref, ok := o.(types.IndirectRef); ok {
		d.load(ref.ObjectNumber.Value())
	}
	return d.x.DereferenceArray(o)
}

func (d *lazyDoc) IndRefForNewObject(o types.Object) (*types.IndirectRef, error) {
	return d.x.IndRefForNewObject(o)
}

// eachPart calls f as eachDict does on the objects of part i whose bytes
// (stream data included) hold hint and pass keep (nil: all), parsed.
func (d *lazyDoc) eachPart(i int, hint string, keep func([]byte) bool, f func(types.Dict) bool) {
	p := d.parts[i]
	for n, end := range p.objectsHolding(hint) {
		if keep != nil && !keep(p.data[p.offs[n]:end]) {
			continue
		}
		nr := p.base + n
		_, had := d.x.Table[nr]
		d.load(nr)
		if e, ok := d.x.Table[nr]; ok {
			changed := false
			eachDictIn(e.Object, func(dd types.Dict) {
				if f(dd) {
					changed = true
				}
			})
			if !had && !changed {
				// Only looked at: copied as bytes.
				delete(d.x.Table, nr)
			}
		}
	}
}

// objectsHolding yields, once each and in the order of the file, the
// objects of p whose bytes (stream data included) hold hint: each one's
// number and where the next object starts.
func (p *lazyPart) objectsHolding(hint string) iter.Seq2[int, int64] {
	return func(yield func(int, int64) bool) {
		h := []byte(hint)
		last := -1
		for at := 0; ; {
			k := bytes.Index(p.data[at:], h)
			if k < 0 {
				return
			}
			pos := int64(at + k)
			at += k + len(h)
			j, n, end := p.holding(pos)
			if j < 0 || j == last {
				continue
			}
			last = j
			if !yield(n, end) {
				return
			}
		}
	}
}

// holding is the object whose bytes hold offset pos: the last one starting
// before it, its number n, its index j in sorted (-1: none) and where the
// next one starts.
func (p *lazyPart) holding(pos int64) (j, n int, end int64) {
	j, _ = slices.BinarySearchFunc(p.sorted, pos, func(n int32, pos int64) int {
		if p.offs[n] < pos {
			return -1
		}
		return 1
	})
	if j == 0 {
		return -1, 0, 0
	}
	end = int64(len(p.data))
	if j < len(p.sorted) {
		end = p.offs[p.sorted[j]]
	}
	return j - 1, int(p.sorted[j-1]), end
}

// patchHeaders is renameHeaders over part i as bytes (joiner.patchHeaders):
// in each object whose /Headers arrays hold plain literal strings, the
// renamed ones are written anew into a patched copy of its value, which is
// copied out as any other object, not parsed. Parsing and writing back
// every cell of a long table cost half the join (slices loaded in
// renderers of their own number their elements from the same start, so
// many header IDs are renamed). false: some object holds its /Headers in
// another form, or is parsed already: renameHeaders' parsed pass looks at
// them all (the patched ones then hold nothing to rename).
func (d *lazyDoc) patchHeaders(i int, rename map[string]string) bool {
	p := d.parts[i]
	// Kept only when every object could be patched: the parsed pass would
	// otherwise rename a patched object's new names again (a rename chain,
	// node05 -> node40 -> node40-2, would send a cell to another header).
	patched := map[int][]byte{}
	for n := range p.objectsHolding("/Headers") {
		if _, parsed := d.x.Table[p.base+n]; parsed {
			return false
		}
		o, err := p.locate(n)
		if err != nil || o.stream {
			return false
		}
		patch, ok := renameHeaderStrings(p.data[o.body:o.end], rename)
		if !ok {
			return false
		}
		if patch != nil {
			patched[n] = patch
		}
	}
	if p.patched == nil {
		p.patched = patched
	} else {
		maps.Copy(p.patched, patched)
	}
	return true
}

// renameHeaderStrings is value with each literal string of its /Headers
// arrays that rename names written as its new name; nil when none is, and
// ok false when an array holds anything but plain literal strings (a hex
// string, an escape, a reference).
func renameHeaderStrings(value []byte, rename map[string]string) (out []byte, ok bool) {
	h := []byte("/Headers")
	last := 0
	for at := 0; ; {
		k := bytes.Index(value[at:], h)
		if k < 0 {
			break
		}
		i := at + k + len(h)
		at = i
		if i < len(value) && !pdfDelim[value[i]] && !pdfSpace[value[i]] {
			continue // a longer name
		}
		i = skipWS(value, i)
		if i >= len(value) || value[i] != '[' {
			return nil, false
		}
		for i = skipWS(value, i+1); i < len(value) && value[i] != ']'; i = skipWS(value, i) {
			if value[i] != '(' {
				return nil, false
			}
			e := bytes.IndexAny(value[i+1:], "()\\")
			if e < 0 || value[i+1+e] != ')' {
				return nil, false
			}
			e += i + 1
			if to, renamed := rename[string(value[i+1:e])]; renamed {
				lit, ok := newString(to).(types.StringLiteral)
				if !ok {
					return nil, false
				}
				out = append(append(append(out, value[last:i]...), '('), lit.Value()...)
				out = append(out, ')')
				last = e + 1
			}
			i = e + 1
		}
		if i >= len(value) {
			return nil, false
		}
		at = i
	}
	if out == nil {
		return nil, true
	}
	return append(out, value[last:]...), true
}

// eachDictIn calls f on o when it is a dictionary (or stream), and on the
// dictionaries directly inside it, as eachDict does for a table's object.
func eachDictIn(o types.Object, f func(types.Dict)) {
	inner := func(o types.Object) {
		switch v := o.(type) {
		case types.Dict:
			f(v)
		case types.Array:
			for _, x := range v {
				if d, ok := x.(types.Dict); ok {
					f(d)
				}
			}
		}
	}
	var dict types.Dict
	switch v := o.(type) {
	case types.Dict:
		dict = v
	case types.StreamDict:
		dict = v.Dict
	case types.Array:
		inner(v)
		return
	default:
		return
	}
	f(dict)
	for _, x := range dict {
		inner(x)
	}
}

// loadPages parses the page tree under ref and, for each page, what
// stampBands reads through the table: its contents, resources and their
// XObject dictionary when they are references. seen: the nodes loaded
// already (a node twice in the tree, or a cycle, is walked once, not once
// per path to it).
func (d *lazyDoc) loadPages(ref types.Object, depth int, seen map[types.IndirectRef]bool) {
	if r, ok := ref.(types.IndirectRef); ok {
		if seen[r] {
			return
		}
		seen[r] = true
	}
	node, err := d.DereferenceDict(ref)
	if err != nil || node == nil || depth > maxPageTreeDepth {
		return
	}
	for _, k := range []string{"Resources", "MediaBox", "Rotate"} {
		if v, ok := node[k]; ok {
			if res, err := d.Dereference(v); err == nil && k == "Resources" {
				if rd, ok := res.(types.Dict); ok {
					_, _ = d.Dereference(rd["XObject"])
				}
			}
		}
	}
	if kids, ok := node["Kids"]; ok {
		a, _ := d.DereferenceArray(kids)
		for _, k := range a {
			d.loadPages(k, depth+1, seen)
		}
		return
	}
	if c, ok := node["Contents"]; ok {
		o, _ := d.Dereference(c)
		if a, ok := o.(types.Array); ok {
			for _, e := range a {
				_, _ = d.Dereference(e)
			}
		}
	}
}

// reachable numbers the objects reachable from root and info 1, 2, … in
// provisional order: final[nr] (0: left out), count the next number. Each
// part's object it reaches is located and scanned here, before anything is
// written: an object the lazy reader cannot read sends the join to pdfcpu.
func (d *lazyDoc) reachable(root, info int) (final []int32, count int, err error) {
	size := *d.x.Size
	reach := make([]bool, size)
	stack := []int{root}
	if info > 0 {
		stack = append(stack, info)
	}
	push := func(nr int) {
		if nr > 0 && nr < size && !reach[nr] {
			stack = append(stack, nr)
		}
	}
	for len(stack) > 0 {
		nr := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if reach[nr] {
			continue
		}
		reach[nr] = true
		if e, ok := d.x.Table[nr]; ok {
			walkRefs(e.Object, push)
			continue
		}
		p, n := d.part(nr)
		if p == nil {
			reach[nr] = false // a dangling reference: written as null
			continue
		}
		o, err := p.locateObj(n, true, func(ref int) {
			if ref > 0 && ref < len(p.offs) && p.offs[ref] != 0 {
				push(p.base + ref)
			}
		})
		if err != nil {
			return nil, 0, err
		}
		if d.located == nil {
			d.located = make([]lazyObj, size)
		}
		d.located[nr] = o
	}
	final = make([]int32, size)
	count = 1
	for nr, ok := range reach {
		if ok {
			final[nr] = int32(count)
			count++
		}
	}
	return final, count, nil
}

// write writes the objects numbered by final (reachable), as a PDF of
// header version version to w.
func (d *lazyDoc) write(w io.Writer, final []int32, count, root, info int, version string) error {
	size := len(final)
	toFinal := func(nr int) int {
		if nr <= 0 || nr >= size || final[nr] == 0 {
			return -1
		}
		return int(final[nr])
	}
	nrs := make([]int, 0, count)
	for nr, f := range final {
		if f != 0 {
			nrs = append(nrs, nr)
		}
	}
	return d.writeObjs(w, nrs, toFinal, toFinal(root), toFinal(info), version)
}

// writeObjs writes the objects nrs (provisional numbers; parsed ones from
// d.x, the others copied from their part) as objects 1, 2, … in that
// order, each reference renumbered by toFinal (which must give object
// nrs[i] the number i+1, -1 for null), and the trailer naming root and
// info (final numbers; info < 1: none), as a PDF of header version
// version to w.
func (d *lazyDoc) writeObjs(w io.Writer, nrs []int, toFinal func(int) int, root, info int, version string) error {
	var buf []byte
	bw := bufio.NewWriterSize(w, 1<<20)
	var pos int64
	put := func(b []byte) {
		n, _ := bw.Write(b)
		pos += int64(n)
	}
	put([]byte("%PDF-" + version + "\n%\xe2\xe3\xcf\xd3\n"))
	count := len(nrs) + 1
	offsets := make([]int64, count)
	for i, nr := range nrs {
		f := i + 1
		offsets[f] = pos
		buf = strconv.AppendInt(buf[:0], int64(f), 10)
		buf = append(buf, " 0 obj\n"...)
		put(buf)
		var err error
		if e, ok := d.x.Table[nr]; ok {
			err = writeParsed(put, e.Object, toFinal)
		} else {
			p, n := d.part(nr)
			var o lazyObj
			if p == nil {
				err = fmt.Errorf("object %d: not in its part", nr)
			} else if o, err = d.locate(p, n, nr); err == nil {
				buf, err = p.rewrite(buf[:0], o, func(ref int) int {
					if ref <= 0 || ref >= len(p.offs) || p.offs[ref] == 0 {
						return -1
					}
					return toFinal(p.base + ref)
				})
				if err == nil {
					put(buf)
					if o.stream {
						put([]byte("stream\n"))
						put(p.data[o.data : o.data+o.length])
						put([]byte("\nendstream\n"))
					}
				}
			}
		}
		if err != nil {
			return err
		}
		put([]byte("endobj\n"))
	}
	xref := pos
	buf = fmt.Appendf(buf[:0], "xref\n0 %d\n0000000000 65535 f \n", count)
	put(buf)
	for _, off := range offsets[1:] {
		buf = fmt.Appendf(buf[:0], "%010d 00000 n \n", off)
		put(buf)
	}
	id := md5.Sum(fmt.Appendf(nil, "%d %d %d", count, xref, time.Now().UnixNano()))
	buf = fmt.Appendf(buf[:0], "trailer\n<</Size %d/Root %d 0 R", count, root)
	if info > 0 {
		buf = fmt.Appendf(buf, "/Info %d 0 R", info)
	}
	buf = fmt.Appendf(buf, "/ID[<%X><%X>]>>\nstartxref\n%d\n%%%%EOF\n", id, id, xref)
	put(buf)
	return bw.Flush()
}

// writeParsed writes a parsed object, references renumbered by to.
func writeParsed(put func([]byte), o types.Object, to func(int) int) error {
	var raw []byte
	dict := o
	switch v := o.(type) {
	case nil:
		put([]byte("null\n"))
		return nil
	case types.StreamDict:
		v.Dict["Length"] = types.Integer(len(v.Raw))
		dict, raw = v.Dict, v.Raw
		if raw == nil {
			raw = []byte{}
		}
	}
	b, ok := appendParsed(nil, dict, to)
	if !ok {
		var err error
		if b, err = rewriteRefs(nil, []byte(dict.PDFString()), 0, to); err != nil {
			return err
		}
	}
	put(b)
	put([]byte("\n"))
	if raw != nil {
		put([]byte("stream\n"))
		put(raw)
		put([]byte("\nendstream\n"))
	}
	return nil
}

// appendParsed appends o (a stream's dictionary, not the stream) as
// pdfcpu's PDFString writes it, each reference renumbered by to (-1: null) as
// rewriteRefs renumbers it: the same bytes without formatting each number
// through fmt and scanning the text again (the parent tree of a long
// tagged document is one array of every marked-content reference it has:
// 0.2 s of a 1.2 s join). ok false: o holds a type PDFString writes in a
// way of its own; the caller writes it so.
func appendParsed(dst []byte, o types.Object, to func(int) int) (_ []byte, ok bool) {
	switch v := o.(type) {
	case nil:
		return append(dst, "null"...), true
	case types.IndirectRef:
		return appendRef(dst, to(v.ObjectNumber.Value())), true
	case types.Integer:
		return strconv.AppendInt(dst, int64(v), 10), true
	case types.Float, types.Boolean, types.StringLiteral, types.HexLiteral, types.Name:
		return append(dst, v.PDFString()...), true
	case types.Dict:
		dst = append(dst, "<<"...)
		for _, k := range slices.Sorted(maps.Keys(v)) {
			dst = append(dst, '/')
			dst = append(dst, types.EncodeName(k)...)
			switch v[k].(type) {
			case nil, types.IndirectRef, types.Integer, types.Float, types.Boolean:
				dst = append(dst, ' ')
			}
			if dst, ok = appendParsed(dst, v[k], to); !ok {
				return nil, false
			}
		}
		return append(dst, ">>"...), true
	case types.Array:
		dst = append(dst, '[')
		for i, e := range v {
			switch e.(type) {
			case types.Dict, types.Array, types.Name:
			default:
				if i > 0 {
					dst = append(dst, ' ')
				}
			}
			if dst, ok = appendParsed(dst, e, to); !ok {
				return nil, false
			}
		}
		return append(dst, ']'), true
	}
	return nil, false
}

// walkRefs calls f on the number of each reference in o.
func walkRefs(o types.Object, f func(int)) {
	switch v := o.(type) {
	case types.IndirectRef:
		f(v.ObjectNumber.Value())
	case types.Dict:
		for _, x := range v {
			walkRefs(x, f)
		}
	case types.StreamDict:
		walkRefs(v.Dict, f)
	case types.Array:
		for _, x := range v {
			walkRefs(x, f)
		}
	}
}

// The lexer: just enough PDF syntax to find an object's end and its
// references, strings and names skipped whole.

// skipWS skips white space and comments from i.
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch {
		case isSpace(b[i]):
			i++
		case b[i] == '%':
			for i < len(b) && b[i] != '\n' && b[i] != '\r' {
				i++
			}
		default:
			return i
		}
	}
	return i
}

// lexInt reads a non-negative integer after white space from i.
func lexInt(b []byte, i int) (int, int, bool) {
	i = skipWS(b, i)
	start, v := i, 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' && i-start < 12 {
		v = v*10 + int(b[i]-'0')
		i++
	}
	if i == start || i < len(b) && !isSpace(b[i]) && !isDelim(b[i]) {
		return 0, i, false
	}
	return v, i, true
}

// token kinds
const (
	tokInt = iota + 1
	tokName
	tokWord // any other regular token: keywords, reals, negative numbers
	tokOther
)

// scanObject reads one object's value from b[i:] up to the keyword
// endobj or stream at the outermost level, whose position and text it
// returns. ref is called on each reference "n g R" (its span and n;
// afterLength: it is the value of a /Length key of the outermost
// dictionary). length, if not nil, receives /Length's value when it is a
// direct integer.
func scanObject(b []byte, i int, ref func(s, e, n int, afterLength bool), length *int) (int, string, error) {
	type tok struct {
		kind, s, e, v int
	}
	var t1, t2 tok // the last two tokens
	depth := 0
	lengthAt := -1 // start of the token after /Length at depth 1
	for {
		i = skipWS(b, i)
		if i >= len(b) {
			if depth == 0 && ref != nil && length == nil {
				return i, "", nil // a whole buffer
			}
			return 0, "", errors.New("no end of object")
		}
		t := tok{s: i, kind: tokOther}
		c := b[i]
		switch {
		case c == '(':
			if i = stringEnd(b, i); i < 0 {
				return 0, "", errors.New("unterminated string")
			}
		case c == '<' && i+1 < len(b) && b[i+1] == '<':
			depth++
			i += 2
		case c == '>' && i+1 < len(b) && b[i+1] == '>':
			depth--
			i += 2
		case c == '<':
			k := bytes.IndexByte(b[i:], '>')
			if k < 0 {
				return 0, "", errors.New("unterminated hex string")
			}
			i += k + 1
		case c == '[':
			depth++
			i++
		case c == ']':
			depth--
			i++
		case c == '/':
			i++
			for i < len(b) && !isSpace(b[i]) && !isDelim(b[i]) {
				i++
			}
			t.kind = tokName
		case c == ')' || c == '>' || c == '{' || c == '}':
			i++
		default:
			allDigits := true
			v := 0
			for i < len(b) && !isSpace(b[i]) && !isDelim(b[i]) {
				if b[i] < '0' || b[i] > '9' || i-t.s > 12 {
					allDigits = false
				} else {
					v = v*10 + int(b[i]-'0')
				}
				i++
			}
			t.kind, t.v = tokWord, v
			if allDigits {
				t.kind = tokInt
			}
		}
		t.e = i
		if depth < 0 {
			return 0, "", errors.New("unbalanced brackets")
		}
		if t.kind == tokWord && depth == 0 {
			switch w := string(b[t.s:t.e]); w {
			case "endobj", "stream":
				return t.s, w, nil
			}
		}
		if t.kind == tokWord && t.e-t.s == 1 && b[t.s] == 'R' && t1.kind == tokInt && t2.kind == tokInt {
			if ref != nil {
				ref(t2.s, t.e, t2.v, t2.s == lengthAt)
			}
			t1, t2 = tok{}, tok{}
			continue
		}
		if length != nil && t.kind == tokInt && t.s == lengthAt {
			*length = t.v
		}
		if t.kind == tokName && depth == 1 && string(b[t.s:t.e]) == "/Length" {
			lengthAt = skipWS(b, t.e)
		}
		t2, t1 = t1, t
	}
}

// joinLazy is JoinStamped on the parts of d. done false: a part is not in
// the layout the lazy join reads, found before anything was written to w;
// JoinStamped reads them with pdfcpu then.
func joinLazy(ctx context.Context, d *lazyDoc, outline []Heading, bands []byte, maxPages int, w io.Writer) (pages int, done bool, err error) {
	writing := false
	defer func() {
		if r := recover(); r != nil {
			pages, done, err = 0, writing, &BadInputError{Reason: fmt.Sprintf("cannot join the parts (%v)", r)}
		}
	}()
	version := model.V17
	var pageRoots types.Array
	var pageDicts []types.Dict
	for _, p := range d.parts {
		if v, err := model.PDFVersion(string(p.data[5:min(len(p.data), 8)])); err == nil && v > version {
			version = v
		}
		cat, err := d.DereferenceDict(*types.NewIndirectRef(p.base+p.root, 0))
		if err != nil || cat == nil {
			return 0, false, nil
		}
		for _, k := range []string{"AcroForm", "Names", "Collection", "Version"} {
			if _, ok := cat[k]; ok {
				return 0, false, nil
			}
		}
		ref, ok := cat["Pages"].(types.IndirectRef)
		if !ok {
			return 0, false, nil
		}
		pd, err := d.DereferenceDict(ref)
		if err != nil || pd == nil {
			return 0, false, nil
		}
		n, ok := pd["Count"].(types.Integer)
		if !ok || n < 1 {
			return 0, false, nil
		}
		pages += int(n)
		pageRoots = append(pageRoots, ref)
		pageDicts = append(pageDicts, pd)
	}
	if d.err != nil {
		return 0, false, nil
	}
	if pages > maxPages {
		return 0, true, &BadInputError{Reason: fmt.Sprintf("the document has %d pages; at most %d are allowed", pages, maxPages)}
	}
	first := d.parts[0]
	rootRef := types.NewIndirectRef(first.base+first.root, 0)
	d.x.Root = rootRef
	j, err := newJoiner(d, d.x)
	if err != nil {
		return 0, false, nil
	}
	j.eachAll = func(hint string, keep func([]byte) bool, f func(types.Dict) bool) {
		for i := range d.parts {
			d.eachPart(i, hint, keep, f)
		}
	}
	delete(j.root, "Outlines")
	for i := 1; i < len(d.parts); i++ {
		if err := ctx.Err(); err != nil {
			return 0, true, err
		}
		j.addLazy(i, d)
	}
	if d.err != nil {
		return 0, false, nil
	}
	tree := types.Dict{"Type": types.Name("Pages"), "Kids": pageRoots, "Count": types.Integer(pages)}
	treeRef, err := d.IndRefForNewObject(tree)
	if err != nil {
		return 0, false, nil
	}
	for _, pd := range pageDicts {
		pd["Parent"] = *treeRef
	}
	j.root["Pages"] = *treeRef
	if err := j.finish(outline); err != nil {
		return 0, true, &BadInputError{Reason: "cannot join the parts: " + truncate(err.Error())}
	}
	if bands != nil {
		d.loadPages(*treeRef, 0, map[types.IndirectRef]bool{})
		if d.err != nil {
			return 0, false, nil
		}
		if err := stampBands(ctx, &model.Context{XRefTable: d.x}, bands); err != nil {
			return 0, true, err
		}
	}
	info := 0
	if first.info > 0 {
		info = first.base + first.info
		if di, err := d.DereferenceDict(*types.NewIndirectRef(info, 0)); err != nil || di == nil {
			info = 0
		}
	}
	now := types.StringLiteral(types.DateString(time.Now()))
	if info == 0 {
		ref, err := d.IndRefForNewObject(types.Dict{})
		if err != nil {
			return 0, true, err
		}
		info = ref.ObjectNumber.Value()
	}
	di, _ := d.DereferenceDict(*types.NewIndirectRef(info, 0))
	di["Producer"] = types.StringLiteral("pdfcpu " + model.VersionStr)
	di["CreationDate"], di["ModDate"] = now, now
	if d.err != nil {
		return 0, false, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, true, err
	}
	if bw, ok := w.(*bytes.Buffer); ok {
		// One allocation for the result, not a doubling per growth (which
		// zeroed ~200 MB for 100 MB of tagged slices): the parts, half the
		// bands, and a sixteenth more for the joined trees.
		size := len(bands) / 2
		for _, p := range d.parts {
			size += len(p.data)
		}
		bw.Grow(size + size/16)
	}
	final, count, err := d.reachable(rootRef.ObjectNumber.Value(), info)
	if err != nil {
		return 0, false, nil
	}
	writing = true
	if err := d.write(w, final, count, rootRef.ObjectNumber.Value(), info, version.String()); err != nil {
		return 0, true, fmt.Errorf("pdfedit: join: write: %w", err)
	}
	return pages, true, nil
}

// addLazy appends part i of d to the result: its /Dests (the first
// definition of a name wins) and its structure tree; its pages join the
// page tree in joinLazy.
func (j *joiner) addLazy(i int, d *lazyDoc) {
	p := d.parts[i]
	srcRoot, err := d.DereferenceDict(*types.NewIndirectRef(p.base+p.root, 0))
	if err != nil || srcRoot == nil {
		return
	}
	if sd, err := d.DereferenceDict(srcRoot["Dests"]); err == nil && sd != nil {
		dd := j.dests()
		if dd == nil {
			dd = types.Dict{}
			if ref, err := d.IndRefForNewObject(dd); err == nil {
				j.root["Dests"] = *ref
			}
		}
		for k, v := range sd {
			if _, ok := dd[k]; !ok {
				dd[k] = v
			}
		}
	}
	if !j.tagged {
		return
	}
	strRef, ok := srcRoot["StructTreeRoot"].(types.IndirectRef)
	var str types.Dict
	if ok {
		str, _ = d.DereferenceDict(strRef)
	}
	if str == nil {
		j.tagged = false
		return
	}
	j.patchHeaders = func(rename map[string]string) bool { return d.patchHeaders(i, rename) }
	j.addStruct(i, func(hint string, keep func([]byte) bool, f func(types.Dict) bool) { d.eachPart(i, hint, keep, f) }, strRef, str)
}

// mayName: the bytes of an object may name an ID renamed in this part
// (renameHeaders' filter): they hold one as written, or an ID would not be
// written as itself. With many IDs renamed (slices loaded in renderers of
// their own number their elements from the same start: a 1,145-page table
// renamed 102 header IDs and every one of its 260,000 cells was parsed),
// each literal string of the object is looked up instead.
func (j *joiner) mayName(b []byte) bool {
	if len(j.idRename) > 16 {
		return j.namesRenamed(b)
	}
	for id := range j.idRename {
		if id == "" || strings.ContainsAny(id, "()\\") || strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
			return true
		}
		if bytes.Contains(b, []byte(id)) {
			return true
		}
	}
	return false
}

// namesRenamed: one of b's literal strings is a renamed ID, or b holds a
// string this scan does not decode (escapes, nesting, a hex string), which
// might be one.
func (j *joiner) namesRenamed(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '<':
			if i+1 < len(b) && b[i+1] == '<' {
				i++ // a dictionary
				continue
			}
			return true // a hex string
		case '(':
			end := bytes.IndexAny(b[i+1:], "()\\")
			if end < 0 || b[i+1+end] != ')' {
				return true
			}
			if _, ok := j.idRename[string(b[i+1:i+1+end])]; ok {
				return true
			}
			i += 1 + end
		}
	}
	return false
}
