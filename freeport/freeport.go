// Package freeport finds TCP ports on loopback for servers the harness starts as
// other processes (ZooKeeper's JVMs, poled binaries), which bind them later.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Floor is the lowest port Loopback hands out: above the ports the harness binds by
// number, the swarm backend's published client and admin ports (swarm.PortBase, 21800,
// up to PortBase+199). From 10000 up, a CI rehearsal's swarm tests found 21801 and
// 21802 taken by another package's test beside them ("address already in use").
const Floor = 22000

// Loopback returns n distinct ports free on 127.0.0.1 now, outside the kernel's
// ephemeral range. A port the kernel handed out for a listen on :0 lies inside that
// range, where an outgoing connection (a proxy dialing, a client reconnecting) may
// take it as its source port before the server given it binds it: a JVM started
// seconds later then fails with "Address already in use" (seen here on the local
// ZooKeeper flavor). The search starts at a random port, so processes allocating at
// the same time rarely meet.
func Loopback(n int) ([]int, error) {
	lo, hi := ephemeral()
	// Below the ephemeral range from Floor up, else above it.
	first, last := Floor, lo-1
	if last-first < 4*n {
		first, last = hi+1, 65535
	}
	if last-first < 4*n {
		return nil, fmt.Errorf("freeport: no room outside the ephemeral range %d-%d for %d ports", lo, hi, n)
	}
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	span := last - first + 1
	start := rand.IntN(span)
	var ports []int
	for i := 0; i < span && len(ports) < n; i++ {
		p := first + (start+i)%span
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // taken
		}
		lns = append(lns, l)
		ports = append(ports, p)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("freeport: only %d of %d ports free in %d-%d", len(ports), n, first, last)
	}
	return ports, nil
}

// ephemeral is the kernel's range of source ports (Linux's default when it cannot
// be read).
func ephemeral() (lo, hi int) {
	lo, hi = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	l, err1 := strconv.Atoi(f[0])
	h, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || l > h {
		return lo, hi
	}
	return l, h
}
