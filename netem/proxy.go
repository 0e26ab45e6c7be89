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
// it, timer lateness included.
type Proxy struct {
	ln     net.Listener
	cfg    ProxyConfig
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}

	out, back delayStat
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
	out, nOut = p.out.mean()
	back, nBack = p.back.mean()
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
type chunk struct {
	read, arrive int64
	b            []byte
}

// pump carries src's bytes to dst through line. The reader holds a chunk until the
// window lets it depart (so a slow link pushes back on the sender, as TCP does); the
// writer holds it until it arrives.
func (p *Proxy) pump(src, dst net.Conn, line *DelayLine, first []byte, stat *delayStat) {
	q := make(chan chunk, 4096)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		p.deliver(q, src, dst, stat)
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
// If dst fails, src's reading side is shut so the reader stops too.
func (p *Proxy) deliver(q <-chan chunk, src, dst net.Conn, stat *delayStat) {
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
		if err := w.SleepUntil(c.arrive); err != nil {
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
		if len(c.b) <= SmallChunk {
			stat.add(now - c.read)
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
