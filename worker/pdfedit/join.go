package pdfedit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/pkg/limits"
)

// Heading is one outline entry: Level 1..6 (h1..h6), Title, and Dest, the
// name of the named destination (catalog /Dests key, the element's ID) its
// entry points to.
type Heading struct {
	Level int
	Title string
	Dest  string
}

// ErrNoParts is returned by Join when it is given no parts.
var ErrNoParts = errors.New("pdfedit: join: no parts")

// Bounds of Join's walks: the parts are Chromium's, but a part is still
// bytes read from a browser that rendered the client's HTML.
const (
	// maxJoinDepth bounds the recursion of the structure merge (an element
	// cut by a part boundary, then its last kid, and so on) and the depth
	// of the number and name trees flattened.
	maxJoinDepth = 256
	// maxTreeNodes bounds the nodes visited in one number or name tree.
	maxTreeNodes = 1 << 20
	// maxParentKey bounds a part's parent tree keys (Chromium uses one per
	// page and one per annotation), so that offsetting them cannot
	// overflow; larger keys are ignored as malformed.
	maxParentKey = 1 << 24
)

// Join joins the parts of one document printed in pieces by Chromium (a
// long document split into consecutive slices, each printed by its own tab,
// DESIGN §10) into one PDF written to w, and returns its page count. The
// result reads as if printed in one piece:
//
//   - The pages of parts, complete PDFs in document order, in order. More
//     than maxPages pages together is a *BadInputError (maxPages ≤ 0 means
//     limits.MergePages).
//   - The catalog /Dests is the union of every part's (each part only has
//     the destinations of the elements painted on its own pages, while its
//     links may point anywhere); the first definition of a name wins.
//   - When every part is tagged, one structure tree: see joiner.addStruct.
//     When any part is untagged, the result is untagged (no StructTreeRoot,
//     no MarkInfo, no StructParents): not an error.
//   - The parts' own outlines are dropped (each covers only its slice and
//     points at explicit pages); a non-empty outline becomes the /Outlines,
//     nested by Level, each item pointing at its named destination. A
//     heading whose Dest is not among the joined /Dests is left out, its
//     children moving up to its parent. (Chromium writes a destination
//     only for an element that a link of the same print points to: a
//     part must link, hidden links will do, to the headings it paints.)
//   - Info, /Lang, /MarkInfo and /ViewerPreferences are part 1's.
//
// An unusable part is a *BadInputError naming it ("part 2"); pdfcpu panics
// are recovered into an error; cancelling ctx (checked between parts)
// returns ctx's error. A failure while writing may leave partial output in
// w.
func Join(ctx context.Context, parts [][]byte, outline []Heading, maxPages int, w io.Writer) (pages int, err error) {
	return JoinStamped(ctx, parts, outline, nil, maxPages, w)
}

