package pdfedit

// The PDF tools of DESIGN §11 (POST /pdf/split, /pdf/pages, /pdf/flatten,
// /pdf/optimize, /pdf/metadata): documents people already have, so every
// input is hostile. Each tool reads its input through readTool, which
// bounds what the bytes can make us decode (checkInflation) and how many
// pages they may have (MaxToolPages) before pdfcpu builds its model.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/validate"

	"github.com/docrender/docrender/pkg/pdfopts"
)

const (
	// MaxToolPages bounds the pages of a tool's input and of its output
	// (a selection may repeat pages): pdfcpu holds every page dictionary
	// of a document in memory, and the merge bound is the same.
	MaxToolPages = 10_000
	// maxSplitBytes bounds the parts of one split together: each part may
	// carry a copy of every font and image its pages use, so N parts of a
	// document can be N times its size, all held until zipped.
	maxSplitBytes = 512 << 20
)

// toolConf is newConf for a tool: pdfcpu's own bound on one decoded
// stream brought down to the tools' bound on all of them together.
func toolConf(cmd model.CommandMode) *model.Configuration {
	c := newConf(cmd)
	c.Limits.MaxDecodeBytes = minDecodeBudget
	return c
}

// Check reads a client's PDF as the tools read theirs (its inflation
// bounded, pdfcpu's model, the tools' page bound) and says how many pages
// it has, leaving it as it is: a batch's PDF sent to go through the steps
// alone keeps everything (structure tree, outline, forms, XMP) that a
// rewrite of its pages would drop. A hostile or unusable input is a
// *BadInputError.
func Check(ctx context.Context, pdf []byte) (pages int, err error) {
	_, pc, err := readTool(ctx, bytes.NewReader(pdf), model.VALIDATE)
	if err != nil {
		return 0, err
	}
	return pc.PageCount, nil
}

// readTool reads a tool's input: its bytes (needed whole for the
// inflation check and by pdfcpu anyway), then pdfcpu's model under cmd.
// A hostile or unusable input is a *BadInputError.
func readTool(ctx context.Context, in io.ReadSeeker, cmd model.CommandMode) ([]byte, *model.Context, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := sniffPDF("", in); err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return nil, nil, fmt.Errorf("pdfedit: read input: %w", err)
	}
	pc, err := parseTool(ctx, data, cmd)
	return data, pc, err
}

// parseTool checks data's inflation and page count and returns pdfcpu's
// model of it.
func parseTool(ctx context.Context, data []byte, cmd model.CommandMode) (*model.Context, error) {
	if err := checkInflation(ctx, data); err != nil {
		return nil, err
	}
	pc, err := readPDF(ctx, "", bytes.NewReader(data), toolConf(cmd))
	if err != nil {
		return nil, err
	}
	if pc.PageCount > MaxToolPages {
		return nil, &BadInputError{Reason: fmt.Sprintf("the PDF has %d pages; the PDF tools take at most %d", pc.PageCount, MaxToolPages)}
	}
	return pc, nil
}

// readUntagged is parseTool, the inflation of data checked by the caller,
// for a tool whose output does not carry the input's structure tags
// (Split): the structure tree is taken out of the catalog before pdfcpu
// validates the document, so it is not walked. In a Chromium-made tagged
// PDF its elements are most objects (2,901 of 3,130 in 50 pages) and
// validating them a third of Split's time; pdfcpu still parses them (it
// reads every object), and a broken tree no longer refuses a document
// that splits well. Otherwise as readPDF.
func readUntagged(ctx context.Context, data []byte, cmd model.CommandMode) (pc *model.Context, err error) {
	defer func() {
		if r := recover(); r != nil {
			pc = nil
			err = &BadInputError{Reason: fmt.Sprintf("corrupt or unreadable PDF (%v)", r)}
		}
	}()
	pc, err = pdfcpu.ReadWithContext(ctx, bytes.NewReader(data), toolConf(cmd))
	if err == nil {
		if pc == nil || pc.XRefTable == nil {
			return nil, &BadInputError{Reason: "corrupt or unreadable PDF"}
		}
		if root, rerr := pc.Catalog(); rerr == nil {
			root.Delete("StructTreeRoot")
		}
		err = validate.XRefTable(pc)
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, &BadInputError{Reason: reasonFor(err), cause: err}
	}
	if pc.PageCount < 1 {
		return nil, &BadInputError{Reason: "the PDF has no pages"}
	}
	repairPageTree(pc)
	if pc.PageCount > MaxToolPages {
		return nil, &BadInputError{Reason: fmt.Sprintf("the PDF has %d pages; the PDF tools take at most %d", pc.PageCount, MaxToolPages)}
	}
	return pc, nil
}

