package netguard_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/netguard"
)

func TestPublic(t *testing.T) {
	tests := []struct {
		ip   string
		want bool
	}{
		{"8.8.8.8", true},
		{"2606:4700::1111", true},
		{"127.0.0.1", false},
		{"127.8.9.10", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false},
		{"100.64.0.1", false},
		{"0.0.0.0", false},
		{"::1", false},
		{"::", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"fe80::1", false},
		{"fd00:ec2::254", false},
		{"64:ff9b::7f00:1", false},
		{"224.0.0.1", false},
		// Zoned addresses: netip prefixes contain no zoned address, so
		// without the zone rule these would all pass as public.
		{"::1%lo", false},
		{"::1%1", false},
		{"fe80::1%eth0", false},
		{"2606:4700::1111%eth0", false},
		{"::ffff:127.0.0.1%lo", false},
		// More forms of loopback, private and special addresses.
		{"::ffff:169.254.169.254", false},
		{"::ffff:8.8.8.8", true},
		{"0:0:0:0:0:0:0:1", false},
		{"::127.0.0.1", false},
		{"fc00::1", false},
		{"ff02::1", false},
		{"100::1", false},
		{"2001:db8::1", false},
		{"64:ff9b:1::1", false},
		{"198.18.0.1", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},
		{"192.0.0.170", false},
		{"1.1.1.1", true},
	}
	for _, tc := range tests {
		if got := netguard.Public(netip.MustParseAddr(tc.ip)); got != tc.want {
			t.Errorf("Public(%s) = %v, want %v", tc.ip, got, tc.want)
		}
	}
}

func TestDialBlocksLoopbackUnlessAllowed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	ctx := context.Background()
	tests := []struct {
		name   string
		allow  []string
		target string
		ok     bool
	}{
		{"ip blocked", nil, addr, false},
		{"name blocked", nil, "localhost:" + port, false},
		{"host:port allowed", []string{addr}, addr, true},
		{"host allowed", []string{"127.0.0.1"}, addr, true},
		{"other port not allowed", []string{"127.0.0.1:1"}, addr, false},
		{"zoned loopback", nil, "[::1%lo]:" + port, false},
		{"zoned loopback by index", nil, "[::1%1]:" + port, false},
		{"zoned loopback even if ::1 allowed", []string{"::1"}, "[::1%lo]:" + port, false},
		{"zoned link-local", nil, "[fe80::1%lo]:" + port, false},
		{"mapped loopback", nil, "[::ffff:127.0.0.1]:" + port, false},
		{"unspecified", nil, "0.0.0.0:" + port, false},
		{"unspecified v6", nil, "[::]:" + port, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := netguard.New(tc.allow).DialContext(ctx, "tcp", tc.target)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
				return
			}
			if !errors.Is(err, netguard.ErrBlocked) {
				t.Fatalf("err = %v, want ErrBlocked", err)
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	p := netguard.New([]string{"127.0.0.1:8080"})
	for _, tc := range []struct {
		in, want, problem string
	}{
		{"http://93.184.215.14/a?b=c#frag", "http://93.184.215.14/a?b=c", ""},
		{" http://127.0.0.1:8080/ ", "http://127.0.0.1:8080/", ""}, // allow-listed
		{"http://127.0.0.1:8081/", "", "private"},
		{"http://[::1]/", "", "private"},
		{"http://169.254.169.254/latest/meta-data/", "", "private"},
		{"ftp://example.com/", "", "absolute http"},
		{"file:///etc/passwd", "", "absolute http"},
		{"javascript:alert(1)", "", "absolute http"},
		{"https://user:pw@93.184.215.14/", "", "credentials"},
		{"/relative", "", "absolute http"},
		{"https://", "", "absolute http"},
		{"http://no-such-host.invalid/", "", "resolved"},
	} {
		got, err := p.CheckURL(t.Context(), "url", tc.in, "use headers")
		var bad *invalid.Error
		switch {
		case tc.problem == "" && (err != nil || got != tc.want):
			t.Errorf("CheckURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.problem != "" && (!errors.As(err, &bad) || bad.Field != "url" || !strings.Contains(bad.Problem, tc.problem)):
			t.Errorf("CheckURL(%q) = %v; want a problem with url mentioning %q", tc.in, err, tc.problem)
		}
	}
}

// A resolver that gives no answer is not the client's fault: CheckURL says
// so with ErrResolver instead of calling the URL unresolvable.
func TestCheckURLResolverDown(t *testing.T) {
	p := netguard.New(nil)
	p.SetResolver(&net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("resolver unreachable")
	}})
	_, err := p.CheckURL(t.Context(), "url", "http://example.com/", "use headers")
	var bad *invalid.Error
	if !errors.Is(err, netguard.ErrResolver) || errors.As(err, &bad) {
		t.Fatalf("err = %v, want ErrResolver and no verdict on the field", err)
	}
}
