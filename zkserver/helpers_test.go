package zkserver

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zkproto"
)

// testTick keeps session timeouts short: min 2*tick, max 20*tick.
const testTick = 50 * time.Millisecond

type fixture struct {
	srv  *Server
	b    *Standalone
	addr string
}

// startServer runs a standalone server on a loopback port until the test ends.
func startServer(t testing.TB, cfg Config, now func() time.Time) *fixture {
	t.Helper()
	if cfg.Tick == 0 {
		cfg.Tick = testTick
	}
	b := NewStandalone(datatree.New(), now)
	return startWith(t, cfg, b, b)
}

func startWith(t testing.TB, cfg Config, b Backend, sb *Standalone) *fixture {
	t.Helper()
	srv, err := New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	sb.OnApplied(srv.Applied)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &fixture{srv: srv, b: sb, addr: ln.Addr().String()}
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// connect opens a go-zookeeper session and waits until it is established.
func (f *fixture) connect(t testing.TB, timeout time.Duration) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{f.addr}, timeout, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitState(t, events, zk.StateHasSession)
	return c
}

func waitState(t testing.TB, events <-chan zk.Event, want zk.State) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type == zk.EventSession && ev.State == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v within 10s", want)
		}
	}
}

// waitEvent returns the event on ch or fails after a while.
func waitEvent(t *testing.T, ch <-chan zk.Event) zk.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event within 5s")
	}
	return zk.Event{}
}

// noEvent checks that ch stays quiet while a round trip on c completes: events are
// queued before any later reply, so one round trip is enough to see a stray event.
func noEvent(t *testing.T, c *zk.Conn, ch <-chan zk.Event) {
	t.Helper()
	if _, _, err := c.Exists("/"); err != nil {
		t.Fatal(err)
	}
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("unexpected event %+v", ev)
		}
	default:
	}
}

// eventually polls cond until it holds, for server-side effects of a client's
// action that no reply orders (e.g. noticing a closed socket).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5s: %s", what)
		}
	}
}

// gate is a dialer for go-zookeeper that the test can shut, to keep a client away
// from the server for a while; shutting it also drops the client's connection.
type gate struct {
	closed atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func (g *gate) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	if g.closed.Load() {
		return nil, errors.New("gate closed")
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		g.mu.Lock()
		g.conns = append(g.conns, c)
		g.mu.Unlock()
	}
	return c, err
}

func (g *gate) shut() {
	g.closed.Store(true)
	g.mu.Lock()
	for _, c := range g.conns {
		c.Close()
	}
	g.conns = nil
	g.mu.Unlock()
}

func (g *gate) open() { g.closed.Store(false) }

// fakeClock is a manual clock for deterministic session expiry.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// rawClient speaks the protocol frame by frame with zkproto, to test what
// go-zookeeper cannot make: exact bytes, malformed frames, pipelining.
type rawClient struct {
	t    *testing.T
	nc   net.Conn
	resp zkproto.ConnectResponse
	xid  int32
}

func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return nc
}

// rawConnect performs a handshake; the response may be an expired one.
func rawConnect(t *testing.T, addr string, req zkproto.ConnectRequest) *rawClient {
	t.Helper()
	nc := dialRaw(t, addr)
	if _, err := nc.Write(zkproto.AppendFrame(nil, zkproto.Marshal(&req))); err != nil {
		t.Fatal(err)
	}
	frame, err := zkproto.ReadFrame(nc, 1<<20)
	if err != nil {
		t.Fatalf("connect response: %v", err)
	}
	c := &rawClient{t: t, nc: nc}
	if err := zkproto.Unmarshal(frame, &c.resp); err != nil {
		t.Fatal(err)
	}
	return c
}

func newRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	c := rawConnect(t, addr, zkproto.ConnectRequest{TimeOut: 2000, Passwd: make([]byte, 16), HasReadOnly: true})
	if c.resp.SessionID == 0 {
		t.Fatal("no session")
	}
	return c
}

// send writes one request and returns its xid.
func (c *rawClient) send(op zkproto.Op, body zkproto.Message) int32 {
	c.t.Helper()
	c.xid++
	frame := zkproto.EncodeRequest(zkproto.RequestHeader{Xid: c.xid, Type: op}, body)
	if _, err := c.nc.Write(zkproto.AppendFrame(nil, frame)); err != nil {
		c.t.Fatal(err)
	}
	return c.xid
}

// recv reads one reply (or event) and decodes it as a reply to op.
func (c *rawClient) recv(op zkproto.Op) (zkproto.ReplyHeader, zkproto.Message) {
	c.t.Helper()
	frame, err := zkproto.ReadFrame(c.nc, 1<<20)
	if err != nil {
		c.t.Fatalf("reading reply to %v: %v", op, err)
	}
	h, body, err := zkproto.DecodeReply(op, frame)
	if err != nil {
		c.t.Fatal(err)
	}
	return h, body
}

// call sends one request and reads its reply.
func (c *rawClient) call(op zkproto.Op, body zkproto.Message) (zkproto.ReplyHeader, zkproto.Message) {
	c.t.Helper()
	xid := c.send(op, body)
	h, resp := c.recv(op)
	if h.Xid != xid {
		c.t.Fatalf("reply xid %d, want %d", h.Xid, xid)
	}
	return h, resp
}

// expectClosed checks the server hangs up without sending anything more.
func expectClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	n, err := nc.Read(b[:])
	if n != 0 || err == nil {
		t.Fatalf("connection still open (read %d bytes, err %v)", n, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("connection still open after 5s")
	}
}
