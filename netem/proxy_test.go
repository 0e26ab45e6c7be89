package netem

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/polebench/polebench/hiccup"
)

// echoServer answers each line with the same line; it closes on EOF.
func echoServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln
}

func proxyTo(t *testing.T, target string, delay time.Duration) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	line := func(from, to int) func() (*DelayLine, error) {
		return func() (*DelayLine, error) {
			return NewDelayLine(Link{From: from, To: to, Delay: delay, Dist: DistPareto}, 0, 1)
		}
	}
	p := NewProxy(ln, ProxyConfig{Target: target, Out: line(1, 2), Back: line(2, 1)})
	t.Cleanup(func() { p.Close() })
	return p
}

// TestProxy: bytes cross a proxy with the link's delay each way (an echo takes an RTT,
// never less), in order; the proxy measures the delays it applied; the target's close
// reaches the client one link delay after it; a cut proxy drops its connections.
func TestProxy(t *testing.T) {
	const delay = 15 * time.Millisecond
	echo := echoServer(t)
	p := proxyTo(t, echo.Addr().String(), delay)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for i := range 10 {
		t0 := time.Now()
		msg := string(rune('a'+i)) + "\n"
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
		got, err := r.ReadString('\n')
		if err != nil || got != msg {
			t.Fatalf("echo %d: %q, %v; want %q", i, got, err, msg)
		}
		if rtt := time.Since(t0); rtt < 2*delay {
			t.Fatalf("echo %d took %v, less than the RTT %v", i, rtt, 2*delay)
		}
	}
	out, back, nOut, nBack := p.Measured()
	if nOut != 10 || nBack != 10 || out < delay || back < delay {
		t.Errorf("measured %v over %d chunks out, %v over %d back; want 10 each of at least %v", out, nOut, back, nBack, delay)
	}
	// The client half-closes; the echo server closes; both ends cross the link.
	t0 := time.Now()
	c.(*net.TCPConn).CloseWrite()
	if _, err := r.ReadString('\n'); err != io.EOF {
		t.Fatalf("after the close: %v, want EOF", err)
	}
	if el := time.Since(t0); el < 2*delay {
		t.Errorf("the close came back after %v, before an RTT (%v)", el, 2*delay)
	}

	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	io.WriteString(c2, "x\n")
	if _, err := bufio.NewReader(c2).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
}

// TestProxyHoldsDial: a client that connects before its target listens is held, not
// dropped, and served once the target comes up.
func TestProxyHoldsDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := proxyTo(t, addr, time.Millisecond)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "early\n")
	time.Sleep(200 * time.Millisecond)
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	defer ln2.Close()
	s, err := ln2.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := bufio.NewReader(s).ReadString('\n')
	if err != nil || got != "early\n" {
		t.Fatalf("target read %q, %v; want what the client sent before it listened", got, err)
	}
}

// TestProxyLateness: every chunk the proxy writes is counted in its Lateness, each way.
func TestProxyLateness(t *testing.T) {
	echo := echoServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	line := func() (*DelayLine, error) {
		return NewDelayLine(Link{From: 1, To: 2, Delay: time.Millisecond, Dist: DistPareto}, 0, 1)
	}
	var late hiccup.Lateness
	p := NewProxy(ln, ProxyConfig{Target: echo.Addr().String(), Out: line, Back: line, Lateness: &late})
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for i := range 10 {
		msg := string(rune('a'+i)) + "\n"
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
		if got, err := r.ReadString('\n'); err != nil || got != msg {
			t.Fatalf("echo %d: %q, %v; want %q", i, got, err, msg)
		}
	}
	if s := late.Take(); s.N != 20 || s.P99 > s.Max {
		t.Errorf("lateness of %d chunks (p99 %v, max %v); want 20, p99 at most the max", s.N, s.P99, s.Max)
	}
}

// TestProxyCut: a cut direction holds its bytes (none reach the other side while it
// lasts) and the other way still flows; at the heal what was held arrives, in order
// and whole, on a connection that never broke, bytes on the link at the cut too; a
// connection accepted during the cut is cut too; the stall is not counted among the
// link's measured delays (their sum, across the cut, stays below the cut's length).
func TestProxyCut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	served := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			served <- c
		}
	}()
	p := proxyTo(t, ln.Addr().String(), 30*time.Millisecond)
	dial := func() (client, server net.Conn) {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		select {
		case s := <-served:
			return c, s
		case <-time.After(10 * time.Second):
			t.Fatal("the proxy did not connect to its target")
		}
		return nil, nil
	}
	send := func(c net.Conn, msg string) {
		t.Helper()
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
	}
	// nothing says no byte reaches c within a while (as long as a cut lasts here).
	nothing := func(c net.Conn, what string) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		var b [1]byte
		if n, err := c.Read(b[:]); n > 0 || err == nil {
			t.Fatalf("%s: %q crossed a cut direction", what, b[:n])
		}
		c.SetReadDeadline(time.Time{})
	}
	recv := func(c net.Conn, want string) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got := make([]byte, len(want))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
			t.Fatalf("read %q (%v), want %q", got, err, want)
		}
		c.SetReadDeadline(time.Time{})
	}
	for _, d := range []Direction{Out, Back} {
		client, server := dial()
		from, to := client, server // the cut way
		if d == Back {
			from, to = server, client
		}
		send(from, "x")
		recv(to, "x")
		sum0 := sumOf(p, d)
		send(from, "in-flight ")
		p.Cut(d, true)
		cutAt := time.Now()
		send(from, "held-1 ")
		send(from, "held-2")
		nothing(to, "the cut way")
		send(to, "open")
		recv(from, "open")
		late, lateServer := dial() // accepted while cut
		lateFrom, lateTo := late, lateServer
		if d == Back {
			lateFrom, lateTo = lateServer, late
		}
		send(lateFrom, "new")
		nothing(lateTo, "a connection accepted during the cut")
		p.Cut(d, false)
		cut := time.Since(cutAt)
		recv(to, "in-flight held-1 held-2")
		recv(lateTo, "new")
		send(from, "after")
		recv(to, "after")
		if sum := sumOf(p, d) - sum0; sum >= cut {
			t.Errorf("direction %d: the delays measured across the cut sum to %v, the cut lasted %v: the stall was counted", d, sum, cut)
		}
	}
}

// sumOf is the sum of the delays p measured in direction d.
func sumOf(p *Proxy, d Direction) time.Duration {
	out, back, nOut, nBack := p.Measured()
	if d == Back {
		return back * time.Duration(nBack)
	}
	return out * time.Duration(nOut)
}
