package browser

import "time"

// SetBinary swaps the Chromium the next launch runs.
func (p *Pool) SetBinary(bin string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg.Bin = bin
}

// SetUnhealthyAfter shortens how long the browser may be gone before
// Healthy fails.
func (p *Pool) SetUnhealthyAfter(d time.Duration) { p.unhealthy.Store(int64(d)) }
