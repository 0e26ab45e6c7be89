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
