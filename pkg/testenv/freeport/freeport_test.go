package freeport

import (
	"fmt"
	"net"
	"testing"
)

func TestPorts(t *testing.T) {
	ports, err := Ports(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < low || p >= ephemeralStart() {
			t.Errorf("port %d outside [%d, %d)", p, low, ephemeralStart())
		}
		if seen[p] {
			t.Errorf("port %d handed out twice", p)
		}
		seen[p] = true
		// Free: a server can bind it now.
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Errorf("port %d: %v", p, err)
			continue
		}
		l.Close()
	}
}

func TestPickSkipsBusyPorts(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	b := busy.Addr().(*net.TCPAddr).Port
	// A window of two ports, one of them in use: every draw must give the other.
	from := b
	if b%2 == 1 {
		from = b - 1
	}
	for range 50 {
		ports, err := pick(1, from, from+2)
		if err != nil {
			continue // the other port may be some other socket's now
		}
		if ports[0] == b {
			t.Fatalf("port %d is in use but was handed out", b)
		}
	}
	if _, err := pick(3, from, from+2); err == nil {
		t.Fatal("three distinct ports from a window of two")
	}
}

// A port handed out once is not handed out again by this process, even
// when nothing has bound it yet.
func TestPickRemembersGivenPorts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	from := l.Addr().(*net.TCPAddr).Port
	l.Close()
	first, err := pick(1, from, from+1)
	if err != nil {
		t.Skipf("port %d taken meanwhile: %v", from, err)
	}
	if again, err := pick(1, from, from+1); err == nil {
		t.Fatalf("port %d handed out twice (%v)", first[0], again)
	}
}

func TestAddr(t *testing.T) {
	a, err := Addr()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", a)
	if err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	l.Close()
}
