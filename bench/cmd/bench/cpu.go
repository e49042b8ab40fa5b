package main

import (
	"fmt"
	"syscall"
	"time"

	"github.com/docrender/docrender/bench/internal/benchapi"
	"github.com/docrender/docrender/worker/browser"
)

// CPU per PDF is the measure that the machine's other work disturbs least:
// throughput on two shared cores moves with whatever else runs, the CPU
// time a PDF costs hardly. At a concurrency that keeps the cores busy, the
// ratio of the CPU per PDF is the ratio of the throughputs.

// selfCPU is this process's own CPU time (the service's Go side, or the
// bare loop's rod client, whichever ran).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuCost is the CPU one PDF of fn costs: in the browser below browserPID
// and in this process.
type cpuCost struct{ browser, self time.Duration }

func (c cpuCost) total() time.Duration { return c.browser + c.self }

// measureCPU runs n calls of fn from c clients and divides the CPU they
// used by n. It waits a moment after the last call: a tab's cleaning after
// a job is part of what the job costs.
func measureCPU(c, n int, browserPID int, fn func(client, n int) error) (cpuCost, error) {
	if _, err := benchapi.Measure(c, 0, fn); err != nil { // warm-up
		return cpuCost{}, err
	}
	time.Sleep(300 * time.Millisecond)
	b0, s0 := browser.ProcessTreeCPU(browserPID), selfCPU()
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	errs := make(chan error, c)
	for i := range c {
		go func() {
			for k := range next {
				if err := fn(i, k+1); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range c {
		if err := <-errs; err != nil {
			return cpuCost{}, err
		}
	}
	time.Sleep(300 * time.Millisecond)
	b1, s1 := browser.ProcessTreeCPU(browserPID), selfCPU()
	return cpuCost{browser: (b1 - b0) / time.Duration(n), self: (s1 - s0) / time.Duration(n)}, nil
}

// cpuTable prints the CPU per PDF of the service and of the bare loops.
func cpuTable(cs []int, n int, sides []cpuSide) error {
	fmt.Printf("\nCPU per PDF (ms; browser processes + this process's Go side), %d PDFs per side and level\n", n)
	fmt.Printf("%-4s", "c")
	for _, s := range sides {
		fmt.Printf(" | %-28s", s.name)
	}
	fmt.Printf(" | %s\n", "ratio: "+sides[len(sides)-1].name+" CPU / service CPU")
	for _, c := range cs {
		fmt.Printf("%-4d", c)
		var costs []cpuCost
		for _, s := range sides {
			cost, err := measureCPU(c, n, s.pid, s.fn)
			if err != nil {
				return fmt.Errorf("cpu %s at %d: %w", s.name, c, err)
			}
			costs = append(costs, cost)
			fmt.Printf(" | %5.1f + %5.1f = %5.1f        ", benchapi.Ms(cost.browser), benchapi.Ms(cost.self), benchapi.Ms(cost.total()))
		}
		fmt.Printf(" | %5.2f\n", float64(costs[len(costs)-1].total())/float64(costs[0].total()))
	}
	return nil
}

type cpuSide struct {
	name string
	pid  int
	fn   func(client, n int) error
}
