package render

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
)

// testFarm stands for the other workers of a scaled-out service: it
// reports slices printed elsewhere, and slices held by a printer that dies
// (its claim lapses after some looks). The real farm, on the state store
// and the queue, is tested through worker processes (e2e
// TestSplitAcrossWorkers); this one pins the job's side of the contract.
type testFarm struct {
	*localFarm // the job's own claims
	offered    []Slice
	held       map[string]int    // key: looks before its printer is gone
	elsewhere  map[string][]byte // key: printed by another worker
}

func newTestFarm() *testFarm {
	return &testFarm{localFarm: newLocalFarm(), held: map[string]int{}, elsewhere: map[string][]byte{}}
}

func (f *testFarm) Offer(_ context.Context, s []Slice, _ *jobspb.RenderJob, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offered = slices.Clone(s)
	return nil
}

func (f *testFarm) Claim(ctx context.Context, s Slice) (bool, error) {
	f.mu.Lock()
	other := f.held[s.Key] > 0 || f.elsewhere[s.Key] != nil
	f.mu.Unlock()
	if other {
		return false, nil
	}
	return f.localFarm.Claim(ctx, s)
}

func (f *testFarm) Result(ctx context.Context, s Slice) ([]byte, bool, error) {
	f.mu.Lock()
	if pdf := f.elsewhere[s.Key]; pdf != nil {
		f.mu.Unlock()
		return pdf, false, nil
	}
	if f.held[s.Key] > 0 {
		f.held[s.Key]--
		f.mu.Unlock()
		return nil, false, nil
	}
	f.mu.Unlock()
	return f.localFarm.Result(ctx, s)
}

// TestFarmedSlices: with other workers in the farm, the job joins the
// slice another printed (PrintSlice, what a SliceJob runs) without
// printing it, waits for a slice held by another printer, prints it
// itself once that printer is gone, and the document reads as without
// them: every row once, in order, the same pages.
func TestFarmedSlices(t *testing.T) {
	r := testRenderer(t)
	r.SplitPages, r.SlicePages = 4, 4
	defer func() { r.SplitPages, r.SlicePages = 0, 0 }()
	html := ledgerDoc(6)
	b := egress.Bundle{"index.html": []byte(html)}
	rj := &jobspb.RenderJob{Entry: "index.html", Page: a4, Print: &jobspb.Print{Split: jobspb.Split_SPLIT_ON}}
	render := func(f *testFarm) Output {
		t.Helper()
		out, err := r.RenderWith(context.Background(), b, rj, 60*time.Second, Options{Farm: f})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	alone := newTestFarm()
	first := render(alone)
	if n := len(alone.offered); n < 3 || int(first.Report.Slices) != n {
		t.Fatalf("%d slices offered, %d printed; want 3 or more", n, first.Report.Slices)
	}
	if len(alone.claimed) != len(alone.offered) {
		t.Errorf("alone, the job claimed %d of %d slices", len(alone.claimed), len(alone.offered))
	}

	// The same plan again (the same keys): slice 2 printed elsewhere,
	// slice 1 held by a printer that dies after three looks.
	s1, s2 := alone.offered[0], alone.offered[1]
	yes := func() (bool, error) { return true, nil }
	if _, err := r.PrintSlice(context.Background(), b, rj, s2.HTML, time.Now().Add(time.Minute), func() (bool, error) { return false, nil }); err != ErrSliceTaken {
		t.Errorf("a slice claimed by another: %v, want ErrSliceTaken", err)
	}
	pdf, err := r.PrintSlice(context.Background(), b, rj, s2.HTML, time.Now().Add(time.Minute), yes)
	if err != nil {
		t.Fatal(err)
	}
	f := newTestFarm()
	f.elsewhere[s2.Key] = pdf
	f.held[s1.Key] = 3
	out := render(f)
	if f.claimed[s2.Key] || !f.claimed[s1.Key] || f.held[s1.Key] != 0 {
		t.Errorf("claims %v, held %v: want slice 1 taken over after its printer died, slice 2 not printed here", f.claimed, f.held)
	}
	rows := regexp.MustCompile(`S(\d)R(\d+)\b`).FindAllString(pdfTool(t, out.PDF, "pdftotext", "PDF", "-"), -1)
	var want []string
	for s := 1; s <= 6; s++ {
		for i := 1; i <= 70; i++ {
			want = append(want, fmt.Sprintf("S%dR%d", s, i))
		}
	}
	if !slices.Equal(rows, want) {
		t.Errorf("%d rows, want %d once each and in order", len(rows), len(want))
	}
	if got, want := pdfTool(t, out.PDF, "pdfinfo", "PDF"), pdfTool(t, first.PDF, "pdfinfo", "PDF"); pagesLine(got) != pagesLine(want) {
		t.Errorf("%s with farmed slices, %s alone", pagesLine(got), pagesLine(want))
	}

	// A slice taken after its job stopped waiting is not printed.
	if _, err := r.PrintSlice(context.Background(), b, rj, s2.HTML, time.Now().Add(-time.Second), yes); err != ErrSliceLate {
		t.Errorf("late slice: %v, want ErrSliceLate", err)
	}
}

func pagesLine(pdfinfo string) string {
	return regexp.MustCompile(`Pages:\s+\d+`).FindString(pdfinfo)
}
