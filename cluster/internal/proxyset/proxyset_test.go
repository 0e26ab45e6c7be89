package proxyset

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/polebench/polebench/netem"
)

// conn is one connection through the set: the dialer's end and the accepted one.
type conn struct{ dialer, accepted net.Conn }

// through dials a proxy from server from to server to and returns both ends.
func through(t *testing.T, s *Set, from, to int) conn {
	t.Helper()
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	line := func(a, b int) func() (*netem.DelayLine, error) {
		return func() (*netem.DelayLine, error) {
			return netem.NewDelayLine(netem.Link{From: a, To: b, Delay: time.Millisecond, Dist: netem.DistPareto}, 0, 1)
		}
	}
	p := netem.NewProxy(ln, netem.ProxyConfig{Target: target.Addr().String(), Out: line(from, to), Back: line(to, from)})
	s.Add(from, to, p)
	d, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	target.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
	a, err := target.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return conn{d, a}
}

// flows says whether a byte written on w is read on r within a while (as long as a
// cut lasts here); a held one is read later by drain.
func flows(t *testing.T, w, r net.Conn) bool {
	t.Helper()
	if _, err := w.Write([]byte{'x'}); err != nil {
		t.Fatal(err)
	}
	r.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	defer r.SetReadDeadline(time.Time{})
	var b [1]byte
	n, _ := r.Read(b[:])
	return n == 1
}

func drain(t *testing.T, r net.Conn) {
	t.Helper()
	r.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer r.SetReadDeadline(time.Time{})
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		t.Fatalf("a held byte after the heal: %v", err)
	}
}

// TestCut: a one-way cut (1, 2) holds what 1 sends 2 on both connections between
// them, the one 1 dialed (its Out) and the one 2 dialed (its Back), and lets 2's
// bytes to 1 flow; a cut both ways holds all four; the heal lets the held bytes
// through.
func TestCut(t *testing.T) {
	var s Set
	defer s.Close()
	c12, c21 := through(t, &s, 1, 2), through(t, &s, 2, 1)
	// The four ways, by who sends to whom.
	oneToTwo := [][2]net.Conn{{c12.dialer, c12.accepted}, {c21.accepted, c21.dialer}}
	twoToOne := [][2]net.Conn{{c12.accepted, c12.dialer}, {c21.dialer, c21.accepted}}
	ctx := context.Background()
	for _, tc := range []struct {
		both     bool
		backHeld bool // 2's bytes to 1 held too
	}{{false, false}, {true, true}} {
		s.Cut(ctx, [][2]int{{1, 2}}, tc.both, true)
		var held [][2]net.Conn
		for _, w := range oneToTwo {
			if flows(t, w[0], w[1]) {
				t.Errorf("both=%v: 1's bytes reached 2 through a cut", tc.both)
			}
			held = append(held, w)
		}
		for _, w := range twoToOne {
			if got := flows(t, w[0], w[1]); got == tc.backHeld {
				t.Errorf("both=%v: 2's bytes to 1 flow: %v, want %v", tc.both, got, !tc.backHeld)
			}
			if tc.backHeld {
				held = append(held, w)
			}
		}
		s.Cut(ctx, [][2]int{{1, 2}}, tc.both, false)
		for _, w := range held {
			drain(t, w[1])
		}
		for _, w := range append(oneToTwo, twoToOne...) {
			if !flows(t, w[0], w[1]) {
				t.Errorf("both=%v: no byte crossed after the heal", tc.both)
			}
		}
	}
}
