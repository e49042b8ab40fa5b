// Command longdoc measures DESIGN §10's split printing (issue 24 item 5):
// a long ledger printed by the same embedded service in one piece
// (split: false, one render slot) and in slices (split: true: several tabs
// at once, joined), tagged (the default) and untagged, side by side in one
// run; each PDF's page count is printed with its time, since a cut that is
// not at a page break adds a page, and the peak memory (resident) of the
// service's process and of its Chromium's, sampled every 100 ms.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docrender/docrender/bench/internal/benchapi"
	"github.com/docrender/docrender/pkg/testenv/ledger"
	"github.com/docrender/docrender/worker/pdfium"
)

var pageRe = regexp.MustCompile(`/Type\s*/Page[^s]`)

func main() {
	// A PDFium child process of this one (worker/pdfium) does its work and ends here.
	if pdfium.RunChildIfAsked() {
		return
	}
	pages := flag.Int("pages", 1000, "the ledger's length in pages (about)")
	onlyTagged := flag.Bool("tagged-only", false, "only the tagged rows")
	onlyUntagged := flag.Bool("untagged-only", false, "only the untagged rows")
	onlySplit := flag.Bool("split-only", false, "only the prints in slices")
	gateway := flag.String("gateway", "", "a running scaled-out service's gateway URL (scripts/cluster-up) instead of an embedded one")
	pids := flag.String("pids", "", "with -gateway: the worker processes whose memory to sample, space-separated")
	gotenberg := flag.String("gotenberg", "", "Gotenberg's URL (scripts/gotenberg-up): the same ledger through its Chromium route, in one piece")
	label := flag.String("label", "", "with -gateway: what the slices are printed by (\"2 workers\")")
	runs := flag.Int("runs", 3, "how many times each print runs (the one piece and the slices in turn): a VM's noise moves one run's time by a fifth")
	flag.Parse()
	base, slots := *gateway, *label
	if base == "" {
		svc, cfg, stop, err := benchapi.Embedded(map[string]string{
			"DOCRENDER_PLAN_HOBBY_MAX_PAGES": "100000", "DOCRENDER_RENDER_TIMEOUT": "900s",
			"DOCRENDER_MAX_OUTPUT_BYTES": "2147483647", "DOCRENDER_MAX_UPLOAD_BYTES": "209715200",
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench longdoc:", err)
			os.Exit(1)
		}
		defer stop()
		base, slots = "http://"+svc.App.Addr(), fmt.Sprintf("%d slots", cfg.Workers)
		fmt.Printf("docrender bench longdoc: one embedded service (DOCRENDER_WORKERS=%d, DOCRENDER_SPLIT_PAGES=%d)\n", cfg.Workers, cfg.SplitPages)
	} else {
		fmt.Printf("docrender bench longdoc: the scaled-out service at %s (%s)\n", base, slots)
	}
	var procs []int
	for _, f := range strings.Fields(*pids) {
		if pid, err := strconv.Atoi(f); err == nil {
			procs = append(procs, pid)
		}
	}
	if len(procs) == 0 {
		procs = []int{os.Getpid()}
	}
	api, err := benchapi.New(base)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench longdoc:", err)
		os.Exit(1)
	}
	html := ledger.HTML(*pages)
	footer := `"headerTemplate":"<span></span>","footerTemplate":"<div style=\"font-size:8px;margin:auto\">Page <span class=\"pageNumber\"></span> of <span class=\"totalPages\"></span></div>"`
	fmt.Printf("a ledger of ~%d pages with a \"Page i of n\" footer, c=1\n", *pages)
	fmt.Printf("each print %d times, one piece and slices in turn: the median, and every run's time\n", *runs)
	fmt.Printf("%-9s %-28s | %9s %6s %8s | %-13s | %-44s | %-15s | %s\n", "tagged", "printed", "seconds", "pages", "MB", "vs one piece", "peak RSS MiB: service (workers) + Chromium", "Chromium's cores", "runs, s")
	for _, tagged := range []bool{true, false} {
		if !tagged && *onlyTagged || tagged && *onlyUntagged {
			continue
		}
		kinds := []bool{false, true}
		if *onlySplit {
			kinds = []bool{true}
		}
		rows := map[bool]*row{}
		for range max(*runs, 1) {
			for _, split := range kinds {
				opts := fmt.Sprintf(`{"split":%v,"tagged":%v,%s}`, split, tagged, footer)
				// The pool readies the tab of the previous print after it
				// answered: each print starts on an idle browser.
				waitIdle()
				runtime.GC()
				stopPeak := peakRSS(procs)
				start := time.Now()
				pdf, err := api.GenerateWith(html, opts)
				took := time.Since(start)
				self, browser, cpu := stopPeak()
				rw := rows[split]
				if rw == nil {
					rw = &row{}
					rows[split] = rw
				}
				if err != nil {
					rw.err = err
					continue
				}
				rw.add(took, cpu, self, browser, pdf)
			}
		}
		var whole time.Duration
		for _, split := range kinds {
			rw := rows[split]
			name := "in one piece (1 slot)"
			if split {
				name = fmt.Sprintf("in slices (%s)", slots)
			}
			if rw.err != nil {
				fmt.Printf("%-9v %-28s | failed: %v\n", tagged, name, rw.err)
				continue
			}
			took := rw.median()
			ratio := ""
			if !split {
				whole = took
			} else if whole > 0 {
				ratio = fmt.Sprintf("%.2f× faster", whole.Seconds()/took.Seconds())
			}
			fmt.Printf("%-9v %-28s | %9.1f %6d %8.1f | %-13s | %-44s | %-15.2f | %s\n", tagged, name, took.Seconds(), rw.pages, float64(rw.bytes)/1e6, ratio,
				fmt.Sprintf("%d + %d", rw.self>>20, rw.browser>>20), rw.cores(), rw.times())
		}
		if *gotenberg != "" && !*onlySplit {
			stopPeak := peakRSS(nil)
			start := time.Now()
			pdf, err := gotenbergPrint(*gotenberg, html, tagged)
			took := time.Since(start)
			_, browser, cpu := stopPeak()
			cores := cpu.Seconds() / took.Seconds()
			ratio := ""
			if whole > 0 {
				ratio = fmt.Sprintf("%.2f× ours", took.Seconds()/whole.Seconds())
			}
			if err != nil {
				fmt.Printf("%-9v %-28s | failed after %.1f s: %v\n", tagged, "Gotenberg 8.36 (one piece)", took.Seconds(), err)
				continue
			}
			fmt.Printf("%-9v %-28s | %9.1f %6d %8.1f | %-13s | %-44s | %-15.2f | %.1f (one run)\n", tagged, "Gotenberg 8.36 (one piece)", took.Seconds(), len(pageRe.FindAll(pdf, -1)), float64(len(pdf))/1e6, ratio,
				fmt.Sprintf("- + %d", browser>>20), cores, took.Seconds())
		}
	}
	if *gotenberg == "" && *gateway == "" {
		fmt.Println("Gotenberg: not measured (no -gotenberg URL: scripts/gotenberg-up builds and starts it where its source is)")
	}
}

