// Package netguard decides which network addresses docrender may reach on a
// user's behalf (rendered pages, webhooks) and dials only those. The check
// runs on the resolved IP at dial time, so a DNS name that points at a
// private address, or changes to one between check and use, is refused too.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/docrender/docrender/pkg/invalid"
)

// ErrBlocked is returned (wrapped) for an address the policy refuses.
var ErrBlocked = errors.New("netguard: address not allowed")

// ErrResolver is a lookup that failed for a reason other than the name not
// existing (the resolver timed out or is unreachable): worth a retry, and
// not the client's fault.
var ErrResolver = errors.New("netguard: the resolver failed")

// blockedNets are ranges never reached unless allow-listed: loopback,
// private, link-local (and so cloud metadata), CGNAT, benchmarking,
// reserved, multicast; for IPv6 also the deprecated IPv4-compatible
// range (::/96, which holds :: and ::1), unique-local and NAT64.
var blockedNets = mustPrefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15",
	"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
	"::/96", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001:db8::/32",
	"fc00::/7", "fe80::/10", "ff00::/8",
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Public reports whether ip is an ordinary public address. A zoned IPv6
// address (fe80::1%eth0, ::1%lo) never is: a zone names a local interface,
// and netip's prefixes match no zoned address, so it would slip past them.
func Public(ip netip.Addr) bool {
	if ip.Zone() != "" {
		return false
	}
	ip = ip.Unmap()
	if !ip.IsValid() {
		return false
	}
	for _, p := range blockedNets {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// Policy allows public addresses and the listed hosts ("host" or "host:port").
type Policy struct {
	allow    map[string]bool
	resolver *net.Resolver
	dialer   net.Dialer
	// memo, when set (Memoized), keeps ResolveURL's answers by host:port.
	memo *sync.Map
}

type resolved struct {
	ips []netip.Addr
	err error
}

// Memoized is p answering each host:port's ResolveURL once: for checking
// many URLs of one request (a batch's documents), never for a long-lived
// policy (DNS changes).
func (p *Policy) Memoized() *Policy {
	return &Policy{allow: p.allow, resolver: p.resolver, dialer: p.dialer, memo: &sync.Map{}}
}

// New returns a policy with an allow-list.
func New(allow []string) *Policy {
	p := &Policy{allow: map[string]bool{}, resolver: net.DefaultResolver, dialer: net.Dialer{Timeout: 10 * time.Second}}
	for _, h := range allow {
		p.allow[strings.ToLower(strings.Trim(h, "[]"))] = true
	}
	return p
}

func (p *Policy) allowed(host, port string) bool {
	host = strings.ToLower(strings.Trim(host, "[]"))
	return p.allow[host] || p.allow[net.JoinHostPort(host, port)] || p.allow[host+":"+port]
}

// Resolve returns the addresses of host:port that the policy lets us reach,
// or ErrBlocked.
func (p *Policy) Resolve(ctx context.Context, host, port string) ([]netip.Addr, error) {
	host = strings.Trim(host, "[]")
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		ips, err = p.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("netguard: resolve %s: %w", host, err)
		}
	}
	if p.allowed(host, port) && !zoned(ips) {
		return ips, nil
	}
	for _, ip := range ips {
		if !Public(ip) {
			return nil, fmt.Errorf("%w: %s resolves to %s", ErrBlocked, host, ip)
		}
	}
	return ips, nil
}

// CheckURL validates a client's URL field (a webhook, a page to render):
// absolute http(s) with a host, no credentials, at most 8 KiB, reachable
// under the policy now. It returns the URL without its fragment, or an
// *invalid.Error naming field (ErrResolver when the lookup failed without
// an answer: no verdict on the URL). The policy is applied again when the URL is
// used (DNS may change, redirects may lead elsewhere): this check gives the
// client an early, clear answer.
func (p *Policy) CheckURL(ctx context.Context, field, raw, credentialsHint string) (string, error) {
	s := strings.TrimSpace(raw)
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return "", invalid.Field(field, "must be an absolute http or https URL")
	}
	if u.User != nil {
		return "", invalid.Field(field, "must not carry credentials; "+credentialsHint)
	}
	if len(s) > 8<<10 {
		return "", invalid.Field(field, "at most 8192 characters")
	}
	if _, err := p.ResolveURL(ctx, u); err != nil {
		var dns *net.DNSError
		switch {
		case errors.Is(err, ErrBlocked):
			return "", invalid.Field(field, "points at a private, loopback or link-local address")
		case ctx.Err() != nil:
			return "", ctx.Err()
		case errors.As(err, &dns) && !dns.IsNotFound:
			return "", fmt.Errorf("%w: %w", ErrResolver, err)
		}
		return "", invalid.Field(field, "host cannot be resolved")
	}
	u.Fragment = ""
	return u.String(), nil
}

// ResolveURL is Resolve for an http(s) URL's host and port (the scheme's
// default when none is given).
func (p *Policy) ResolveURL(ctx context.Context, u *url.URL) ([]netip.Addr, error) {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if p.memo == nil {
		return p.Resolve(ctx, u.Hostname(), port)
	}
	key := net.JoinHostPort(u.Hostname(), port)
	if r, ok := p.memo.Load(key); ok {
		return r.(resolved).ips, r.(resolved).err
	}
	ips, err := p.Resolve(ctx, u.Hostname(), port)
	p.memo.Store(key, resolved{ips, err})
	return ips, err
}

// zoned reports whether any of ips carries an IPv6 zone: allowing a host
// never allows reaching it through an interface named by the client.
func zoned(ips []netip.Addr) bool {
	for _, ip := range ips {
		if ip.Zone() != "" {
			return true
		}
	}
	return false
}

// DialContext dials addr after checking every address it resolves to, and
// connects to exactly a checked address.
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("netguard: %w", err)
	}
	ips, err := p.Resolve(ctx, host, port)
	if err != nil {
		return nil, err
	}
	var last error
	for _, ip := range ips {
		c, err := p.dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, fmt.Errorf("netguard: dial %s: %w", addr, last)
}
