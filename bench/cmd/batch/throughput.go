package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docrender/docrender/bench/internal/benchapi"
)

// throughput compares an n-document batch with n single renders on one
// embedded service, alternating rounds so drift (thermal, caches) hits
// both sides alike.
func throughput(n, rounds int) error {
	hs, cfg, stop, err := benchapi.Embedded(map[string]string{"DOCRENDER_PLAN_HOBBY_MAX_BATCH": strconv.Itoa(max(n, 10))})
	if err != nil {
		return err
	}
	defer stop()
	a := hs.App
	c, err := benchapi.New("http://" + a.Addr())
	if err != nil {
		return err
	}
	conc := cfg.Workers
	// Warm up Chromium's tabs and fonts on both paths.
	if err := singles(c, 2*conc, conc); err != nil {
		return err
	}
	if _, err := batchZip(c, conc); err != nil {
		return err
	}
	fmt.Printf("docrender batch bench: %d one-page invoices, concurrency %d (DOCRENDER_WORKERS), %d rounds, load average %s\n", n, conc, rounds, loadAvg())
	fmt.Printf("%-6s | %-22s | %-22s | %s\n", "round", "single PDFs/s (time)", "batch PDFs/s (time)", "batch/single")
	var singleTotal, batchTotal time.Duration
	var ratios []float64
	for r := 1; r <= rounds; r++ {
		start := time.Now()
		if err := singles(c, n, conc); err != nil {
			return err
		}
		s := time.Since(start)
		start = time.Now()
		zip, err := batchZip(c, n)
		if err != nil {
			return err
		}
		b := time.Since(start)
		if err := benchapi.CheckZip(zip, n); err != nil {
			return err
		}
		singleTotal += s
		batchTotal += b
		ratios = append(ratios, s.Seconds()/b.Seconds())
		fmt.Printf("%-6d | %8.2f (%7s)     | %8.2f (%7s)     | %5.1f%%\n", r, rate(n, s), s.Round(10*time.Millisecond),
			rate(n, b), b.Round(10*time.Millisecond), 100*rate(n, b)/rate(n, s))
	}
	fmt.Printf("%-6s | %8.2f               | %8.2f               | %5.1f%% (target >= 90%%)\n", "all",
		rate(n*rounds, singleTotal), rate(n*rounds, batchTotal), 100*singleTotal.Seconds()/batchTotal.Seconds())
	slices.Sort(ratios)
	// Other load on the machine moves single rounds and batch rounds alike
	// only on average: the median round is the steadier figure.
	fmt.Printf("median round: %.1f%%; load average at the end: %s\n", 100*ratios[len(ratios)/2], loadAvg())
	return nil
}

// singles renders n documents through /pdf/generate from conc clients.
func singles(c *benchapi.Client, n, conc int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || failed.Load() != nil {
					return
				}
				if err := c.Generate(invoice(i)); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		return err
	}
	return nil
}

// loadAvg is the 1, 5 and 15 minute load average (Linux), printed with the
// results: a busy machine moves the numbers.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