// JoinStamped is Join that also draws bands, a PDF of as many pages as
// the parts together, over the joined pages (StampBands: the document's
// header and footer, printed once for all its pages), in the same read
// and write: rewriting a long tagged PDF a second time would cost more
// than printing it (StampBands' figures). nil bands: Join.
func JoinStamped(ctx context.Context, parts [][]byte, outline []Heading, bands []byte, maxPages int, w io.Writer) (pages int, err error) {
	if len(parts) == 0 {
		return 0, ErrNoParts
	}
	if w == nil {
		return 0, errors.New("pdfedit: join: nil writer")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if maxPages <= 0 {
		maxPages = limits.MergePages
	}
	if d, err := newLazyDoc(parts); err == nil {
		if pages, done, err := joinLazy(ctx, d, outline, bands, maxPages, w); done {
			return pages, err
		}
	}
	inputs := make([]Input, len(parts))
	for i, p := range parts {
		inputs[i] = Input{Name: fmt.Sprintf("part %d", i+1), R: bytes.NewReader(p)}
	}
	pcs, err := readAll(ctx, inputs)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, pc := range pcs {
		total += pc.PageCount
	}
	if total > maxPages {
		return 0, &BadInputError{Reason: fmt.Sprintf("the document has %d pages; at most %d are allowed", total, maxPages)}
	}

	name := inputs[0].Name
	defer func() {
		if r := recover(); r != nil {
			pages, err = 0, &BadInputError{Name: name, Reason: fmt.Sprintf("cannot join this part (%v)", r)}
		}
	}()
	dest := pcs[0]
	pcs[0] = nil
	// The parts' outlines are replaced, never merged (MergeXRefTables would
	// link them otherwise).
	dest.Configuration.CreateBookmarks = false
	j, err := newJoiner(dest, dest)
	if err != nil {
		return 0, &BadInputError{Name: name, Reason: "cannot join this part: " + truncate(err.Error())}
	}
	version := dest.XRefTable.Version()
	for i := 1; i < len(pcs); i++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		name = inputs[i].Name
		if v := pcs[i].XRefTable.Version(); v > version {
			version = v
		}
		if err := j.add(i, pcs[i]); err != nil {
			return 0, &BadInputError{Name: name, Reason: "cannot join this part: " + truncate(err.Error())}
		}
		pcs[i] = nil // let the part's context go
	}
	name = ""
	if err := j.finish(outline); err != nil {
		return 0, &BadInputError{Reason: "cannot join the parts: " + truncate(err.Error())}
	}
	if bands != nil {
		if err := stampBands(ctx, dest, bands); err != nil {
			return 0, err
		}
	}
	if version < model.V17 {
		version = model.V17
	}
	dest.RootVersion = &version
	pages = dest.PageCount
	if err := save(ctx, dest, w); err != nil {
		return 0, err
	}
	return pages, nil
}

// joinStore is where the joiner finds and adds objects: part 1's pdfcpu
// context (the other parts merged into it), or a lazyDoc.
type joinStore interface {
	Dereference(o types.Object) (types.Object, error)
	DereferenceDict(o types.Object) (types.Dict, error)
	DereferenceArray(o types.Object) (types.Array, error)
	IndRefForNewObject(o types.Object) (*types.IndirectRef, error)
}

// eachFunc calls f as eachDict does on the dictionaries of a part (or of
// the whole result); hint and keep may narrow them to the objects whose
// bytes hold hint and pass keep, when the store can tell. f says whether
// it changed the dictionary.
type eachFunc func(hint string, keep func([]byte) bool, f func(types.Dict) bool)

// joiner accumulates the parts into the first one's context.
type joiner struct {
	dest    joinStore
	root    types.Dict // dest's catalog
	eachAll eachFunc   // over the whole result

	// tagged: every part so far has a structure tree.
	tagged bool
	str    types.Dict // the result's StructTreeRoot (part 1's)
	// top is the element whose kids are the document's content: part 1's
	// Document element, or the StructTreeRoot itself when part 1 has none.
	topRef  types.IndirectRef
	top     types.Dict
	topKids types.Array

	nums    types.Array // the flat parent tree: key, value, key, value…
	nextKey int         // parent tree keys used so far

	ids     map[string]idEntry // IDTree: ID → element; first wins
	roleMap types.Dict
	clsMap  types.Dict

	// Per part, reset by add.
	replaced map[types.IndirectRef]types.IndirectRef // element merged away → element it went into
	idRename map[string]string                       // the part's ID → the one its element now has
	// patchHeaders, when set (the lazy join), renames the part's /Headers
	// in the objects' bytes, and says whether that was all of them.
	patchHeaders func(rename map[string]string) bool
}

type idEntry struct {
	key types.Object // the ID as a string object
	ref types.Object // the element
}

func newJoiner(dest joinStore, catalog interface{ Catalog() (types.Dict, error) }) (*joiner, error) {
	root, err := catalog.Catalog()
	if err != nil {
		return nil, err
	}
	j := &joiner{dest: dest, root: root, ids: map[string]idEntry{}, roleMap: types.Dict{}, clsMap: types.Dict{}}
	if pc, ok := dest.(*model.Context); ok {
		j.eachAll = func(_ string, _ func([]byte) bool, f func(types.Dict) bool) {
			eachDict(pc, func(d types.Dict) { f(d) })
		}
	}
	strRef, ok := root["StructTreeRoot"].(types.IndirectRef)
	if !ok {
		return j, nil
	}
	str, err := dest.DereferenceDict(strRef)
	if err != nil || str == nil {
		return j, nil
	}
	j.tagged = true
	j.str = str
	j.topRef, j.top = j.container(strRef, str)
	j.topKids = slices.Clone(kidsOf(j.top["K"]))
	j.replaced = map[types.IndirectRef]types.IndirectRef{}
	j.idRename = map[string]string{}
	j.addParentTree(str, 0)
	j.addIDs(str, 0)
	j.addMaps(str)
	return j, nil
}

