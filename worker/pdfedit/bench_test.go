package pdfedit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkMerge50x10 merges 50 ten-page PDFs (qpdf-written: compressed
// streams, object streams, xref streams) from files to a file, and in the
// same run times `qpdf --empty --pages <50 files> -- out.pdf` on the same
// files. Reported: ms/merge (pdfedit, wall), qpdf-ms/merge (wall, process
// start included, as a worker shelling out to qpdf would pay it),
// pdfedit/qpdf (the wall-time ratio; at most 1 means no slower than qpdf),
// and the CPU time of each.
//
//	go test -run '^$' -bench Merge50x10 -benchtime 3x ./pdfedit/
func BenchmarkMerge50x10(b *testing.B) {
	needTools(b, "qpdf")
	dir := b.TempDir()
	var files []string
	for i := range 50 {
		p := filepath.Join(dir, fmt.Sprintf("in%02d.pdf", i))
		writeFile(b, p, qpdfPDF(b, fmt.Sprintf("D%02d", i), 10))
		files = append(files, p)
	}
	out := filepath.Join(dir, "out.pdf")
	qpdfOut := filepath.Join(dir, "qpdf-out.pdf")
	qpdfArgs := append(append([]string{"--empty", "--pages"}, files...), "--", qpdfOut)

	mergeOnce := func() {
		var ins []Input
		for _, p := range files {
			f, err := os.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			ins = append(ins, Input{Name: filepath.Base(p), R: f})
		}
		w, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		pages, err := Merge(context.Background(), ins, w)
		if err != nil {
			b.Fatal(err)
		}
		if pages != 500 {
			b.Fatalf("merged %d pages, want 500", pages)
		}
	}
	qpdfOnce := func() (cpu time.Duration) {
		cmd := exec.Command("qpdf", qpdfArgs...)
		if outb, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("qpdf: %v\n%s", err, outb)
		}
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	// Warm both up (page cache, lazy init) outside the measurements.
	mergeOnce()
	qpdfOnce()

	// The two alternate, so that load from elsewhere on the machine hits
	// both alike. CPU time (user+system; ours is the whole process's, GC
	// included) is reported beside wall time as the steadier figure.
	var ours, theirs, oursCPU, theirsCPU time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start, cpu := time.Now(), processCPU()
		mergeOnce()
		ours += time.Since(start)
		oursCPU += processCPU() - cpu

		b.StopTimer()
		start = time.Now()
		theirsCPU += qpdfOnce()
		theirs += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()

	perMerge := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(perMerge(ours), "ms/merge")
	b.ReportMetric(perMerge(theirs), "qpdf-ms/merge")
	b.ReportMetric(float64(ours)/float64(theirs), "pdfedit/qpdf")
	b.ReportMetric(perMerge(oursCPU), "cpu-ms/merge")
	b.ReportMetric(perMerge(theirsCPU), "qpdf-cpu-ms/merge")
	if st, err := os.Stat(out); err == nil {
		b.ReportMetric(float64(st.Size())/1024, "out-KiB")
	}
}

// processCPU is the CPU time (user+system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
