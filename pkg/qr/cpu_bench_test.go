package qr

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPNG200CPU is BenchmarkPNG200 measured in CPU time as well as
// wall time: PNGs per CPU-second is PNGs/s per core however busy the
// machine is (wall-clock PNGs/s drops on a shared machine when other
// processes take the core; CPU time only counts ours, GC included). Run
// with -cpu 1.
func BenchmarkPNG200CPU(b *testing.B) {
	for _, c := range []struct{ name, data string }{
		{"v1", "INV-2024-000123"},        // alphanumeric, 21 modules
		{"v2", "https://example.com/x1"}, // byte, 25 modules
		{"v3", "https://tickets.example/t/0001"},
		{"v4", benchData}, // byte, 33 modules
	} {
		b.Run(c.name, func(b *testing.B) {
			o := NewOptions(c.data)
			start := cpuTime(b)
			for b.Loop() {
				if _, err := PNG(o); err != nil {
					b.Fatal(err)
				}
			}
			cpu := cpuTime(b) - start
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "PNGs/s")
			b.ReportMetric(float64(b.N)/cpu.Seconds(), "PNGs/cpu-s")
		})
	}
}
