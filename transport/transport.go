// Package transport carries messages between replicas over TCP: one channel for
// election and heartbeats (POLE's ConnectionManager) and one for broadcast.
//
// Each ordered pair of servers and each channel has its own connection, dialed by the
// sender and only read by the receiver. That keeps delivery FIFO per (pair, channel),
// lets a user-space link delay exactly the messages one server sends another, and makes
// reconnection one-sided: the dialer retries with backoff, the listener just accepts.
package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polebench/polebench/hiccup"
	"github.com/polebench/polebench/netem"
)

// Channel separates election traffic from broadcast traffic.
type Channel uint8

const (
	Election  Channel = 1
	Broadcast Channel = 2
)

func (c Channel) String() string {
	switch c {
	case Election:
		return "election"
	case Broadcast:
		return "broadcast"
	}
	return fmt.Sprintf("channel(%d)", uint8(c))
}

// Message is one frame received from a peer.
type Message struct {
	From    int
	Channel Channel
	Payload []byte
	// At is when it arrived (netem.Now): the instant a user-space link delivered it,
	// else when it was read. The owner may take it later; what it measures (an RTT, a
	// write's way through the replicas) must not count that wait as the network's.
	At int64
}

// Event tells the owner that the stream to or from a peer broke: every message sent
// on it after the last one delivered may be lost, so a FIFO protocol on top must resync.
type Event struct {
	Peer    int
	Channel Channel
	Up      bool // true: a new outgoing connection is established
	// Closed: the peer closed its stream to us (its process most likely died), one
	// link delay after it did (Config.CloseDelay); what it had sent is all delivered.
	Closed bool
}

// MaxFrame bounds one message; snapshots travel in chunks well below it.
const MaxFrame = 64 << 20

const magic = 0x504f4c45 // "POLE"

// The handshake: magic, sender id, channel, flags.
const (
	handshakeLen = 10
	flagStamped  = 1 // every frame starts with its 8-byte delivery instant (netem.Now)
)

// Config configures a Transport.
type Config struct {
	ID    int
	Peers map[int]string // id -> address of its peer listener, excluding ID itself
	// QueueLen bounds the messages waiting for one connection; when full, Send on an
	// election channel drops, and on a broadcast channel the stream is reset (the
	// owner is told through Events and must resync that peer).
	QueueLen int
	// Schedule, if set, emulates the network in user space: it gives each message the
	// netem.Now instants at which it departs (the link's window lets it go) and
	// arrives. The sender holds it until it departs, then writes it stamped with its
	// arrival; the receiver holds it until then. So what is on the wire survives the
	// sender's death, as packets in a kernel qdisc do; what has not departed dies
	// with the sender, and what arrives for a dead receiver is lost.
	Schedule func(to int, ch Channel, size int) (depart, arrive int64, err error)
	// CloseDelay, if set, is the one-way delay of the link from a peer: a closed
	// incoming stream is reported that long after the close is seen, as a WAN delivers
	// the FIN of a killed process one link delay later. Leave it nil when the network
	// (or the kernel's netem) delays packets itself.
	CloseDelay func(from int) time.Duration
	// Lateness counts how late each stamped message was handed over after its
	// scheduled arrival (or after the owner took the previous one, when that was
	// later); nil: netem.LinkLateness.
	Lateness *hiccup.Lateness
	// Dial defaults to a net.Dialer with a 2 s timeout.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Backoff bounds for reconnecting: starts at MinBackoff, doubles up to MaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	Logger                 *slog.Logger
}

// Transport is safe for concurrent use.
type Transport struct {
	cfg    Config
	log    *slog.Logger
	ln     net.Listener
	recv   chan Message
	events chan Event
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	out   map[outKey]*outStream
	conns map[net.Conn]int       // accepted, to close on shutdown: the peer once known (0 before)
	ins   map[net.Conn]*inStream // accepted streams past their handshake
	cut   map[int]bool           // peers whose streams are cut both ways (a partition)
	// One way (CutOneWay): what this side sends to the peer is dropped (cutOut), or
	// what the peer sends is refused (cutIn).
	cutOut, cutIn map[int]bool

	// diedAt is the instant (netem.Now) the transport ended, as its process's death:
	// what had departed by then still goes out (Die).
	diedAt atomic.Int64
}