// row is one kind of print's runs.
type row struct {
	took          []time.Duration
	cpu           time.Duration
	self, browser int64 // the peaks over every run
	pages         int
	bytes         int
	err           error
}

func (rw *row) add(took, cpu time.Duration, self, browser int64, pdf []byte) {
	rw.took = append(rw.took, took)
	rw.cpu += cpu
	rw.self, rw.browser = max(rw.self, self), max(rw.browser, browser)
	rw.pages, rw.bytes = len(pageRe.FindAll(pdf, -1)), len(pdf)
}

// median is the runs' median time (the mean of the middle two of an even count).
func (rw *row) median() time.Duration {
	t := slices.Clone(rw.took)
	slices.Sort(t)
	n := len(t)
	if n%2 == 1 {
		return t[n/2]
	}
	return (t[n/2-1] + t[n/2]) / 2
}

// cores is how many cores Chromium kept busy over the runs together.
func (rw *row) cores() float64 {
	var sum time.Duration
	for _, t := range rw.took {
		sum += t
	}
	return rw.cpu.Seconds() / sum.Seconds()
}

// times lists the runs' times in the order they ran.
func (rw *row) times() string {
	var b strings.Builder
	for i, t := range rw.took {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.1f", t.Seconds())
	}
	return b.String()
}

