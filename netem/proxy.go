package netem

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polebench/polebench/hiccup"
)

// Proxy is a user-space link for a program that does its own networking (Apache
// ZooKeeper): a TCP proxy between two servers that holds every chunk of bytes in each
// direction on that direction's DelayLine, the same model poled's own links use
// (delay and jitter from the plan's table, per-link order, window / RTT). A closed
// stream reaches the other side one link delay later, as a killed process's FIN does
// on a WAN. Each accepted connection gets fresh DelayLines (its own window).
//
// It also measures what it applied: the realized one-way delay of small chunks
// (heartbeat-sized, at most SmallChunk bytes), from reading a chunk to having written
// it, timer lateness included. Either direction can be cut (Cut): its bytes are held,
// as a partition drops TCP's packets and its retransmissions, until the heal.
type Proxy struct {
	ln     net.Listener
	cfg    ProxyConfig
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}

	out, back direction
}

// Direction is one way through a Proxy: Out what the accepted side sends to the
// target, Back the answer.
type Direction int

const (
	Out Direction = iota
	Back
)

// direction is what a Proxy keeps per way: what it measured and whether it is cut.
type direction struct {
	stat delayStat
	gate gate
}

// SmallChunk bounds the chunks whose delay a Proxy measures: heartbeats and
// acknowledgements, which no window holds back.
const SmallChunk = 256

// ProxyConfig configures a Proxy.
type ProxyConfig struct {
	Target string // host:port the proxy connects each accepted connection to
	// Out and Back make the lines of a new connection: Out delays what the accepted
	// side sends to Target, Back the answer.
	Out, Back func() (*DelayLine, error)
	// Rewrite, if set, reads the accepted side's first bytes and returns what to
	// forward instead (a handshake that names the sender's own address, say).
	Rewrite func(r io.Reader) ([]byte, error)
	Logger  *slog.Logger
	// Lateness counts how late each chunk was written after its scheduled arrival
	// (or after the previous write, when that ended later); nil: LinkLateness.
	Lateness *hiccup.Lateness
}

type delayStat struct {
	n, sumNS atomic.Int64
}

func (d *delayStat) add(ns int64) {
	d.n.Add(1)
	d.sumNS.Add(ns)
}

// mean is the mean delay measured so far, and how many chunks it counts.
func (d *delayStat) mean() (time.Duration, int64) {
	n := d.n.Load()
	if n == 0 {
		return 0, 0
	}
	return time.Duration(d.sumNS.Load() / n), n
}

// gate holds a direction's bytes while it is cut. A cut on a real network drops the
// packets and TCP sends them again after the heal, so the stream stalls rather than
// breaks: nothing is lost (a stream cannot lose bytes from its middle), nothing is
// reset, and the sender, whose bytes are no longer read, is pushed back as by a
// window that never opens. What either end does about a stalled connection (a read
// timeout, a redial) is its own.
type gate struct {
	mu     sync.Mutex
	healed atomic.Pointer[chan struct{}] // non-nil while cut: closed at the heal
}

func (g *gate) set(cut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.healed.Load()
	switch {
	case cut && h == nil:
		ch := make(chan struct{})
		g.healed.Store(&ch)
	case !cut && h != nil:
		g.healed.Store(nil)
		close(*h)
	}
}

// pass waits while the direction is cut: held says it had to, ok that ctx did not
// end first.
func (g *gate) pass(ctx context.Context) (held, ok bool) {
	h := g.healed.Load()
	if h == nil {
		return false, true
	}
	select {
	case <-*h:
		return true, true
	case <-ctx.Done():
		return true, false
	}
}

// Cut holds (cut) or lets flow again what the proxy carries in direction d, on every
// connection it has and will accept.
func (p *Proxy) Cut(d Direction, cut bool) {
	if d == Out {
		p.out.gate.set(cut)
	} else {
		p.back.gate.set(cut)
	}
}

// NewProxy serves ln until Close.
func NewProxy(ln net.Listener, cfg ProxyConfig) *Proxy {
	p := &Proxy{ln: ln, cfg: cfg, log: cfg.Logger, conns: map[net.Conn]struct{}{}}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.cfg.Lateness == nil {
		p.cfg.Lateness = LinkLateness
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.accept()
	return p
}

// Addr is where the proxy listens.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Measured returns the mean one-way delays of small chunks, out (toward Target) and
// back, with the number of chunks each mean counts.
func (p *Proxy) Measured() (out, back time.Duration, nOut, nBack int64) {
	out, nOut = p.out.stat.mean()
	back, nBack = p.back.stat.mean()
	return
}

// Close stops accepting, drops every connection and waits for its goroutines.
func (p *Proxy) Close() error {
	p.cancel()
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx.Err() != nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				p.log.Warn("proxy: accept", "addr", p.Addr(), "err", err)
			}
			return
		}
		if !p.track(c) {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(c)
		}()
	}
}

