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

// ReachableDir is a directory the Chromium of a pool started with user
// can reach, as such a pool picks it: TMPDIR, when it can.
func ReachableDir(user string) (string, error) {
	acct, err := chromiumAccount(user)
	if err != nil {
		return "", err
	}
	dir, _, err := defaultProfileRoot(acct)
	return dir, err
}