// Split cuts in into several PDFs, returned in order: with ranges
// ("1-3,4-9"), one PDF per comma-separated range, in the order given
// (ranges may overlap); with every > 0, one PDF per every pages, the last
// one holding what is left. Exactly one of ranges and every must be given.
//
// Each part keeps its pages' content, resources, annotations and form
// fields, named destinations to its own pages, and the document's Info
// (title, author, ...); outlines, structure tags and XMP are not carried
// over (pdfcpu's page extraction builds a new catalog). A PDF in the layout
// Chromium writes is split without pdfcpu reading all of it, its parts
// copied as bytes (split_lazy.go); anything that path is unsure of goes to
// pdfcpu.
//
// An option the input cannot satisfy (a page 0, a reversed range, a page
// past the last, more than maxParts parts, parts over 512 MiB together) is
// an *OptionError naming "ranges" or "every"; an unusable PDF is a
// *BadInputError; cancelling ctx returns ctx's error.
func Split(ctx context.Context, in io.ReadSeeker, ranges string, every int, maxParts int) ([][]byte, error) {
	if maxParts < 1 {
		return nil, errors.New("pdfedit: split: maxParts must be at least 1")
	}
	var spans []pdfopts.PageRange
	switch hasRanges := strings.TrimSpace(ranges) != ""; {
	case hasRanges && every != 0:
		return nil, &OptionError{Field: "ranges", Problem: "give either ranges or every, not both"}
	case !hasRanges && every == 0:
		return nil, &OptionError{Field: "ranges", Problem: "give ranges (like 1-3,4-9) or every (pages per file)"}
	case every < 0:
		return nil, &OptionError{Field: "every", Problem: fmt.Sprintf("%d is not a number of pages", every)}
	case hasRanges:
		var err error
		if spans, err = parseRanges("ranges", ranges, false); err != nil {
			return nil, err
		}
		if len(spans) > maxParts {
			return nil, &OptionError{Field: "ranges", Problem: fmt.Sprintf("%d ranges make %d files; a split makes at most %d", len(spans), len(spans), maxParts)}
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := sniffPDF("", in); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return nil, fmt.Errorf("pdfedit: read input: %w", err)
	}
	if err := checkInflation(ctx, data); err != nil {
		return nil, err
	}
	// Chromium's layout is copied as bytes (split_lazy.go); anything else,
	// or anything that path is unsure of, is read by pdfcpu.
	if parts, ok, err := splitLazy(ctx, data, spans, every, maxParts); ok {
		return parts, err
	}
	pc, err := readUntagged(ctx, data, model.SPLIT)
	if err != nil {
		return nil, err
	}
	spans, field, err := splitSpans(spans, every, pc.PageCount, maxParts)
	if err != nil {
		return nil, err
	}

	// pdfcpu's page extraction edits the source's named destinations and
	// radio button fields while it copies them: a document with either is
	// read afresh for every part after the first.
	reread := pc.Form != nil || pc.Names["Dests"] != nil
	parts := make([][]byte, 0, len(spans))
	total := 0
	for i, s := range spans {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if i > 0 && reread {
			if pc, err = readUntagged(ctx, data, model.SPLIT); err != nil {
				return nil, err
			}
		}
		pages := make([]int, 0, s.Last-s.First+1)
		for p := s.First; p <= s.Last; p++ {
			pages = append(pages, p)
		}
		var out bytes.Buffer
		if err := extractTo(ctx, pc, pages, &out); err != nil {
			return nil, err
		}
		if total += out.Len(); total > maxSplitBytes {
			return nil, &OptionError{Field: field, Problem: fmt.Sprintf("the files would be over %d MiB together; split into fewer files", maxSplitBytes>>20)}
		}
		parts = append(parts, out.Bytes())
	}
	return parts, nil
}

// splitSpans is the parts of a split of a document of n pages: ranges
// (spans) as given, or every pages each; an *OptionError naming the field
// ("ranges" or "every") when the document cannot be split so.
func splitSpans(ranges []pdfopts.PageRange, every, n, maxParts int) (spans []pdfopts.PageRange, field string, err error) {
	spans, field = slices.Clone(ranges), "ranges"
	if every > 0 {
		field = "every"
		if parts := (n + every - 1) / every; parts > maxParts {
			return nil, field, &OptionError{Field: "every", Problem: fmt.Sprintf("%d pages every %d make %d files; a split makes at most %d", n, every, parts, maxParts)}
		}
		for first := 1; first <= n; first += every {
			spans = append(spans, pdfopts.PageRange{First: first, Last: min(first+every-1, n)})
		}
	}
	if err := pastLast(field, spans, n); err != nil {
		return nil, field, err
	}
	return spans, field, nil
}

// extractTo writes a new document of pc's pages (in the order given, each
// once) to w, with pc's Info.
func extractTo(ctx context.Context, pc *model.Context, pages []int, w io.Writer) error {
	var dest *model.Context
	err := safeEdit(pc, func(pc *model.Context) error {
		var err error
		if dest, err = pdfcpu.ExtractPages(pc, pages, false); err != nil {
			return &BadInputError{Reason: "cannot copy its pages: " + truncate(err.Error())}
		}
		return copyInfo(pc, dest)
	})
	if err != nil {
		return err
	}
	return save(ctx, dest, w)
}

// copyInfo gives dest the text entries of src's Info dictionary.
func copyInfo(src, dest *model.Context) error {
	entries := map[string]string{}
	for _, key := range []string{"Title", "Author", "Subject", "Keywords", "Creator"} {
		if v := infoString(src, key); v != "" {
			entries[key] = v
		}
	}
	if len(entries) == 0 {
		return nil
	}
	return setInfo(dest, entries)
}

// parseRanges reads field's page ranges strictly, for options that name
// pages of the input: a page 0 or a reversed range is an *OptionError
// (ParsePages forgives both, as watermarks want). With allowAll, "all"
// reads as the range 1 to the largest page, for pastLast to cap.
func parseRanges(field, spec string, allowAll bool) ([]pdfopts.PageRange, error) {
	rs, all, err := pdfopts.ParsePageRanges(spec)
	if err != nil {
		return nil, &OptionError{Field: field, Problem: strings.TrimPrefix(err.Error(), "pages ")}
	}
	if all {
		if !allowAll {
			return nil, &OptionError{Field: field, Problem: "give page ranges like 1-3,4-9"}
		}
		return []pdfopts.PageRange{{First: 1, Last: math.MaxInt}}, nil
	}
	for _, r := range rs {
		switch {
		case r.First < 1 || r.Last < 1:
			return nil, &OptionError{Field: field, Problem: "pages are numbered from 1"}
		case r.First > r.Last:
			return nil, &OptionError{Field: field, Problem: fmt.Sprintf("%d-%d is reversed (write %d-%d)", r.First, r.Last, r.Last, r.First)}
		}
	}
	return rs, nil
}

// pastLast refuses a range that names a page past the document's last,
// so a typo is not a silently shorter result; "all" (Last MaxInt) is
// capped instead.
func pastLast(field string, rs []pdfopts.PageRange, pages int) error {
	for i, r := range rs {
		if r.Last == math.MaxInt && r.First == 1 {
			rs[i].Last = pages
			continue
		}
		if r.Last > pages {
			return &OptionError{Field: field, Problem: fmt.Sprintf("page %d is past the last page (the PDF has %d)", r.Last, pages)}
		}
	}
	return nil
}

// Pages writes to w the pages of in that sel selects, minus those del
// deletes, each turned by rotate, and returns the number of pages written.
//
// Every page number, in sel, rotate's keys and del, names a page of the
// input as the caller sees it, so the three do not depend on one another
// and need no order: sel ("3,1-2"; empty means all pages in order) lists
// pages in the order wanted, repeats allowed (up to MaxToolPages pages in
// all); del ("2,5-6") drops pages wherever sel put them; rotate
// ({"2-3": 90}) turns pages clockwise by a multiple of 90 degrees (may be
// negative), added to the rotation each page has, every copy of a
// repeated page alike. A repeated page is a copy of the page object
// sharing its content and resources, with copies of its annotations.
//
// What Split keeps, Pages keeps. A bad option (a page past the last, a
// rotation not a multiple of 90, nothing left) is an *OptionError naming
// "select", "rotate" or "delete"; an unusable PDF a *BadInputError;
// cancelling ctx returns ctx's error.
func Pages(ctx context.Context, in io.ReadSeeker, sel string, rotate map[string]int, del string, w io.Writer) (pages int, err error) {
	if w == nil {
		return 0, errors.New("pdfedit: pages: nil writer")
	}
	var selR, delR []pdfopts.PageRange
	if strings.TrimSpace(sel) != "" {
		if selR, err = parseRanges("select", sel, true); err != nil {
			return 0, err
		}
	}
	if strings.TrimSpace(del) != "" {
		if delR, err = parseRanges("delete", del, true); err != nil {
			return 0, err
		}
	}
	turns := make([]struct {
		r   pdfopts.PageRange
		deg int
	}, 0, len(rotate))
	for spec, deg := range rotate {
		if deg%90 != 0 {
			return 0, &OptionError{Field: "rotate", Problem: fmt.Sprintf("%d degrees for %q is not a multiple of 90", deg, spec)}
		}
		rs, err := parseRanges("rotate", spec, true)
		if err != nil {
			return 0, err
		}
		for _, r := range rs {
			turns = append(turns, struct {
				r   pdfopts.PageRange
				deg int
			}{r, deg})
		}
	}

	_, pc, err := readTool(ctx, in, model.COLLECT)
	if err != nil {
		return 0, err
	}
	n := pc.PageCount
	if selR == nil {
		selR = []pdfopts.PageRange{{First: 1, Last: n}}
	}
	for _, c := range []struct {
		field string
		rs    []pdfopts.PageRange
	}{{"select", selR}, {"delete", delR}} {
		if err := pastLast(c.field, c.rs, n); err != nil {
			return 0, err
		}
	}
	for i := range turns {
		if err := pastLast("rotate", []pdfopts.PageRange{turns[i].r}, n); err != nil {
			return 0, err
		}
		if turns[i].r.Last == math.MaxInt {
			turns[i].r.Last = n
		}
	}

	deleted := make([]bool, n+1)
	for _, r := range delR {
		for p := r.First; p <= r.Last; p++ {
			deleted[p] = true
		}
	}
	var order []int
	for _, r := range selR {
		if len(order)+(r.Last-r.First+1) > MaxToolPages {
			return 0, &OptionError{Field: "select", Problem: fmt.Sprintf("the selection has over %d pages", MaxToolPages)}
		}
		for p := r.First; p <= r.Last; p++ {
			if !deleted[p] {
				order = append(order, p)
			}
		}
	}
	if len(order) == 0 {
		return 0, &OptionError{Field: "delete", Problem: "no page would be left"}
	}
	delta := make([]int, n+1)
	for _, t := range turns {
		for p := t.r.First; p <= t.r.Last; p++ {
			delta[p] += t.deg
		}
	}

	var dest *model.Context
	err = safeEdit(pc, func(pc *model.Context) error {
		var err error
		if dest, err = arrange(pc, order, delta); err != nil {
			return err
		}
		return copyInfo(pc, dest)
	})
	if err != nil {
		return 0, err
	}
	if err := save(ctx, dest, w); err != nil {
		return 0, err
	}
	return len(order), nil
}

// arrange builds the document of pc's pages in order, page p turned by
// delta[p] degrees. pdfcpu's extraction copies each page once; a page
// listed again becomes a copy of that page's object, since one page object
// may sit in the page tree only once.
func arrange(pc *model.Context, order, delta []int) (*model.Context, error) {
	var unique []int
	seen := map[int]bool{}
	for _, p := range order {
		if !seen[p] {
			seen[p] = true
			unique = append(unique, p)
		}
	}
	dest, err := pdfcpu.ExtractPages(pc, unique, false)
	if err != nil {
		return nil, &BadInputError{Reason: "cannot copy its pages: " + truncate(err.Error())}
	}
	rootRef, err := dest.Pages()
	if err != nil || rootRef == nil {
		return nil, &BadInputError{Reason: "cannot copy its pages: no page tree"}
	}
	root, err := dest.DereferenceDict(*rootRef)
	if err != nil || root == nil {
		return nil, &BadInputError{Reason: "cannot copy its pages: no page tree"}
	}
	kids := root.ArrayEntry("Kids")
	if len(kids) != len(unique) {
		return nil, &BadInputError{Reason: "cannot copy its pages: the page tree did not come out flat"}
	}
	first := map[int]types.IndirectRef{}
	for i, p := range unique {
		ref, ok := kids[i].(types.IndirectRef)
		if !ok {
			return nil, &BadInputError{Reason: "cannot copy its pages: a page is not an object"}
		}
		first[p] = ref
	}
	placed := map[int]bool{}
	newKids := make(types.Array, 0, len(order))
	for _, p := range order {
		ref := first[p]
		if placed[p] {
			if ref, err = copyPage(dest, ref); err != nil {
				return nil, err
			}
		}
		placed[p] = true
		newKids = append(newKids, ref)
	}
	// Turned once all copies are made, so a copy does not start turned.
	for i, p := range order {
		if err := turnPage(dest, newKids[i].(types.IndirectRef), delta[p]); err != nil {
			return nil, err
		}
	}
	root["Kids"] = newKids
	root["Count"] = types.Integer(len(newKids))
	dest.PageCount = len(newKids)
	return dest, nil
}

// copyPage adds a copy of the page at ref to pc: its own dictionary (the
// content and resources shared) and its own annotations, each pointing
// back at the copy.
func copyPage(pc *model.Context, ref types.IndirectRef) (types.IndirectRef, error) {
	d, err := pc.DereferenceDict(ref)
	if err != nil || d == nil {
		return ref, &BadInputError{Reason: "cannot copy a page"}
	}
	c := d.Clone().(types.Dict)
	nref, err := pc.IndRefForNewObject(c)
	if err != nil {
		return ref, err
	}
	annots, err := pc.DereferenceArray(c["Annots"])
	if err != nil || annots == nil {
		delete(c, "Annots")
		return *nref, nil
	}
	copies := make(types.Array, 0, len(annots))
	for _, a := range annots {
		ad, err := pc.DereferenceDict(a)
		if err != nil || ad == nil {
			continue
		}
		ac := ad.Clone().(types.Dict)
		ac["P"] = *nref
		aref, err := pc.IndRefForNewObject(ac)
		if err != nil {
			return ref, err
		}
		copies = append(copies, *aref)
	}
	c["Annots"] = copies
	return *nref, nil
}

// turnPage adds deg degrees to the rotation of the page at ref (pdfcpu's
// extraction has put the inherited rotation on the page itself).
func turnPage(pc *model.Context, ref types.IndirectRef, deg int) error {
	if deg%360 == 0 {
		return nil
	}
	d, err := pc.DereferenceDict(ref)
	if err != nil || d == nil {
		return &BadInputError{Reason: "cannot rotate a page"}
	}
	cur := 0
	if r := d.IntEntry("Rotate"); r != nil {
		cur = *r
	}
	rot := ((cur+deg)%360 + 360) % 360
	if rot == 0 {
		delete(d, "Rotate")
		return nil
	}
	d["Rotate"] = types.Integer(rot)
	return nil
}