func (p *Proxy) serve(in net.Conn) {
	defer p.untrack(in)
	out, err := p.dial()
	if err != nil {
		p.log.Debug("proxy: dial", "target", p.cfg.Target, "err", err)
		return
	}
	if !p.track(out) {
		out.Close()
		return
	}
	defer p.untrack(out)
	for _, c := range []net.Conn{in, out} {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
	}
	outLine, err := p.cfg.Out()
	if err != nil {
		p.log.Error("proxy: link", "err", err)
		return
	}
	backLine, err := p.cfg.Back()
	if err != nil {
		p.log.Error("proxy: link", "err", err)
		return
	}
	var first []byte
	if p.cfg.Rewrite != nil {
		in.SetReadDeadline(time.Now().Add(10 * time.Second))
		if first, err = p.cfg.Rewrite(in); err != nil {
			p.log.Debug("proxy: handshake", "target", p.cfg.Target, "err", err)
			return
		}
		in.SetReadDeadline(time.Time{})
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pump(in, out, outLine, first, &p.out) }()
	go func() { defer wg.Done(); p.pump(out, in, backLine, nil, &p.back) }()
	wg.Wait()
}

// ProxyDialHold is how long a proxy keeps dialing a target that refuses. The client
// has already connected to the proxy, so a refusal would reach it as a connection that
// opens and at once closes, which programs take for a broken peer (a ZooKeeper
// follower whose leader is not listening yet starts a new election), not for the
// refused connection they retry. Held, the client sees a slow connection, as with a
// SYN retransmitted to a host that is not there yet.
const ProxyDialHold = 3 * time.Second

func (p *Proxy) dial() (net.Conn, error) {
	ctx, cancel := context.WithTimeout(p.ctx, ProxyDialHold)
	defer cancel()
	d := net.Dialer{Timeout: time.Second}
	for {
		c, err := d.DialContext(ctx, "tcp", p.cfg.Target)
		if err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// chunk is bytes read at read (Now) that arrive at arrive; nil b is the stream's end.
// held: a cut held it on the link (its delay is not the link's, and is not measured).
type chunk struct {
	read, arrive int64
	b            []byte
	held         bool
}

// pump carries src's bytes to dst through line. The reader holds a chunk until the
// window lets it depart (so a slow link pushes back on the sender, as TCP does); the
// writer holds it until it arrives.
func (p *Proxy) pump(src, dst net.Conn, line *DelayLine, first []byte, dir *direction) {
	q := make(chan chunk, 4096)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		p.deliver(q, src, dst, dir)
	}()
	defer func() { <-writerDone }()
	defer close(q)
	w, err := NewWaker()
	if err != nil {
		p.log.Error("proxy: no timer", "err", err)
		return
	}
	defer w.Close()
	stop := context.AfterFunc(p.ctx, w.Close)
	defer stop()
	send := func(b []byte) bool {
		// Read but not sent while cut: it departs at the heal.
		if _, ok := dir.gate.pass(p.ctx); !ok {
			return false
		}
		now := Now()
		depart, arrive := line.Schedule(time.Unix(0, now), len(b))
		if err := w.SleepUntil(depart.UnixNano()); err != nil {
			return false
		}
		select {
		case q <- chunk{read: now, arrive: arrive.UnixNano(), b: b}:
			return true
		case <-writerDone:
			return false
		}
	}
	if len(first) > 0 && !send(first) {
		return
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !send(append([]byte(nil), buf[:n]...)) {
			return
		}
		if err != nil {
			// The stream ended: its end reaches the other side one link delay later,
			// after every byte sent before it.
			send(nil)
			return
		}
	}
}

// deliver writes each chunk at its arrival; at the stream's end it half-closes dst.
// If dst fails, src's reading side is shut so the reader stops too. A chunk on the
// link when its direction is cut is held too, and arrives no sooner than its delay
// after the heal: what was in flight is sent again.
func (p *Proxy) deliver(q <-chan chunk, src, dst net.Conn, dir *direction) {
	w, err := NewWaker()
	if err != nil {
		p.log.Error("proxy: no timer", "err", err)
		src.Close()
		return
	}
	defer w.Close()
	stop := context.AfterFunc(p.ctx, w.Close)
	defer stop()
	failed := false
	free := Now() // when the previous write returned, at first when delivery began
	for c := range q {
		if failed {
			continue
		}
		if !p.arrive(w, &c, &dir.gate) {
			failed = true
			continue
		}
		if c.b == nil {
			if tc, ok := dst.(*net.TCPConn); ok {
				tc.CloseWrite()
			} else {
				dst.Close()
			}
			continue
		}
		// Counted as it leaves, before the write: the peer may answer before a
		// count after it, and a reader of Measured would miss the chunk.
		now := Now()
		p.cfg.Lateness.Record(time.Duration(now - max(c.arrive, free)))
		if len(c.b) <= SmallChunk && !c.held {
			dir.stat.add(now - c.read)
		}
		_, err := dst.Write(c.b)
		free = Now()
		if err != nil {
			failed = true
			if tc, ok := src.(*net.TCPConn); ok {
				tc.CloseRead()
			} else {
				src.Close()
			}
			continue
		}
	}
}

// arrive waits until c arrives and its direction is not cut; a cut that held it moves
// its arrival to its delay after the heal. False: the proxy closed.
func (p *Proxy) arrive(w *Waker, c *chunk, g *gate) bool {
	delay := c.arrive - c.read
	for {
		if err := w.SleepUntil(c.arrive); err != nil {
			return false
		}
		held, ok := g.pass(p.ctx)
		if !ok {
			return false
		}
		if !held {
			return true
		}
		c.held, c.arrive = true, Now()+delay
	}
}