// add appends part i (from 0), read into pc, to the result.
func (j *joiner) add(i int, pc *model.Context) error {
	srcRoot, err := pc.Catalog()
	if err != nil {
		return err
	}
	// Held before the merge: pdfcpu renumbers the part's objects in place
	// (this dictionary included) and then frees the part's catalog.
	delete(srcRoot, "Outlines")
	// MergeXRefTables copies the part's /Dests over the result's: the last
	// definition would win. Keep the first.
	kept := maps.Clone(j.dests())
	if err := pdfcpu.MergeXRefTables(fmt.Sprintf("part %d", i+1), pc, j.dest.(*model.Context), false, false); err != nil {
		return err
	}
	if d := j.dests(); d != nil {
		maps.Copy(d, kept)
	}

	if !j.tagged {
		return nil
	}
	strRef, ok := srcRoot["StructTreeRoot"].(types.IndirectRef)
	var str types.Dict
	if ok {
		str, _ = j.dest.DereferenceDict(strRef)
	}
	if str == nil {
		// One untagged part makes the whole document untagged: a tree
		// that covers only some pages would be worse than none.
		j.tagged = false
		return nil
	}
	j.addStruct(i, func(_ string, _ func([]byte) bool, f func(types.Dict) bool) {
		eachDict(pc, func(d types.Dict) { f(d) })
	}, strRef, str)
	return nil
}

// dests is the result's catalog /Dests, nil when there is none.
func (j *joiner) dests() types.Dict {
	o, ok := j.root["Dests"]
	if !ok {
		return nil
	}
	d, err := j.dest.DereferenceDict(o)
	if err != nil {
		return nil
	}
	return d
}

// addStruct merges part i's structure tree (already renumbered into the
// result, pc's table keyed by the new numbers) into the result's:
//
//   - The kids of the part's Document element go to the end of the
//     result's Document element.
//   - An element cut by the part boundary (a paragraph or a table running
//     over the last page of part i-1 into part i) comes out of Chromium as
//     two elements: the last kid of the result so far and the first kid of
//     the part, of the same type (/S). They are merged back into one, and
//     so on down the new boundary pair (Table → TBody → …): see mergeElem.
//     This is a heuristic: two genuinely distinct adjacent siblings of the
//     same type exactly at a part boundary (a paragraph ending at the foot
//     of the last page, the next one starting the next part) are merged
//     too. Rows and cells (TR, TH, TD) and figures are never merged that
//     way: a page break falls between rows, not inside one, far more often
//     than not, and an image is painted whole.
//   - The part's parent tree keys follow the keys used so far: its pages'
//     /StructParents, its annotations' /StructParent are offset alike.
//   - IDs (IDTree, and the /Headers of table cells that name them) stay
//     unique: an ID already taken by another element is renamed.
func (j *joiner) addStruct(i int, each eachFunc, strRef types.IndirectRef, str types.Dict) {
	clear(j.replaced)
	clear(j.idRename)
	offset := j.nextKey
	shiftStructParents(each, offset)

	partRef, part := j.container(strRef, str)
	kids := kidsOf(part["K"])
	if partRef != strRef {
		j.replaced[partRef] = j.topRef
	}
	if len(j.topKids) > 0 && len(kids) > 0 {
		a, aok := j.topKids[len(j.topKids)-1].(types.IndirectRef)
		b, bok := kids[0].(types.IndirectRef)
		if aok && bok && j.mergeable(a, b) {
			j.mergeElem(a, b, 0)
			kids = kids[1:]
		}
	}
	for _, k := range kids {
		if d := j.elem(k); d != nil {
			d["P"] = j.topRef
		}
		j.topKids = append(j.topKids, k)
	}

	j.addParentTree(str, offset)
	j.addIDs(str, i)
	if len(j.idRename) > 0 {
		j.renameHeaders(each)
	}
	j.addMaps(str)
}

