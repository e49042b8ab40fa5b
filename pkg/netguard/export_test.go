package netguard

import "net"

// SetResolver swaps the policy's resolver (tests play a failing one).
func (p *Policy) SetResolver(r *net.Resolver) { p.resolver = r }
