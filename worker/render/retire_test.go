package render

import (
	"context"
	"testing"
	"time"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/pdfedit"
)

// TestLongPrintRetiresTab: a job that printed retirePages pages or more
// leaves its tab to a fresh context (its renderer replaced, with the
// memory of the long document), a shorter one leaves it cleaned and
// reused.
func TestLongPrintRetiresTab(t *testing.T) {
	r := testRenderer(t)
	for _, tc := range []struct {
		pages   int
		renewed bool
	}{
		{retirePages - 1, false},
		{retirePages, true},
		{3, false},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := r.Pool.Settled(ctx); err != nil {
			t.Fatal(err)
		}
		fresh := r.Pool.Fresh()
		pdf, err := printRender(t, r, egress.Bundle{"index.html": []byte(pagesHTML(tc.pages, ""))}, a4, &jobspb.Print{Untagged: true}, time.Minute)
		if err != nil {
			t.Fatalf("%d pages: %v", tc.pages, err)
		}
		if n, err := pdfedit.PageCount(ctx, pdf); err != nil || n != tc.pages {
			t.Fatalf("printed %d pages (%v), want %d", n, err, tc.pages)
		}
		if err := r.Pool.Settled(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if renewed := r.Pool.Fresh() != fresh; renewed != tc.renewed {
			t.Errorf("%d pages: tab renewed %v, want %v", tc.pages, renewed, tc.renewed)
		}
	}
}
