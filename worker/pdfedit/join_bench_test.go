package pdfedit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkJoinParts joins real slices of a long tagged document, as
// render's split path does (JoinStamped into a bytes.Buffer, the bands of
// a "Page i of n" footer stamped), from the directory
// $DOCRENDER_JOINPARTS (default /tmp/joinparts/1000): part-NNN.pdf and
// bands.pdf as render's TestDumpJoinParts writes them. Skipped when the
// directory has no parts. Reported beside the time: the peak of the Go
// heap (live and garbage not yet swept, sampled every 20 ms), the peak
// resident set of the process during the join (VmHWM, reset before it)
// and the output's size. $DOCRENDER_JOINPARTS_OUT: write the last result
// there. $DOCRENDER_JOINPARTS_REPEAT=n joins the parts n times over
// (a document n times as long, without bands).
//
//	DOCRENDER_JOINPARTS=/tmp/joinparts/1000 go test -run '^$' -bench JoinParts -benchtime 1x ./pdfedit/
func BenchmarkJoinParts(b *testing.B) {
	dir := os.Getenv("DOCRENDER_JOINPARTS")
	if dir == "" {
		dir = "/tmp/joinparts/1000"
	}
	names, _ := filepath.Glob(filepath.Join(dir, "part-*.pdf"))
	if len(names) == 0 {
		b.Skipf("no parts in %s (render's TestDumpJoinParts writes them)", dir)
	}
	var parts [][]byte
	size := 0
	for _, n := range names {
		p := readFile(b, n)
		parts = append(parts, p)
		size += len(p)
	}
	bands, err := os.ReadFile(filepath.Join(dir, "bands.pdf"))
	if err != nil {
		bands = nil
	}
	if n, _ := strconv.Atoi(os.Getenv("DOCRENDER_JOINPARTS_REPEAT")); n > 1 {
		// The parts n times over: a document n times as long (IDs taken
		// again, renamed; destinations defined again, the first kept),
		// without bands.
		all := slices.Clone(parts)
		for range n - 1 {
			parts = append(parts, all...)
		}
		size *= n
		bands = nil
	}
	b.Logf("%d parts, %.1f MB; bands: %d bytes", len(parts), float64(size)/1e6, len(bands))
	var out bytes.Buffer
	var peakHeap, peakRSS uint64
	var pages int
	b.ResetTimer()
	for range b.N {
		out = bytes.Buffer{}
		runtime.GC()
		resetPeakRSS()
		stop := samplePeakHeap()
		start := time.Now()
		pages, err = JoinStamped(context.Background(), parts, nil, bands, 0, &out)
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/join")
		peakHeap = max(peakHeap, stop())
		peakRSS = max(peakRSS, vmHWM())
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(pages), "pages")
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(peakRSS)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(out.Len())/1e6, "out-MB")
	if p := os.Getenv("DOCRENDER_JOINPARTS_OUT"); p != "" {
		writeFile(b, p, out.Bytes())
	}
}

// samplePeakHeap samples the heap (objects, live or not yet swept) every
// 20 ms until the returned function is called, which returns the peak.
func samplePeakHeap() func() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var (
		mu   sync.Mutex
		peak uint64
	)
	read := func() {
		metrics.Read(s)
		mu.Lock()
		peak = max(peak, s[0].Value.Uint64())
		mu.Unlock()
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				read()
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		read()
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// resetPeakRSS resets the process's VmHWM to its current resident set.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// vmHWM is the process's peak resident set (bytes) since start or the
// last resetPeakRSS.
func vmHWM() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