type outKey struct {
	to int
	ch Channel
}

// inStream is an incoming stream; done is closed once it has ended, everything it
// carried handed over and its close reported.
type inStream struct {
	from int
	ch   Channel
	done chan struct{}
}

// New starts listening on ln and dialing peers lazily on the first Send.
func New(ctx context.Context, ln net.Listener, cfg Config) *Transport {
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = 4096
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 20 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = time.Second
	}
	if cfg.Dial == nil {
		d := net.Dialer{Timeout: 2 * time.Second}
		cfg.Dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Lateness == nil {
		cfg.Lateness = netem.LinkLateness
	}
	ctx, cancel := context.WithCancel(ctx)
	t := &Transport{
		cfg: cfg, log: cfg.Logger.With("transport", cfg.ID), ln: ln,
		recv: make(chan Message, 1024), events: make(chan Event, 256),
		ctx: ctx, cancel: cancel,
		out: map[outKey]*outStream{}, conns: map[net.Conn]int{}, ins: map[net.Conn]*inStream{}, cut: map[int]bool{},
		cutOut: map[int]bool{}, cutIn: map[int]bool{},
	}
	t.wg.Add(1)
	go t.accept()
	return t
}

// Addr is the listener's address.
func (t *Transport) Addr() net.Addr { return t.ln.Addr() }

// Recv delivers incoming messages.
func (t *Transport) Recv() <-chan Message { return t.recv }

// Events reports broken and re-established outgoing streams.
func (t *Transport) Events() <-chan Event { return t.events }

// Send queues payload for peer to. It never blocks. It reports false when the message
// was dropped (unknown peer, transport closed, or a full election queue).
func (t *Transport) Send(to int, ch Channel, payload []byte) bool {
	if _, ok := t.cfg.Peers[to]; !ok || t.ctx.Err() != nil {
		return false
	}
	t.mu.Lock()
	if t.cut[to] || t.cutOut[to] {
		t.mu.Unlock()
		return false
	}
	k := outKey{to, ch}
	s := t.out[k]
	if s == nil {
		s = &outStream{t: t, key: k, q: make(chan frame, t.cfg.QueueLen), reset: make(chan struct{}, 1)}
		t.out[k] = s
		t.wg.Add(1)
		go s.run()
	}
	t.mu.Unlock()
	f := frame{b: payload}
	if t.cfg.Schedule != nil {
		depart, arrive, err := t.cfg.Schedule(to, ch, len(payload))
		if err != nil {
			t.log.Error("user-space link", "to", to, "err", err)
		}
		f.depart, f.stamped = depart, true
		binary.BigEndian.PutUint64(f.stamp[:], uint64(arrive))
	}
	select {
	case s.q <- f:
		return true
	default:
	}
	if ch == Broadcast {
		// A broadcast stream must not silently skip a message: cut it so the peer's
		// protocol sees a break and resyncs.
		select {
		case s.reset <- struct{}{}:
		default:
		}
	}
	return false
}

// Cut cuts (or, with false, restores) every stream to and from peer, as a network
// partition would: while cut, what this side sends to peer is dropped and what peer
// sends is refused. Cutting resets the outgoing streams (their queued messages are
// lost, and Events reports the break) and closes the incoming ones (reported as
// Closed, so a follower of peer stops waiting for it). Both sides of a link must be
// cut for a partition to hold whatever the other side does; cutting one side already
// stops every message in both directions.
func (t *Transport) Cut(peer int, cut bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cut[peer] == cut {
		return
	}
	if !cut {
		delete(t.cut, peer)
		return
	}
	t.cut[peer] = true
	t.reset(peer)
}

// Reset breaks every stream to and from peer, as a process that drops its connections
// does (ZooKeeper's leader closes its learners' sockets when it loses its quorum): the
// queued messages are lost, Events reports the break, the peer sees its streams close,
// and both sides reconnect.
func (t *Transport) Reset(peer int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reset(peer)
}

func (t *Transport) reset(peer int) {
	for k, s := range t.out {
		if k.to == peer {
			select {
			case s.reset <- struct{}{}:
			default:
			}
		}
	}
	for c, from := range t.conns {
		if from == peer {
			t.hangUp(c)
		}
	}
}