// container is the element whose kids are a tree's content: the Document
// element when the root's only kid is one, else the root itself.
func (j *joiner) container(strRef types.IndirectRef, str types.Dict) (types.IndirectRef, types.Dict) {
	if ks := kidsOf(str["K"]); len(ks) == 1 {
		if ref, ok := ks[0].(types.IndirectRef); ok {
			if d := j.elem(ref); d != nil && nameOf(d, "S") == "Document" {
				return ref, d
			}
		}
	}
	return strRef, str
}

// elem is the structure element o refers to, or nil.
func (j *joiner) elem(o types.Object) types.Dict {
	ref, ok := o.(types.IndirectRef)
	if !ok {
		return nil
	}
	d, err := j.dest.DereferenceDict(ref)
	if err != nil || d == nil {
		return nil
	}
	if _, ok := d["S"].(types.Name); !ok {
		return nil
	}
	if t := d.Type(); t != nil && *t != "StructElem" {
		return nil
	}
	return d
}

// noMerge are the element types a part boundary is taken to fall between,
// never inside (see addStruct).
var noMerge = map[string]bool{"TR": true, "TH": true, "TD": true, "Figure": true}

// mergeable: a and b, the two sides of a part boundary, are taken for one
// element cut in two.
func (j *joiner) mergeable(a, b types.IndirectRef) bool {
	if a == b {
		return false
	}
	da, db := j.elem(a), j.elem(b)
	if da == nil || db == nil {
		return false
	}
	s := nameOf(da, "S")
	return s == nameOf(db, "S") && !noMerge[s]
}

// mergeElem merges element b (first of its part) into a (last of the
// result so far): b's kids follow a's, their /P becomes a, b's marked
// content refers to b's page explicitly (a's /Pg may be another), and b's
// parent tree entries are redirected to a. Then the new boundary pair, a's
// former last kid and b's former first, is merged the same way when it
// too looks like one element cut in two.
func (j *joiner) mergeElem(aRef, bRef types.IndirectRef, depth int) {
	if depth > maxJoinDepth || aRef == bRef {
		return
	}
	a, b := j.elem(aRef), j.elem(bRef)
	if a == nil || b == nil {
		return
	}
	bK := kidsOf(b["K"])
	if nameOf(a, "S") == "Table" {
		bK = j.foldHeader(a, bK, depth)
	}
	aK := slices.Clone(kidsOf(a["K"]))
	var aLast, bFirst types.Object
	if len(aK) > 0 {
		aLast = aK[len(aK)-1]
	}
	if len(bK) > 0 {
		bFirst = bK[0]
	}
	bPg, _ := b["Pg"].(types.IndirectRef)
	aPg, aHasPg := a["Pg"].(types.IndirectRef)
	explicit := bPg.ObjectNumber != 0 && !(aHasPg && aPg == bPg)
	for _, k := range bK {
		switch v := k.(type) {
		case types.Integer:
			// A bare MCID is on the element's /Pg.
			if explicit {
				k = types.Dict{"Type": types.Name("MCR"), "Pg": bPg, "MCID": v}
			}
		case types.Dict:
			j.adopt(v, aRef, bPg, explicit)
		case types.IndirectRef:
			if d, err := j.dest.DereferenceDict(v); err == nil && d != nil {
				j.adopt(d, aRef, bPg, explicit)
			}
		}
		aK = append(aK, k)
	}
	a["K"] = aK
	j.replaced[bRef] = aRef
	if bID, ok := stringOf(b["ID"]); ok {
		if aID, ok := stringOf(a["ID"]); !ok {
			a["ID"] = b["ID"]
		} else if aID != bID {
			j.idRename[bID] = aID
		}
	}
	ar, aok := aLast.(types.IndirectRef)
	br, bok := bFirst.(types.IndirectRef)
	if aok && bok && j.mergeable(ar, br) {
		j.mergeElem(ar, br, depth+1)
	}
}