// gotenbergPrint sends the ledger to Gotenberg's Chromium route with the
// same footer, as its API takes it (footer.html).
func gotenbergPrint(base, html string, tagged bool) ([]byte, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	files := map[string]string{"index.html": html,
		"footer.html": `<html><body><div style="font-size:8px;margin:auto">Page <span class="pageNumber"></span> of <span class="totalPages"></span></div></body></html>`}
	for name, content := range files {
		fw, err := mw.CreateFormFile("files", name)
		if err != nil {
			return nil, err
		}
		fw.Write([]byte(content))
	}
	mw.WriteField("generateTaggedPdf", strconv.FormatBool(tagged))
	mw.Close()
	resp, err := http.Post(base+"/forms/chromium/convert/html", mw.FormDataContentType(), &body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%d %s", resp.StatusCode, bytes.TrimSpace(out[:min(len(out), 300)]))
	}
	return out, nil
}

// peakRSS samples the resident memory of procs (this process: the
// embedded service; or the workers) and of every Chromium process until
// the returned function is called, which gives the peaks in bytes and the
// CPU time Chromium's processes used meanwhile (sampled with the memory:
// a renderer that ends during the print, its context thrown away, counts
// up to its last sample).
func peakRSS(procs []int) func() (self, browser int64, cpu time.Duration) {
	var maxSelf, maxBrowser int64 // the sampler's; read after it stopped
	var used int64                // CPU ticks, likewise
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		var seen map[int]int64 // each process's ticks at its last sample
		for {
			var s int64
			for _, p := range procs {
				s += rssOf(p)
			}
			// One scan of the processes a sample, for memory and CPU.
			var b int64
			now := map[int]int64{}
			for _, pid := range chromiumPIDs() {
				b += rssOf(pid) // shared pages counted in each: an upper bound
				if ticks, ok := cpuTicks(pid); ok {
					now[pid] = ticks
					if last, ok := seen[pid]; ok {
						used += ticks - last
					} else if seen != nil {
						used += ticks // started during the print
					}
				}
			}
			seen = now
			maxSelf, maxBrowser = max(maxSelf, s), max(maxBrowser, b)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() (int64, int64, time.Duration) {
		close(done)
		<-stopped
		return maxSelf, maxBrowser, time.Duration(used) * time.Second / 100 // USER_HZ
	}
}

// rssOf is a process's resident memory (/proc/PID/status VmRSS), 0 when
// it cannot be read.
func rssOf(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

// chromiumCPU sums the CPU time (user and system) every Chromium process
// has used, from /proc/PID/stat: over a print, divided by its time, how
// many cores Chromium kept busy (processes that ended meanwhile are not
// counted: a lower bound).
func chromiumCPU() time.Duration {
	var ticks int64
	for _, pid := range chromiumPIDs() {
		n, _ := cpuTicks(pid)
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// cpuTicks is the CPU time (user and system) a process has used, in
// clock ticks, from /proc/PID/stat.
func cpuTicks(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command's closing parenthesis: utime and stime
	// are the 12th and 13th.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) <= 12 {
		return 0, false
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s, true
}

// waitIdle waits (up to a minute) until Chromium's processes together use
// under a tenth of a core over half a second.
func waitIdle() {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		before := chromiumCPU()
		time.Sleep(500 * time.Millisecond)
		if chromiumCPU()-before < 50*time.Millisecond {
			return
		}
	}
}

// chromiumPIDs are the processes whose command line names Chromium.
func chromiumPIDs() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(string(cmd), "chrom") {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}
