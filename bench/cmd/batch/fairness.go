package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/docrender/docrender/bench/internal/benchapi"
)

// fairness measures fair scheduling (DESIGN §5) on one embedded service:
//
//	(a) one account's single renders, idle and while another account's
//	    bigN-document batch runs: p50/p95 (target p95 <= 1 s);
//	(b) two pairN-document batches of two accounts started 1 s apart: how
//	    far the second is when the first completes (target >= 70%).
func fairness(bigN, pairN, singles int) error {
	hs, cfg, stop, err := benchapi.Embedded(map[string]string{"DOCRENDER_PLAN_HOBBY_MAX_BATCH": strconv.Itoa(max(bigN, pairN, 10))})
	if err != nil {
		return err
	}
	defer stop()
	base := "http://" + hs.App.Addr()
	batcher, err := benchapi.New(base)
	if err != nil {
		return err
	}
	single, err := benchapi.New(base)
	if err != nil {
		return err
	}
	fmt.Printf("docrender fairness bench: DOCRENDER_WORKERS=%d, load average %s\n", cfg.Workers, loadAvg())

	// (a) Warm up, then single renders idle and behind a big batch.
	if _, err := timedSingles(single, cfg.Workers); err != nil {
		return err
	}
	idle, err := timedSingles(single, singles)
	if err != nil {
		return err
	}
	id, err := startStream(batcher, bigN)
	if err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond) // the batch's documents are queued
	busy, err := timedSingles(single, singles)
	if err != nil {
		return err
	}
	done, _, err := progress(batcher, id)
	if err != nil {
		return err
	}
	fmt.Printf("(a) single renders of one account, %d each, one at a time:\n", singles)
	fmt.Printf("    idle:                              p50 %6s  p95 %6s\n", pct(idle, 50), pct(idle, 95))
	fmt.Printf("    behind another's %d-doc batch:    p50 %6s  p95 %6s  (target p95 <= 1s; batch at %d/%d when they ended)\n",
		bigN, pct(busy, 50), pct(busy, 95), done, bigN)
	if err := waitBatch(batcher, id, 30*time.Minute); err != nil {
		return err
	}

	// (b) Two batches of two accounts, the second started 1 s later.
	first, err := startStream(batcher, pairN)
	if err != nil {
		return err
	}
	time.Sleep(time.Second)
	second, err := startStream(single, pairN)
	if err != nil {
		return err
	}
	if err := waitBatch(batcher, first, 30*time.Minute); err != nil {
		return err
	}
	n, _, err := progress(single, second)
	if err != nil {
		return err
	}
	fmt.Printf("(b) two %d-doc batches of two accounts started 1 s apart: the second at %d/%d (%.0f%%) when the first completed (target >= 70%%)\n",
		pairN, n, pairN, 100*float64(n)/float64(pairN))
	return waitBatch(single, second, 30*time.Minute)
}

// timedSingles renders n documents one after another and returns each time.
func timedSingles(c *benchapi.Client, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if err := c.Generate(invoice(10000 + i)); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)].Round(time.Millisecond)
}

func startStream(c *benchapi.Client, n int) (string, error) {
	var out struct {
		BatchID string `json:"batchId"`
	}
	if err := c.PostJSON("/pdf/generate-batch", "", batchRequest(n, true), &out); err != nil {
		return "", err
	}
	return out.BatchID, nil
}

func progress(c *benchapi.Client, id string) (int, string, error) {
	b, err := c.Get("/pdf/progress/" + id)
	if err != nil {
		return 0, "", err
	}
	var p struct {
		Current int    `json:"current"`
		Status  string `json:"status"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return 0, "", err
	}
	return p.Current, p.Status, nil
}

func waitBatch(c *benchapi.Client, id string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		_, status, err := progress(c, id)
		if err != nil {
			return err
		}
		switch status {
		case "completed":
			return nil
		case "error":
			return fmt.Errorf("batch %s ended in error", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("batch %s not done after %s", id, limit)
}