// adopt makes d, a kid moved from element b to element a, a's: a structure
// element gets /P a; a marked-content or object reference without /Pg
// gets b's page when a's is another.
func (j *joiner) adopt(d types.Dict, a, bPg types.IndirectRef, explicit bool) {
	if _, ok := d["S"].(types.Name); ok {
		d["P"] = a
		return
	}
	if t := d.Type(); t != nil && (*t == "MCR" || *t == "OBJR") {
		if _, ok := d["Pg"]; !ok && explicit {
			d["Pg"] = bPg
		}
	}
}

// foldHeader handles the table header that Chromium repeats at the top of
// each page a table runs onto. Printed in one piece, the repetition is
// more marked content of the same TH elements; a part that starts inside
// a table has no earlier header to refer to and tags the repetition as a
// header row of its own, the first row of its table. When b's table (kids
// bK) starts with header rows shaped like a's, each of b's header cells is
// merged into a's and b's header rows are dropped; the rest of bK is
// returned.
func (j *joiner) foldHeader(a types.Dict, bK types.Array, depth int) types.Array {
	ha, hb := j.headerRows(kidsOf(a["K"])), j.headerRows(bK)
	if ha == nil || hb == nil || len(ha.rows) != len(hb.rows) {
		return bK
	}
	cells := make([][2]types.Array, len(ha.rows))
	for r := range ha.rows {
		ca, cb := kidsOf(j.elem(ha.rows[r])["K"]), kidsOf(j.elem(hb.rows[r])["K"])
		if len(ca) != len(cb) {
			return bK
		}
		cells[r] = [2]types.Array{ca, cb}
	}
	for r, c := range cells {
		for k := range c[0] {
			j.mergeElem(c[0][k].(types.IndirectRef), c[1][k].(types.IndirectRef), depth+1)
		}
		j.replaced[hb.rows[r]] = ha.rows[r]
	}
	if hb.first != hb.rows[0] {
		j.replaced[hb.first] = ha.first
	}
	return bK[1:]
}

// header is a table's leading header: its first kid (a TR, or a THead)
// and the rows in it.
type header struct {
	first types.IndirectRef
	rows  []types.IndirectRef
}

// headerRows is the header a table with kids ks starts with: a TR of TH
// cells only, or a THead of such rows; nil when it starts otherwise.
func (j *joiner) headerRows(ks types.Array) *header {
	if len(ks) == 0 {
		return nil
	}
	first, ok := ks[0].(types.IndirectRef)
	if !ok {
		return nil
	}
	d := j.elem(first)
	if d == nil {
		return nil
	}
	h := &header{first: first}
	switch nameOf(d, "S") {
	case "TR":
		h.rows = []types.IndirectRef{first}
	case "THead":
		for _, k := range kidsOf(d["K"]) {
			r, ok := k.(types.IndirectRef)
			if !ok {
				return nil
			}
			h.rows = append(h.rows, r)
		}
	default:
		return nil
	}
	for _, r := range h.rows {
		row := j.elem(r)
		if row == nil || nameOf(row, "S") != "TR" {
			return nil
		}
		cells := kidsOf(row["K"])
		if len(cells) == 0 {
			return nil
		}
		for _, c := range cells {
			if cd := j.elem(c); cd == nil || nameOf(cd, "S") != "TH" {
				return nil
			}
		}
	}
	if len(h.rows) == 0 {
		return nil
	}
	return h
}

// shiftStructParents adds offset to every /StructParents (pages, form
// XObjects) and /StructParent (annotations) of the part: the objects of
// its table and the dictionaries directly inside them (an /Annots array
// of direct annotations).
func shiftStructParents(each eachFunc, offset int) {
	if offset == 0 {
		return
	}
	shift := func(d types.Dict) bool {
		changed := false
		for _, k := range []string{"StructParents", "StructParent"} {
			if v, ok := d[k].(types.Integer); ok {
				d[k] = v + types.Integer(offset)
				changed = true
			}
		}
		return changed
	}
	each("/StructParent", nil, shift)
}

