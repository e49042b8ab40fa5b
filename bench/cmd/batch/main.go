// Command benchbatch measures batch generation (make bench, scripts/bench-batch):
//
//  1. Throughput: an n-document batch end to end (submit, render, ZIP,
//     download) against n single /pdf/generate renders driven at the same
//     concurrency (DOCRENDER_WORKERS clients, one per render slot), in one
//     run on one embedded service. The batch should reach at least 90% of
//     the single-render rate: the ZIP and progress bookkeeping cost little.
//  2. Fairness (-fair): single renders of one account behind another's
//     300-document batch, and two accounts' batches started 1 s apart
//     (fairness.go).
//  3. Memory (-memory N): an N-document batch in the scaled-out setup
//     (bin/gateway and two bin/worker processes on the machine's NATS and
//     Redis), reporting each process's peak RSS (VmHWM).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/docrender/docrender/worker/pdfium"
)

func main() {
	// A PDFium child process of this one (worker/pdfium) does its work and ends here.
	if pdfium.RunChildIfAsked() {
		return
	}
	n := flag.Int("n", 200, "documents in the throughput batch (and single renders to compare)")
	rounds := flag.Int("rounds", 2, "alternating rounds of single renders and batch")
	memDocs := flag.Int("memory", 0, "documents in the scaled-out memory measurement (0: skip)")
	bin := flag.String("bin", "bin", "directory with gateway and worker binaries (for -memory)")
	fair := flag.Bool("fair", false, "measure fair scheduling between accounts")
	flag.Parse()
	if *fair {
		if err := fairness(300, 100, 20); err != nil {
			fmt.Fprintln(os.Stderr, "benchbatch: fairness:", err)
			os.Exit(1)
		}
	}
	if *n > 0 {
		if err := throughput(*n, *rounds); err != nil {
			fmt.Fprintln(os.Stderr, "benchbatch:", err)
			os.Exit(1)
		}
	}
	if *memDocs > 0 {
		if err := memory(*memDocs, *bin); err != nil {
			fmt.Fprintln(os.Stderr, "benchbatch: memory:", err)
			os.Exit(1)
		}
	}
}

func rate(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }
