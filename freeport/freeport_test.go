package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestLoopback: the ports are distinct, outside the ephemeral range and bindable.
func TestLoopback(t *testing.T) {
	lo, hi := ephemeral()
	ports, err := Loopback(20)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 20 {
		t.Fatalf("%d ports, want 20", len(ports))
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d twice", p)
		}
		seen[p] = true
		if p >= lo && p <= hi {
			t.Errorf("port %d inside the ephemeral range %d-%d", p, lo, hi)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d: %v", p, err)
			continue
		}
		l.Close()
	}
}
