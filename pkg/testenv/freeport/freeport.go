// Package freeport chooses loopback ports for servers a test starts in
// another process, which must be told their address before they bind it.
//
// The usual trick, binding port 0 and closing it, hands out a port from the
// kernel's ephemeral range, where the kernel gives ports away at any moment
// to every outgoing connection and every other port-0 bind: between the
// close and the child's bind, another socket may take it ("address already
// in use", a flaky start). Ports below that range are never given out by the
// kernel on its own, so only another explicit choice can collide, and the
// check below sees any that already holds one.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
)

// low is the first port handed out; below it are well-known services.
const low = 10000

// given are the ports this process handed out: a server told its port may
// not have bound it yet when the next is chosen.
var given = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Ports returns n distinct loopback ports that nothing listens on now,
// below the kernel's ephemeral range.
func Ports(n int) ([]int, error) {
	top := ephemeralStart()
	if top-low < 1000 {
		return nil, fmt.Errorf("freeport: ephemeral range starts at %d: no room below it", top)
	}
	return pick(n, low, top)
}

// pick chooses n distinct free ports in [from, to).
func pick(n, from, to int) ([]int, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			return nil, errors.New("freeport: no free loopback port found")
		}
		p := from + rand.IntN(to-from)
		given.Lock()
		taken := given.ports[p]
		given.Unlock()
		if taken {
			continue
		}
		// Held until all are chosen, so the n ports are distinct.
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		held = append(held, l)
		ports = append(ports, p)
	}
	given.Lock()
	for _, p := range ports {
		given.ports[p] = true
	}
	given.Unlock()
	return ports, nil
}

// Addr returns "127.0.0.1:PORT" for one such port.
func Addr() (string, error) {
	p, err := Ports(1)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", p[0]), nil
}

// ephemeralStart is the first port of the kernel's ephemeral range (Linux;
// 32768, its default, elsewhere).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil || lo <= low {
		return 32768
	}
	return lo
}