// hangUp closes an accepted stream. A live transport says so first, with the one
// byte its dialer ever reads (errPeerReset): the dialer then knows this side did not
// die, and does not wait for this side's streams to it to end (awaitPeerStreams), as
// this side may already have dialed it again. A dying transport just closes, as a
// killed process's kernel does.
func (t *Transport) hangUp(c net.Conn) {
	if t.ctx.Err() == nil {
		c.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
		c.Write([]byte{hangUpByte})
	}
	c.Close()
}

// hangUpByte is what hangUp writes.
const hangUpByte = 0xb1

func (t *Transport) isCut(peer int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cut[peer] || t.cutIn[peer]
}

// CutOneWay cuts (or restores) one direction of the streams with peer: out, what this
// side sends to it is dropped (its outgoing streams reset); otherwise what peer sends
// is refused (its incoming streams closed). The other direction flows on. A one-way
// cut needs both ends, as the nemesis does it: out at the sender, in at the receiver.
func (t *Transport) CutOneWay(peer int, out, cut bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.cutIn
	if out {
		m = t.cutOut
	}
	if m[peer] == cut {
		return
	}
	if !cut {
		delete(m, peer)
		return
	}
	m[peer] = true
	if out {
		for k, s := range t.out {
			if k.to == peer {
				select {
				case s.reset <- struct{}{}:
				default:
				}
			}
		}
		return
	}
	for c, from := range t.conns {
		if from == peer {
			t.hangUp(c)
		}
	}
}

// Die ends the transport as its process's death at the instant at (netem.Now) does:
// Send refuses from then on, and every stream to a peer carries what was sent before
// and had departed by at (with a user-space link; without one, everything sent), on
// every link alike, as a kernel still transmits what a killed process wrote to its
// sockets; what had not departed dies with the sender. Then each stream closes, its
// peer hearing the end after the data. Die does not wait; Close does. A transport
// whose context ends without Die dies when the first of its streams notices.
func (t *Transport) Die(at int64) {
	t.diedAt.CompareAndSwap(0, at)
	t.cancel()
}

// deathAt is the instant the transport died (Die, else when first asked).
func (t *Transport) deathAt() int64 {
	t.diedAt.CompareAndSwap(0, netem.Now())
	return t.diedAt.Load()
}

// Close ends the transport as a death now does (Die) and waits for the goroutines.
func (t *Transport) Close() error {
	t.Die(netem.Now())
	err := t.ln.Close()
	t.mu.Lock()
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	return err
}

func (t *Transport) emit(e Event) {
	select {
	case t.events <- e:
	case <-t.ctx.Done():
	}
}

func (t *Transport) accept() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			if t.ctx.Err() == nil {
				t.log.Warn("accept failed", "err", err)
			}
			return
		}
		t.mu.Lock()
		if t.ctx.Err() != nil {
			t.mu.Unlock()
			c.Close()
			return
		}
		t.conns[c] = 0
		t.mu.Unlock()
		t.wg.Add(1)
		go t.serve(c)
	}
}

