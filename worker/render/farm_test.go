package render

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
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
	elsewhere  map[string]farmed // key: printed by another worker
}

// farmed is a slice another worker printed: its PDF and what its tab heard.
type farmed struct {
	pdf   []byte
	heard *jobspb.Report
}

func newTestFarm() *testFarm {
	return &testFarm{localFarm: newLocalFarm(), held: map[string]int{}, elsewhere: map[string]farmed{}}
}

func (f *testFarm) Offer(_ context.Context, s []Slice, _ *jobspb.RenderJob, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offered = slices.Clone(s)
	return nil
}

func (f *testFarm) Claim(ctx context.Context, s Slice) (bool, error) {
	f.mu.Lock()
	other := f.held[s.Key] > 0 || f.elsewhere[s.Key].pdf != nil
	f.mu.Unlock()
	if other {
		return false, nil
	}
	return f.localFarm.Claim(ctx, s)
}

func (f *testFarm) Result(ctx context.Context, s Slice) ([]byte, *jobspb.Report, bool, error) {
	f.mu.Lock()
	if e := f.elsewhere[s.Key]; e.pdf != nil {
		f.mu.Unlock()
		return e.pdf, e.heard, false, nil
	}
	if f.held[s.Key] > 0 {
		f.held[s.Key]--
		f.mu.Unlock()
		return nil, nil, false, nil
	}
	f.mu.Unlock()
	return f.localFarm.Result(ctx, s)
}

// TestFarmedSlices: with other workers in the farm, the job joins the
// slice another printed (PrintSlice, what a SliceJob runs) without
// printing it, waits for a slice held by another printer, prints it
// itself once that printer is gone, and the document reads as without
// them: every row once, in order, the same pages. The page is cut before
// loading: the job's tab begins with the first slice, the others are
// offered, and the report of the slice printed elsewhere (an image it
// lacks, one a section) is the job's as if printed here.
func TestFarmedSlices(t *testing.T) {
	r := testRenderer(t)
	// Three slots: the source is cut in three slices (cutCount).
	r.SplitPages, r.SlicePages, r.SplitSlots = 4, 4, 3
	defer func() { r.SplitPages, r.SlicePages, r.SplitSlots = 0, 0, 0 }()
	html := ledgerDoc(6)
	for s := 1; s <= 6; s++ {
		html = strings.Replace(html, fmt.Sprintf(`<h2 id="s%d">`, s), fmt.Sprintf(`<img src="gone-%d.png" alt=""><h2 id="s%d">`, s, s), 1)
	}
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
	failed := func(out Output) []string {
		var urls []string
		for _, f := range out.Report.GetFailedRequests() {
			urls = append(urls, f.GetUrl())
		}
		slices.Sort(urls)
		return urls
	}
	var gone []string
	for s := 1; s <= 6; s++ {
		gone = append(gone, fmt.Sprintf("gone-%d.png", s))
	}
	alone := newTestFarm()
	first := render(alone)
	if n := len(alone.offered); n < 2 || int(first.Report.Slices) != n+1 || alone.offered[0].Index != 1 || !alone.offered[0].Cut {
		t.Fatalf("%d slices offered (the first: index %d, cut %v), %d printed; want all but the first, cut before loading",
			n, alone.offered[0].Index, alone.offered[0].Cut, first.Report.Slices)
	}
	if len(alone.claimed) != len(alone.offered)+1 {
		t.Errorf("alone, the job claimed %d of %d slices", len(alone.claimed), len(alone.offered)+1)
	}
	if got := failed(first); !slices.Equal(got, gone) {
		t.Errorf("alone, the report's failed requests are %v, want %v", got, gone)
	}

	// The same plan again (the same keys): the second offered slice printed
	// elsewhere, the first held by a printer that dies after three looks.
	s1, s2 := alone.offered[0], alone.offered[1]
	yes := func() (bool, error) { return true, nil }
	if _, _, err := r.PrintSlice(context.Background(), b, rj, s2, time.Now().Add(time.Minute), func() (bool, error) { return false, nil }); err != ErrSliceTaken {
		t.Errorf("a slice claimed by another: %v, want ErrSliceTaken", err)
	}
	pdf, heard, err := r.PrintSlice(context.Background(), b, rj, s2, time.Now().Add(time.Minute), yes)
	if err != nil {
		t.Fatal(err)
	}
	if len(heard.GetFailedRequests()) == 0 {
		t.Fatalf("the slice printed elsewhere heard %v, want its lost image", heard)
	}
	f := newTestFarm()
	f.elsewhere[s2.Key] = farmed{pdf, heard}
	f.held[s1.Key] = 3
	out := render(f)
	if f.claimed[s2.Key] || !f.claimed[s1.Key] || f.held[s1.Key] != 0 {
		t.Errorf("claims %v, held %v: want slice 1 taken over after its printer died, slice 2 not printed here", f.claimed, f.held)
	}
	if got := failed(out); !slices.Equal(got, gone) {
		t.Errorf("with a slice printed elsewhere, the report's failed requests are %v, want %v", got, gone)
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
	if _, _, err := r.PrintSlice(context.Background(), b, rj, s2, time.Now().Add(-time.Second), yes); err != ErrSliceLate {
		t.Errorf("late slice: %v, want ErrSliceLate", err)
	}
}

func pagesLine(pdfinfo string) string {
	return regexp.MustCompile(`Pages:\s+\d+`).FindString(pdfinfo)
}
