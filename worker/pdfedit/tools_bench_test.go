package pdfedit

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// splitBenchPDF is the 50-page Chromium report the PDFium benchmarks read
// (text, a table and an image a page, 0.6 MB), as bench/cmd/tools splits.
const splitBenchPDF = "../pdfium/testdata/long.pdf"

// BenchmarkSplitEvery10 splits splitBenchPDF into files of 10 pages, and in
// the same run times `qpdf --split-pages=10` on the same file, the two
// alternating. Reported as BenchmarkMerge50x10 does: ms/split (pdfedit,
// wall, from the bytes in memory to the parts in memory),
// qpdf-ms/split (wall, process start and the files written included, as a
// worker shelling out to qpdf would pay them), the ratio and the CPU time
// of each.
//
//	go test -run '^$' -bench SplitEvery10 -benchtime 10x ./pdfedit/
func BenchmarkSplitEvery10(b *testing.B) {
	needTools(b, "qpdf")
	data, err := os.ReadFile(splitBenchPDF)
	if err != nil {
		b.Skip(err)
	}
	in := filepath.Join(b.TempDir(), "in.pdf")
	writeFile(b, in, data)
	benchSplitAgainstQpdf(b, data, in)
}

// benchSplitAgainstQpdf splits data (also in the file in) every 10 pages
// into 5 parts, ours and qpdf's alternately, and reports both's wall and
// CPU time a split and their ratio.
func benchSplitAgainstQpdf(b *testing.B, data []byte, in string) {
	dir := b.TempDir()
	splitOnce := func() {
		parts, err := Split(context.Background(), bytes.NewReader(data), "", 10, 100)
		if err != nil {
			b.Fatal(err)
		}
		if len(parts) != 5 {
			b.Fatalf("%d parts, want 5", len(parts))
		}
	}
	qpdfOnce := func() (cpu time.Duration) {
		cmd := exec.Command("qpdf", "--split-pages=10", in, filepath.Join(dir, "part-%d.pdf"))
		if outb, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("qpdf: %v\n%s", err, outb)
		}
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	splitOnce()
	qpdfOnce()

	var ours, theirs, oursCPU, theirsCPU time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start, cpu := time.Now(), processCPU()
		splitOnce()
		ours += time.Since(start)
		oursCPU += processCPU() - cpu

		b.StopTimer()
		start = time.Now()
		theirsCPU += qpdfOnce()
		theirs += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()

	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(per(ours), "ms/split")
	b.ReportMetric(per(theirs), "qpdf-ms/split")
	b.ReportMetric(float64(ours)/float64(theirs), "pdfedit/qpdf")
	b.ReportMetric(per(oursCPU), "cpu-ms/split")
	b.ReportMetric(per(theirsCPU), "qpdf-cpu-ms/split")
}
