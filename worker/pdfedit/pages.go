package pdfedit

import (
	"strings"

	"github.com/docrender/docrender/pkg/pdfopts"
)

// ParsePages resolves a page selection against a document of pageCount
// pages and returns the selected page numbers (1-based), ascending, without
// duplicates.
//
// spec is "all" (or empty, meaning all) or a comma-separated list of pages
// and inclusive ranges, e.g. "1-3,5", read by pdfopts.ParsePageRanges (the
// gateway's syntax); blanks around numbers are ignored and "all" is
// case-insensitive. Pages beyond pageCount (and page 0) select nothing, so
// "3-10" of a 4-page document selects 3 and 4; a reversed range "5-2" means
// "2-5". The result may be empty. A malformed spec is an error.
func ParsePages(spec string, pageCount int) ([]int, error) {
	if pageCount < 0 {
		pageCount = 0
	}
	var ranges []pdfopts.PageRange
	all := strings.TrimSpace(spec) == ""
	if !all {
		var err error
		if ranges, all, err = pdfopts.ParsePageRanges(spec); err != nil {
			return nil, err
		}
	}
	if all {
		pages := make([]int, pageCount)
		for i := range pages {
			pages[i] = i + 1
		}
		return pages, nil
	}

	selected := make([]bool, pageCount+1)
	for _, r := range ranges {
		lo, hi := min(r.First, r.Last), max(r.First, r.Last)
		lo = max(lo, 1)
		hi = min(hi, pageCount)
		for p := lo; p <= hi; p++ {
			selected[p] = true
		}
	}
	var out []int
	for p := 1; p <= pageCount; p++ {
		if selected[p] {
			out = append(out, p)
		}
	}
	return out, nil
}
