package pdfedit

import (
	"bytes"
	"context"
	"fmt"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// DestPages reads a printed PDF's named destinations (the catalog's /Dests,
// where Chromium writes one for each element an internal link points to,
// named by its ID) and the page each is on, from 1, with the page count.
// A destination whose page is not found is left out.
func DestPages(ctx context.Context, pdf []byte) (dests map[string]int, pages int, err error) {
	defer func() {
		if r := recover(); r != nil {
			dests, pages, err = nil, 0, fmt.Errorf("pdfedit: destinations: %v", r)
		}
	}()
	pc, err := pdfcpu.ReadWithContext(ctx, bytes.NewReader(pdf), newConf(model.LISTINFO))
	if err != nil {
		return nil, 0, fmt.Errorf("pdfedit: destinations: %w", err)
	}
	if err := pc.EnsurePageCount(); err != nil {
		return nil, 0, fmt.Errorf("pdfedit: destinations: %w", err)
	}
	x := pc.XRefTable
	root, err := x.Catalog()
	if err != nil {
		return nil, 0, fmt.Errorf("pdfedit: destinations: %w", err)
	}
	dests = map[string]int{}
	d, err := x.DereferenceDict(root["Dests"])
	if err != nil || len(d) == 0 {
		return dests, pc.PageCount, nil
	}
	pageOf := make(map[int]int, pc.PageCount) // page object number → page
	for i := 1; i <= pc.PageCount; i++ {
		if _, ref, _, err := x.PageDict(i, false); err == nil && ref != nil {
			pageOf[ref.ObjectNumber.Value()] = i
		}
	}
	for name, o := range d {
		arr, err := x.DereferenceArray(o)
		if err != nil {
			// A destination may be a dictionary {/D [...]}.
			if dd, err := x.DereferenceDict(o); err == nil {
				arr, _ = x.DereferenceArray(dd["D"])
			}
		}
		if len(arr) == 0 {
			continue
		}
		ref, ok := arr[0].(types.IndirectRef)
		if !ok {
			continue
		}
		if n, ok := pageOf[ref.ObjectNumber.Value()]; ok {
			if decoded, err := types.DecodeName(name); err == nil {
				name = decoded
			}
			dests[name] = n
		}
	}
	return dests, pc.PageCount, nil
}