// eachDict calls f on every dictionary of pc's table, and on the
// dictionaries directly inside its dictionaries and arrays (eachDictIn).
func eachDict(pc *model.Context, f func(types.Dict)) {
	for _, e := range pc.Table {
		if e == nil || e.Free || e.Object == nil {
			continue
		}
		eachDictIn(e.Object, f)
	}
}

// addParentTree appends the entries of str's parent tree, keys offset,
// values pointing at elements merged away redirected, to the flat one.
func (j *joiner) addParentTree(str types.Dict, offset int) {
	next := 0
	if n, ok := str["ParentTreeNextKey"].(types.Integer); ok && n > 0 && n <= maxParentKey {
		next = int(n)
	}
	j.walkTree(str["ParentTree"], "Nums", func(k, v types.Object) {
		key, ok := k.(types.Integer)
		if !ok || key < 0 || key >= maxParentKey {
			return
		}
		next = max(next, int(key)+1)
		j.nums = append(j.nums, types.Integer(offset)+key, j.redirect(v))
	})
	j.nextKey = offset + next
}

// redirect returns v, a parent tree value (an element, or an array of
// them indexed by MCID), with the elements merged away replaced.
func (j *joiner) redirect(v types.Object) types.Object {
	if len(j.replaced) == 0 {
		return v
	}
	if ref, ok := v.(types.IndirectRef); ok {
		if to, ok := j.replaced[ref]; ok {
			return to
		}
	}
	o, err := j.dest.Dereference(v)
	if err != nil {
		return v
	}
	if arr, ok := o.(types.Array); ok {
		for i, x := range arr {
			if ref, ok := x.(types.IndirectRef); ok {
				if to, ok := j.replaced[ref]; ok {
					arr[i] = to
				}
			}
		}
	}
	return v
}

// addIDs adds the IDTree of part i to the result's. An ID already taken
// by another element (Chromium numbers the nodes of each tab's document
// from the same start) is renamed; an element merged into an earlier one
// keeps that one's ID.
func (j *joiner) addIDs(str types.Dict, i int) {
	type entry struct {
		key  string
		kobj types.Object
		ref  types.Object
	}
	var es []entry
	taken := map[string]bool{}
	j.walkTree(str["IDTree"], "Names", func(k, v types.Object) {
		key, ok := stringOf(k)
		if !ok {
			return
		}
		es = append(es, entry{key, k, v})
		taken[key] = true
	})
	for _, e := range es {
		ref, isRef := e.ref.(types.IndirectRef)
		if isRef {
			if _, merged := j.replaced[ref]; merged {
				continue
			}
		}
		if _, dup := j.ids[e.key]; !dup {
			j.ids[e.key] = idEntry{e.kobj, e.ref}
			continue
		}
		if i == 0 || !isRef {
			continue // first wins
		}
		d := j.elem(ref)
		if d == nil {
			continue
		}
		if id, ok := stringOf(d["ID"]); !ok || id != e.key {
			continue // the tree and the element disagree: leave both
		}
		name := ""
		for n := 1; ; n++ {
			name = fmt.Sprintf("%s-p%d", e.key, i+1)
			if n > 1 {
				name = fmt.Sprintf("%s-p%d-%d", e.key, i+1, n)
			}
			if _, dup := j.ids[name]; !dup && !taken[name] {
				break
			}
		}
		obj := newString(name)
		d["ID"] = obj
		j.idRename[e.key] = name
		j.ids[name] = idEntry{obj, ref}
	}
}

