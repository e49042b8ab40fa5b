package render

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/testenv/ledger"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/pdfedit"
)

// TestDumpJoinParts writes the tagged slices of bench/cmd/longdoc's ledger
// (about $DOCRENDER_DUMP_JOINPARTS_PAGES pages, default 1000), as the join
// would receive them, and the bands of its "Page i of n" footer, to
// $DOCRENDER_DUMP_JOINPARTS (part-NNN.pdf, bands.pdf), for pdfedit's
// BenchmarkJoinParts. It stops the job once the last slice is printed: the
// join itself does not run. Skipped unless the variable is set.
//
//	DOCRENDER_DUMP_JOINPARTS=/tmp/joinparts/1000 go test -run DumpJoinParts -timeout 30m ./render/
func TestDumpJoinParts(t *testing.T) {
	dir := os.Getenv("DOCRENDER_DUMP_JOINPARTS")
	if dir == "" {
		t.Skip("DOCRENDER_DUMP_JOINPARTS not set")
	}
	pages := 1000
	if s := os.Getenv("DOCRENDER_DUMP_JOINPARTS_PAGES"); s != "" {
		pages, _ = strconv.Atoi(s)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := testRenderer(t)
	r.SplitPages, r.SplitSlots = 200, 2
	defer func() { r.SplitPages, r.SplitSlots = 0, 0 }()
	footer := `<div style="font-size:8px;margin:auto">Page <span class="pageNumber"></span> of <span class="totalPages"></span></div>`
	pr := &jobspb.Print{Split: jobspb.Split_SPLIT_ON, Outline: true, FooterTemplate: footer, HeaderTemplate: "<span></span>"}
	rj := &jobspb.RenderJob{Entry: "index.html", Page: a4, Print: pr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &dumpFarm{localFarm: newLocalFarm(), t: t, dir: dir, cancel: cancel}
	start := time.Now()
	_, err := r.RenderWith(ctx, egress.Bundle{"index.html": []byte(ledger.HTML(pages))}, rj, 30*time.Minute, Options{Farm: f})
	t.Logf("render stopped after %v: %v", time.Since(start), err)
	if f.total == 0 || f.dumped != f.total {
		t.Fatalf("dumped %d of %d slices", f.dumped, f.total)
	}
	n := 0
	for i := range f.total {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("part-%03d.pdf", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		c, err := pdfedit.PageCount(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		n += c
	}
	band, err := printTestBands(t, r, a4, pr, bands{pages: n, title: "Ledger"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bands.pdf"), band, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d slices, %d pages, in %v", f.total, n, time.Since(start))
}

// dumpFarm prints every slice on the job's own tabs (localFarm) and writes
// each PDF to dir; once the last is written it cancels the job.
type dumpFarm struct {
	*localFarm
	t      testing.TB
	dir    string
	cancel context.CancelFunc

	dmu           sync.Mutex
	total, dumped int
}

func (f *dumpFarm) Offer(_ context.Context, s []Slice, _ *jobspb.RenderJob, _ time.Time) error {
	f.dmu.Lock()
	f.total = len(s) + 1 // the job's tab prints one not offered
	f.dmu.Unlock()
	return nil
}

func (f *dumpFarm) Finish(ctx context.Context, s Slice, pdf []byte, heard *jobspb.Report) error {
	if err := os.WriteFile(filepath.Join(f.dir, fmt.Sprintf("part-%03d.pdf", s.Index+1)), pdf, 0o644); err != nil {
		return err
	}
	f.dmu.Lock()
	f.dumped++
	last := f.dumped == f.total
	f.dmu.Unlock()
	f.t.Logf("slice %d: %d bytes", s.Index+1, len(pdf))
	if last {
		f.cancel()
	}
	return f.localFarm.Finish(ctx, s, pdf, heard)
}
