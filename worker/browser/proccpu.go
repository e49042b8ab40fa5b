package browser

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProcessTreeCPU is the CPU time used so far by process root and every
// process below it, and by their children that ended (Linux /proc; 0
// elsewhere). Benchmarks read it around a run to tell what Chromium spent:
// its work happens in processes of its own.
func ProcessTreeCPU(root int) time.Duration {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	parent, ticks := map[int]int{}, map[int]int64{}
	for _, f := range stats {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(raw)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < 0 {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(s[:open]))
		fields := strings.Fields(s[end+1:])
		if len(fields) < 15 {
			continue
		}
		parent[pid], _ = strconv.Atoi(fields[1])
		for _, k := range fields[11:15] { // utime stime cutime cstime
			v, _ := strconv.ParseInt(k, 10, 64)
			ticks[pid] += v
		}
	}
	var total int64
	for pid, t := range ticks {
		for q := pid; q > 1; q = parent[q] {
			if q == root {
				total += t
				break
			}
		}
	}
	return time.Duration(total) * 10 * time.Millisecond // USER_HZ = 100
}