// renameHeaders rewrites the /Headers attributes (the IDs of a table
// cell's header cells) of the part's elements after addIDs and mergeElem
// renamed IDs.
func (j *joiner) renameHeaders(each eachFunc) {
	if j.patchHeaders != nil && j.patchHeaders(j.idRename) {
		return
	}
	changed := false
	fix := func(o types.Object) {
		d, err := j.dest.DereferenceDict(o)
		if err != nil || d == nil {
			return
		}
		hs, ok := d["Headers"].(types.Array)
		if !ok {
			return
		}
		for i, h := range hs {
			if s, ok := stringOf(h); ok {
				if to, ok := j.idRename[s]; ok {
					hs[i] = newString(to)
					changed = true
				}
			}
		}
	}
	each("/Headers", j.mayName, func(d types.Dict) bool {
		if _, ok := d["S"].(types.Name); !ok {
			return false
		}
		attrs, err := j.dest.Dereference(d["A"])
		if err != nil {
			return false
		}
		changed = false
		switch v := attrs.(type) {
		case types.Dict:
			fix(v)
		case types.Array:
			for _, a := range v {
				fix(a)
			}
		}
		return changed
	})
}

// addMaps merges str's /RoleMap and /ClassMap into the result's; the first
// definition of a name wins.
func (j *joiner) addMaps(str types.Dict) {
	for key, to := range map[string]types.Dict{"RoleMap": j.roleMap, "ClassMap": j.clsMap} {
		d, err := j.dest.DereferenceDict(str[key])
		if err != nil || d == nil {
			continue
		}
		for k, v := range d {
			if _, ok := to[k]; !ok {
				to[k] = v
			}
		}
	}
}

// walkTree calls f on each key and value of the number tree (kind "Nums")
// or name tree ("Names") at root, leaves in order, /Kids followed, at most
// maxJoinDepth deep and maxTreeNodes nodes; malformed nodes are skipped.
func (j *joiner) walkTree(root types.Object, kind string, f func(k, v types.Object)) {
	if root == nil {
		return
	}
	seen := map[int]bool{}
	nodes := 0
	var walk func(o types.Object, depth int)
	walk = func(o types.Object, depth int) {
		if depth > maxJoinDepth || nodes >= maxTreeNodes {
			return
		}
		if ref, ok := o.(types.IndirectRef); ok {
			if seen[ref.ObjectNumber.Value()] {
				return
			}
			seen[ref.ObjectNumber.Value()] = true
		}
		nodes++
		d, err := j.dest.DereferenceDict(o)
		if err != nil || d == nil {
			return
		}
		if arr, err := j.dest.DereferenceArray(d[kind]); err == nil {
			for i := 0; i+1 < len(arr); i += 2 {
				f(arr[i], arr[i+1])
			}
		}
		if kids, err := j.dest.DereferenceArray(d["Kids"]); err == nil {
			for _, k := range kids {
				walk(k, depth+1)
			}
		}
	}
	walk(root, 0)
}

// finish writes the result's structure tree (or removes it), its /Dests
// and its outline into the catalog.
func (j *joiner) finish(outline []Heading) error {
	if j.tagged {
		if err := j.writeStruct(); err != nil {
			return err
		}
	} else {
		j.untag()
	}
	delete(j.root, "Outlines")
	return j.writeOutline(outline)
}

func (j *joiner) writeStruct() error {
	j.top["K"] = j.topKids
	pt, err := j.dest.IndRefForNewObject(types.Dict{"Nums": j.nums})
	if err != nil {
		return err
	}
	j.str["ParentTree"] = *pt
	j.str["ParentTreeNextKey"] = types.Integer(j.nextKey)
	delete(j.str, "IDTree")
	if len(j.ids) > 0 {
		keys := slices.Sorted(maps.Keys(j.ids))
		names := make(types.Array, 0, 2*len(keys))
		for _, k := range keys {
			names = append(names, j.ids[k].key, j.ids[k].ref)
		}
		ref, err := j.dest.IndRefForNewObject(types.Dict{"Names": names})
		if err != nil {
			return err
		}
		j.str["IDTree"] = *ref
	}
	for key, d := range map[string]types.Dict{"RoleMap": j.roleMap, "ClassMap": j.clsMap} {
		delete(j.str, key)
		if len(d) > 0 {
			j.str[key] = d
		}
	}
	return nil
}

// untag leaves no trace of a structure tree: a catalog without one that
// still said Marked true would claim a tagged PDF, and StructParents keys
// would point into nothing.
func (j *joiner) untag() {
	delete(j.root, "StructTreeRoot")
	delete(j.root, "MarkInfo")
	j.eachAll("/StructParent", nil, func(d types.Dict) bool {
		delete(d, "StructParents")
		delete(d, "StructParent")
		return true
	})
}

