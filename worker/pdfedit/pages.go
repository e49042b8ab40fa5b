package pdfedit

import (
	"fmt"
	"strconv"
	"strings"
)

// ParsePages resolves a page selection against a document of pageCount
// pages and returns the selected page numbers (1-based), ascending, without
// duplicates.
//
// spec is "all" (or empty, meaning all) or a comma-separated list of pages
// and inclusive ranges, e.g. "1-3,5"; blanks around numbers are ignored and
// "all" is case-insensitive. Pages beyond pageCount (and page 0) select nothing, so
// "3-10" of a 4-page document selects 3 and 4; a reversed range "5-2" means
// "2-5". The result may be empty. A malformed spec is an error.
func ParsePages(spec string, pageCount int) ([]int, error) {
	s := strings.ToLower(strings.TrimSpace(spec))
	if pageCount < 0 {
		pageCount = 0
	}
	if s == "" || s == "all" {
		all := make([]int, pageCount)
		for i := range all {
			all[i] = i + 1
		}
		return all, nil
	}

	selected := make([]bool, pageCount+1)
	for _, item := range strings.Split(s, ",") {
		lo, hi, err := parseRange(item)
		if err != nil {
			return nil, fmt.Errorf("pages %q: %w", spec, err)
		}
		if lo > hi {
			lo, hi = hi, lo
		}
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

// parseRange parses "N" or "N-M".
func parseRange(item string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(item, "-")
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if lo, err = parsePageNr(a); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return lo, lo, nil
	}
	if hi, err = parsePageNr(b); err != nil {
		return 0, 0, err
	}
	return lo, hi, nil
}

func parsePageNr(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("empty page number (want all or ranges like 1-3,5)")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad page number %q (want all or ranges like 1-3,5)", s)
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		// All digits, so it only overflows: a page far beyond any document.
		return int(^uint(0) >> 1), nil
	}
	return n, nil
}