// serve reads one incoming stream after checking who is on the other end.
func (t *Transport) serve(c net.Conn) {
	defer t.wg.Done()
	known := false // a peer of ours, past the handshake: told when this side hangs up
	defer func() {
		if known {
			t.hangUp(c)
		} else {
			c.Close()
		}
		t.mu.Lock()
		delete(t.conns, c)
		t.mu.Unlock()
	}()
	r := bufio.NewReaderSize(c, 64<<10)
	var hdr [handshakeLen]byte
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	from := int(binary.BigEndian.Uint32(hdr[4:8]))
	ch := Channel(hdr[8])
	stamped := hdr[9]&flagStamped != 0
	if binary.BigEndian.Uint32(hdr[:4]) != magic || (ch != Election && ch != Broadcast) {
		t.log.Warn("refused connection: bad handshake", "remote", c.RemoteAddr())
		return
	}
	if _, ok := t.cfg.Peers[from]; !ok {
		t.log.Warn("refused connection from unknown peer", "peer", from, "remote", c.RemoteAddr())
		return
	}
	known = true
	t.mu.Lock()
	cut := t.cut[from] || t.cutIn[from]
	in := &inStream{from: from, ch: ch, done: make(chan struct{})}
	if !cut {
		t.conns[c] = from
		t.ins[c] = in
	}
	t.mu.Unlock()
	if cut {
		return // a partition: refused
	}
	defer func() { // after the frames and the close were handed over
		t.mu.Lock()
		delete(t.ins, c)
		t.mu.Unlock()
		close(in.done)
	}()
	var waker *netem.Waker
	if stamped {
		w, err := netem.NewWaker()
		if err != nil {
			t.log.Error("refused a stamped stream: no timer", "peer", from, "err", err)
			return
		}
		waker = w
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			select {
			case <-t.ctx.Done():
			case <-stop:
			}
			w.Close()
		}()
	}
	// A stamped stream is read as it comes (frames queue here while the earliest is
	// held until its stamp), so that its end is seen when it happens: the close then
	// arrives a link delay after it, as the FIN would, not a link delay after the
	// last frame's arrival (twice the delay, when frames were in flight).
	quit := make(chan struct{}) // the reader stops when this stream is done with
	defer close(quit)
	frames := readFrames(r, stamped, quit)
	// free is when the owner took the previous message, at first when the stream
	// began: frames a sender stamped before it (queued while the peer was away) are
	// late by the reconnection, the system's, not by the host.
	free := netem.Now()
	for f := range frames {
		p, err, at := f.p, f.err, f.at
		if err != nil {
			if t.ctx.Err() != nil {
				return
			}
			if !errors.Is(err, io.EOF) {
				t.log.Debug("stream closed", "peer", from, "channel", ch, "err", err)
			}
			t.closedAt(from, ch, at)
			return
		}
		if stamped {
			if len(p) < 8 {
				t.log.Warn("stamped frame without a stamp", "peer", from)
				return
			}
			at = int64(binary.BigEndian.Uint64(p))
			p = p[8:]
			if err := waker.SleepUntil(at); err != nil {
				return
			}
			// Late by the timer's wake or a wait for a CPU; the owner not yet having
			// taken the previous message is the system's, not the host's.
			t.cfg.Lateness.Record(time.Duration(netem.Now() - max(at, free)))
		}
		if t.isCut(from) {
			t.closed(from, ch)
			return
		}
		select {
		case t.recv <- Message{From: from, Channel: ch, Payload: p, At: at}:
			free = netem.Now()
		case <-t.ctx.Done():
			return
		}
	}
}

// inFrame is a frame as read: its bytes, or the error that ended the stream, and
// when it was read (netem.Now).
type inFrame struct {
	p   []byte
	err error
	at  int64
}