// outlineItem is one node of the outline being built.
type outlineItem struct {
	level int
	h     Heading
	kids  []*outlineItem
}

// writeOutline builds /Outlines from the headings, nested by level: an
// item goes under the nearest preceding item of a lower level (h1 → h3
// nests directly). A heading whose destination is not in /Dests is left
// out; the items that would have been its children go to its parent.
// Every item is open.
func (j *joiner) writeOutline(outline []Heading) error {
	dests := j.dests()
	root := &outlineItem{}
	stack := []*outlineItem{root}
	n := 0
	for _, h := range outline {
		if _, ok := dests[h.Dest]; !ok || h.Dest == "" {
			continue
		}
		lvl := min(max(h.Level, 1), 6)
		for len(stack) > 1 && stack[len(stack)-1].level >= lvl {
			stack = stack[:len(stack)-1]
		}
		it := &outlineItem{level: lvl, h: h}
		parent := stack[len(stack)-1]
		parent.kids = append(parent.kids, it)
		stack = append(stack, it)
		n++
	}
	if n == 0 {
		return nil
	}
	rootDict := types.Dict{"Type": types.Name("Outlines")}
	rootRef, err := j.dest.IndRefForNewObject(rootDict)
	if err != nil {
		return err
	}
	count, err := j.writeItems(rootRef, rootDict, root.kids)
	if err != nil {
		return err
	}
	rootDict["Count"] = types.Integer(count)
	j.root["Outlines"] = *rootRef
	return nil
}

// writeItems writes items as the children of parent and returns how many
// items are under it, at every level (all open).
func (j *joiner) writeItems(parentRef *types.IndirectRef, parent types.Dict, items []*outlineItem) (int, error) {
	refs := make([]*types.IndirectRef, len(items))
	dicts := make([]types.Dict, len(items))
	for i, it := range items {
		dicts[i] = types.Dict{
			"Title":  textString(it.h.Title),
			"Parent": *parentRef,
			"Dest":   types.Name(it.h.Dest),
		}
		ref, err := j.dest.IndRefForNewObject(dicts[i])
		if err != nil {
			return 0, err
		}
		refs[i] = ref
	}
	total := len(items)
	for i, it := range items {
		if i > 0 {
			dicts[i]["Prev"] = *refs[i-1]
		}
		if i+1 < len(items) {
			dicts[i]["Next"] = *refs[i+1]
		}
		if len(it.kids) > 0 {
			c, err := j.writeItems(refs[i], dicts[i], it.kids)
			if err != nil {
				return 0, err
			}
			dicts[i]["Count"] = types.Integer(c)
			total += c
		}
	}
	parent["First"] = *refs[0]
	parent["Last"] = *refs[len(refs)-1]
	return total, nil
}

// textString is s as a PDF text string: a literal string when it is plain
// printable ASCII, else UTF-16BE with a byte order mark.
func textString(s string) types.Object {
	s = strings.ToValidUTF8(s, "\uFFFD")
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			ascii = false
			break
		}
	}
	if ascii {
		return newString(s)
	}
	return types.NewHexLiteral([]byte(types.EncodeUTF16String(s)))
}

// newString is a string object holding the bytes of s.
func newString(s string) types.Object {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		return types.NewHexLiteral([]byte(s))
	}
	e, err := types.Escape(s)
	if err != nil {
		return types.NewHexLiteral([]byte(s))
	}
	return types.StringLiteral(*e)
}

// stringOf is the bytes of a string object.
func stringOf(o types.Object) (string, bool) {
	switch v := o.(type) {
	case types.StringLiteral:
		b, err := types.Unescape(v.Value())
		return string(b), err == nil
	case types.HexLiteral:
		b, err := v.Bytes()
		return string(b), err == nil
	}
	return "", false
}

// kidsOf is a /K value as a list: nothing, one kid, or the array.
func kidsOf(o types.Object) types.Array {
	switch v := o.(type) {
	case nil:
		return nil
	case types.Array:
		return v
	default:
		return types.Array{v}
	}
}
