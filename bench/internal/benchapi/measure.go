package benchapi

import (
	"slices"
	"sync"
	"time"
)

// Result is a closed-loop measurement: how long it ran and each call's
// latency, sorted.
type Result struct {
	Elapsed time.Duration
	Lat     []time.Duration
}

// Rate is calls per second.
func (r Result) Rate() float64 { return float64(len(r.Lat)) / r.Elapsed.Seconds() }

// P50 and P95 are latency percentiles.
func (r Result) P50() time.Duration { return r.Lat[len(r.Lat)/2] }
func (r Result) P95() time.Duration { return r.Lat[len(r.Lat)*95/100] }

// Add merges another round's measurement into r.
func (r *Result) Add(o Result) {
	r.Elapsed += o.Elapsed
	r.Lat = append(r.Lat, o.Lat...)
	slices.Sort(r.Lat)
}

// Measure runs fn from c clients in a closed loop for d, after one warm-up
// call each (n = 0, not measured); n counts a client's measured calls from 0.
// The first error stops the measurement and is returned.
func Measure(c int, d time.Duration, fn func(client, n int) error) (Result, error) {
	for i := range c {
		if err := fn(i, 0); err != nil {
			return Result{}, err
		}
	}
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i := range c {
		wg.Go(func() {
			for n := 0; time.Now().Before(deadline); n++ {
				t := time.Now()
				err := fn(i, n)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					lat = append(lat, time.Since(t))
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return Result{}, firstErr
	}
	slices.Sort(lat)
	return Result{Elapsed: time.Since(start), Lat: lat}, nil
}

// Ms is d in milliseconds, for the tables.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
