package e2e

import (
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSplitAcrossWorkers (DESIGN §10 scaled out, issue 24 item 3): two
// worker processes of one render slot each, on the machine's NATS and
// Redis. A long document's slices go through JetStream to the worker that
// did not take the job, and the joined PDF reads as the print in one
// piece. Then the helping worker is killed while it prints a slice: its
// claim lapses, the job's own tab prints that slice, and the document
// comes back whole.
func TestSplitAcrossWorkers(t *testing.T) {
	ns := namespace(t)
	data := t.TempDir()
	gwBin, _ := binaries(t)
	addr := freePort(t)
	url := "http://" + addr
	// The job's time covers the takeover of a killed worker's slice.
	gw := startProc(t, gwBin, splitEnv(ns, data, map[string]string{"DOCRENDER_ADDR": addr, "DOCRENDER_BASE_URL": url, "DOCRENDER_RENDER_TIMEOUT": "60s"}))
	waitReady(t, url, gw)
	// Each slice waits for a slow image, so a kill lands mid-slice.
	slow, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Second)
		w.Header().Set("Content-Type", "image/svg+xml")
		fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>`)
	})}
	go srv.Serve(slow)
	defer srv.Close()
	env := splitEnv(ns, data, map[string]string{
		"DOCRENDER_WORKERS":            "1",
		"DOCRENDER_SPLIT_PAGES":        "4",
		"DOCRENDER_SLICE_PAGES":        "4",
		"DOCRENDER_RENDER_TIMEOUT":     "60s",
		"DOCRENDER_RENDER_ALLOW_HOSTS": slow.Addr().String(),
	})
	workers, _ := startSplitWorkers(t, 2, env)
	c := newClient(t, &service{URL: url})
	const sections = 24
	// Every section waits a second for an image: the slices print slower
	// than JetStream hands them out (the page is cut before loading, and
	// the job's own tabs start on theirs at once).
	// And each lacks an image of its own: the report of a split print
	// lists all of them, those of the slices the other worker printed too.
	html := splitLedger(sections)
	for s := 1; s <= sections; s++ {
		h2 := fmt.Sprintf(`>Section %d</h2>`, s)
		html = strings.Replace(html, h2, fmt.Sprintf(`%s<img src="http://%s/i.svg"><img src="gone-%d.png">`, h2, slow.Addr(), s), 1)
	}
	get := func(html string, split bool) ([]byte, string) {
		resp := c.generate([]file{htmlFile("index.html", html)}, map[string]any{"split": split})
		mustStatus(t, resp, http.StatusOK)
		return readAll(t, resp), resp.Header.Get("Docrender-Render-Report")
	}
	whole, wholeReport := get(html, false)
	split, report := get(html, true)
	if !strings.Contains(report, "slices=") {
		t.Fatalf("report %q, want slices", report)
	}
	if want := fmt.Sprintf("failed=%d,", sections); !strings.Contains(wholeReport, want) || !strings.Contains(report, want) {
		t.Errorf("reports: in one piece %q, in slices %q; want %s in both", wholeReport, report, want)
	}
	n := pdfInfoFields(t, whole, "")["Pages"]
	if got := pdfInfoFields(t, split, "")["Pages"]; got != n {
		t.Errorf("split: %s pages, in one piece %s", got, n)
	}
	ledgerInOrder(t, split, sections)
	helped := 0
	for _, w := range workers {
		helped += strings.Count(w.out.String(), `"msg":"slice printed"`)
	}
	if helped == 0 {
		t.Fatalf("no worker printed a slice of another's job (report %q)", report)
	}
	t.Logf("%s; %d slices printed by the other worker", report, helped)

	// The kill: whichever worker starts printing a slice of the other's
	// job. Not a slice of the jobs before it: one taken from the queue
	// late may still be printing as this job starts (seen in CI: the kill
	// landed there, and the job's worker printed every slice itself).
	before := map[string]bool{}
	for _, w := range workers {
		for p := range sliceParents(w.out.String()) {
			before[p] = true
		}
	}
	killed := make(chan int, 1)
	go func() {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			for i, w := range workers {
				if printingSlice(w.out.String(), before) {
					_ = w.cmd.Process.Kill()
					killed <- i
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		killed <- -1
	}()
	pdf, report := get(html, true)
	k := <-killed
	if k < 0 {
		t.Fatal("no worker took a slice of the other's job to be killed in")
	}
	if got := pdfInfoFields(t, pdf, "")["Pages"]; got != n {
		t.Errorf("after the kill: %s pages, want %s (report %q)", got, n, report)
	}
	ledgerInOrder(t, pdf, sections)
	if other := workers[1-k].out.String(); !strings.Contains(other, "split: printing a slice nobody holds") {
		t.Errorf("the job's worker did not take over the killed worker's slice")
	}
}

// ledgerInOrder checks that every row of a splitLedger is in pdf once and
// in order.
func ledgerInOrder(t testing.TB, pdf []byte, sections int) {
	t.Helper()
	var rows []string
	for _, w := range strings.Fields(text(t, pdf)) {
		if rowRe.MatchString(w) {
			rows = append(rows, w)
		}
	}
	var want []string
	for s := 1; s <= sections; s++ {
		for r := 1; r <= 80; r++ {
			want = append(want, fmt.Sprintf("S%dR%d", s, r))
		}
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("%d rows, want %d once each and in order", len(rows), len(want))
	}
}

var rowRe = regexp.MustCompile(`^S\d+R\d+$`)

// sliceLog is a worker's log line about a slice job: its message and job.
var sliceLog = regexp.MustCompile(`"msg":"(printing slice|slice printed[^"]*|slice not printed here[^"]*|printing a slice panicked[^"]*)".*?"job_id":"([^"]+)"`)

// sliceParents returns the jobs whose slices a worker's log names.
func sliceParents(log string) map[string]bool {
	parents := map[string]bool{}
	for _, m := range sliceLog.FindAllStringSubmatch(log, -1) {
		parents[sliceParent(m[2])] = true
	}
	return parents
}

// sliceParent is the job that slice job id is a slice of.
func sliceParent(id string) string {
	if i := strings.LastIndex(id, "-slice-"); i >= 0 {
		return id[:i]
	}
	return id
}

// printingSlice reports whether a worker's log shows a slice it started
// printing and has not finished, of a job not in old (by job, not by
// count: a slice job of an earlier request may be turned away late, after
// its job ended).
func printingSlice(log string, old map[string]bool) bool {
	open := map[string]bool{}
	for _, m := range sliceLog.FindAllStringSubmatch(log, -1) {
		if old[sliceParent(m[2])] {
			continue
		}
		if m[1] == "printing slice" {
			open[m[2]] = true
		} else {
			delete(open, m[2])
		}
	}
	return len(open) > 0
}