// readFrames reads r's frames until an error, which is the last item. For a stamped
// stream a goroutine reads ahead (its end is then seen at once); otherwise each frame
// is read as the previous one is taken.
func readFrames(r io.Reader, ahead bool, done <-chan struct{}) <-chan inFrame {
	out := make(chan inFrame, 256)
	if !ahead {
		out = make(chan inFrame)
	}
	go func() {
		defer close(out)
		for {
			p, err := ReadFrame(r)
			select {
			case out <- inFrame{p: p, err: err, at: netem.Now()}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// closed reports that peer's stream on ch ended, after the link's delay: every frame
// it carried has been delivered by then (frames are read, and held, in order).
func (t *Transport) closed(peer int, ch Channel) { t.closedAt(peer, ch, netem.Now()) }

// closedAt is closed for a stream whose end was read at at (netem.Now): the news
// arrives a link delay after that, and never before what was delivered until now.
func (t *Transport) closedAt(peer int, ch Channel, at int64) {
	var delay time.Duration
	if t.cfg.CloseDelay != nil {
		delay = max(0, time.Duration(at-netem.Now())+t.cfg.CloseDelay(peer))
	}
	e := Event{Peer: peer, Channel: ch, Closed: true}
	if delay <= 0 {
		t.emit(e)
		return
	}
	select {
	case <-time.After(delay):
		t.emit(e)
	case <-t.ctx.Done():
	}
}

// outStream owns the connection to one peer on one channel.
type outStream struct {
	t     *Transport
	key   outKey
	q     chan frame
	reset chan struct{}
}

// frame is a queued message: with a user-space link, it leaves at depart (netem.Now)
// and goes out stamped with its arrival (written before b, not copied into it: a
// snapshot chunk is a megabyte).
type frame struct {
	depart  int64
	stamped bool
	stamp   [8]byte
	b       []byte
}

func (s *outStream) run() {
	t := s.t
	defer t.wg.Done()
	backoff := t.cfg.MinBackoff
	for t.ctx.Err() == nil {
		c, err := s.dial()
		if err != nil {
			t.log.Debug("dial failed", "peer", s.key.to, "channel", s.key.ch, "err", err)
			select {
			case <-time.After(backoff):
			case <-t.ctx.Done():
				return
			}
			backoff = min(2*backoff, t.cfg.MaxBackoff)
			continue
		}
		backoff = t.cfg.MinBackoff
		t.emit(Event{Peer: s.key.to, Channel: s.key.ch, Up: true})
		err = s.pump(c)
		c.Close()
		if t.ctx.Err() != nil {
			return
		}
		t.log.Debug("stream broken", "peer", s.key.to, "channel", s.key.ch, "err", err)
		// Whatever was queued belongs to the broken stream; the protocol resyncs.
		s.drain()
		if errors.Is(err, errPeerClosed) { // it died, most likely
			s.awaitPeerStreams()
		}
		// On loopback a dead peer's end fails at once; across the emulated link the
		// news takes the link's delay, as the FIN or RST would. Told sooner, a
		// follower would give up on its leader before the leader's last proposals,
		// still on the link, arrive (and lose them: the local backend's followers in
		// the far DC were 7-10 writes behind at every crash).
		if t.cfg.CloseDelay != nil {
			select {
			case <-time.After(t.cfg.CloseDelay(s.key.to)):
			case <-t.ctx.Done():
				return
			}
		}
		t.emit(Event{Peer: s.key.to, Channel: s.key.ch, Up: false})
	}
}

// errPeerClosed: the peer closed the stream without a word (its process died, most
// likely); errPeerReset: it hung up (hangUp: it reset or cut us, or refused the
// stream), alive.
var (
	errPeerClosed = errors.New("peer closed the stream")
	errPeerReset  = errors.New("peer hung up")
)

// peerStreamWait bounds how long a stream the peer closed waits for the peer's own
// streams to end (awaitPeerStreams): a peer that closes one direction keeps the other
// only by a fault of its own.
const peerStreamWait = time.Second

// awaitPeerStreams waits until the streams from this stream's peer on its channel have
// ended, everything they carried handed over and their close reported (or
// peerStreamWait), when the peer closed this one without a word: it died. Its
// streams to us still deliver what it sent before, as a TCP connection delivers its
// data before the FIN, but the break of ours, noticed at once, would outrun them: a
// follower whose ACK stream to its dead leader broke would resync (zab.Disconnected)
// and drop the proposals still arriving, and enter the election behind followers a
// WAN away: the leader's LAN neighbour, nearest, lost that race (docs/crash.md).
func (s *outStream) awaitPeerStreams() {
	t := s.t
	var done []chan struct{}
	t.mu.Lock()
	for _, in := range t.ins {
		if in.from == s.key.to && in.ch == s.key.ch {
			done = append(done, in.done)
		}
	}
	t.mu.Unlock()
	if len(done) == 0 {
		return
	}
	limit := time.NewTimer(peerStreamWait)
	defer limit.Stop()
	for _, d := range done {
		select {
		case <-d:
		case <-limit.C:
			t.log.Warn("peer closed our stream but not its own", "peer", s.key.to, "channel", s.key.ch)
			return
		case <-t.ctx.Done():
			return
		}
	}
}

func (s *outStream) dial() (net.Conn, error) {
	t := s.t
	c, err := t.cfg.Dial(t.ctx, t.cfg.Peers[s.key.to])
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	var hdr [handshakeLen]byte
	binary.BigEndian.PutUint32(hdr[:4], magic)
	binary.BigEndian.PutUint32(hdr[4:8], uint32(t.cfg.ID))
	hdr[8] = byte(s.key.ch)
	if t.cfg.Schedule != nil {
		hdr[9] = flagStamped
	}
	if _, err := c.Write(hdr[:]); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// pump writes queued frames until the connection fails, a reset is asked for, or the
// transport closes. A watcher closes the connection for the last two, so a write
// blocked on a peer that stopped reading is cut too.
func (s *outStream) pump(c net.Conn) error {
	t := s.t
	stop := make(chan struct{})
	defer close(stop)
	cause := make(chan error, 1)
	go func() { // the receiver writes only when it hangs up: a read returning means the stream is gone
		var b [1]byte
		err := errPeerClosed
		if n, _ := c.Read(b[:]); n == 1 {
			err = errPeerReset
		}
		select {
		case cause <- err:
		default: // the watcher already said why
		}
	}()
	go func() {
		select {
		case <-s.reset:
			select {
			case cause <- errReset:
			default: // the reader already said why
			}
		case <-t.ctx.Done():
			// The sender died: the pump writes out what had departed (flushDead),
			// then closes the stream; a peer that does not read holds it up no
			// longer than this.
			c.SetWriteDeadline(time.Now().Add(deathFlushLimit))
			<-stop
		case <-stop:
		}
		c.Close()
	}()
	var waker *netem.Waker
	if t.cfg.Schedule != nil {
		var err error
		if waker, err = netem.NewWaker(); err != nil {
			return err
		}
		defer waker.Close()
		go func() { // a closed stream wakes a frame waiting to depart
			select {
			case <-t.ctx.Done():
			case <-stop:
			}
			waker.Close()
		}()
	}
	w := bufio.NewWriterSize(c, 64<<10)
	write := func(f frame) error {
		if waker != nil && f.depart > netem.Now() {
			// Not on the wire yet: push out what is, then wait for the window.
			if err := w.Flush(); err != nil {
				return err
			}
			if err := waker.SleepUntil(f.depart); err != nil && (t.ctx.Err() == nil || f.depart > t.deathAt()) {
				return err
			}
			// (Else the sender died after f departed, while the timer was late: f is
			// on the wire.)
		}
		return writeQueued(w, f)
	}
	for {
		var f frame
		select {
		case f = <-s.q:
		case err := <-cause:
			return err
		case <-t.ctx.Done():
			return s.flushDead(w)
		}
		err := write(f)
		// Batch what is already queued into one flush.
		for n := len(s.q); n > 0 && err == nil; n-- {
			err = write(<-s.q)
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			select {
			case c := <-cause:
				return c
			default:
				return err
			}
		}
	}
}

// errReset: this side reset the stream (Send's overflow, Cut, Reset).
var errReset = errors.New("stream reset (send queue overflow, cut or reset)")

// deathFlushLimit bounds how long a dead sender's stream writes out what had departed.
const deathFlushLimit = time.Second

// flushDead writes out, once the sender died, the queued frames that had departed by
// its death (Die) and flushes them: the stream then closes after them, as a killed
// process's socket sends its data before the FIN. Departures are in order, so the
// first frame that had not departed ends it; that one and the rest die with the
// sender.
func (s *outStream) flushDead(w *bufio.Writer) error {
	end := s.t.deathAt()
	for {
		select {
		case f := <-s.q:
			if f.stamped && f.depart > end {
				return errors.Join(w.Flush(), s.t.ctx.Err())
			}
			if err := writeQueued(w, f); err != nil {
				return err
			}
		default:
			return errors.Join(w.Flush(), s.t.ctx.Err())
		}
	}
}

// writeQueued writes a queued frame, stamped with its arrival if it has one.
func writeQueued(w io.Writer, f frame) error {
	if f.stamped {
		return writeFrame(w, f.stamp[:], f.b)
	}
	return WriteFrame(w, f.b)
}

func (s *outStream) drain() {
	for {
		select {
		case <-s.q:
		case <-s.reset:
		default:
			return
		}
	}
}

// WriteFrame writes one length-prefixed frame.
func WriteFrame(w io.Writer, p []byte) error { return writeFrame(w, nil, p) }

// writeFrame writes the frame of head followed by p.
func writeFrame(w io.Writer, head, p []byte) error {
	size := len(head) + len(p)
	if size > MaxFrame {
		return fmt.Errorf("frame of %d bytes exceeds %d", size, MaxFrame)
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(size))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	_, err := w.Write(p)
	return err
}

// ReadFrame reads one length-prefixed frame.
func ReadFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > MaxFrame {
		return nil, fmt.Errorf("frame of %d bytes exceeds %d", size, MaxFrame)
	}
	p := make([]byte, size)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, fmt.Errorf("short frame: %w", err)
	}
	return p, nil
}
