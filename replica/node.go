package replica

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/hiccup"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/pole"
	"github.com/polebench/polebench/storage"
	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/transport"
	"github.com/polebench/polebench/zab"
	"github.com/polebench/polebench/zkserver"
)

// Listeners lets a caller hand a node sockets it already opened (the local backend
// picks free ports this way); nil ones are opened from the config.
type Listeners struct {
	Client, Peer, Election, Admin net.Listener
}

// Node is one running poled: the driver of the pure election (pole) and broadcast
// (zab) cores, with real storage, TCP peers and the ZooKeeper client port.
//
// One goroutine (run) owns the cores and the store. Client-facing goroutines reach
// it through channels (submit, touches) and read the tree under mu.
type Node struct {
	cfg   Config
	log   *slog.Logger
	start time.Time
	sched *netem.Scheduler // the user-space links' schedule, nil without them

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	election, peer *transport.Transport
	zk             *zkserver.Server
	lns            Listeners
	admin          *http.Server

	store *storage.Store
	d     *Driver // the cores and what their output means; owned by run
	// loopMu is held by run while it drains the cores, except during writes to disk:
	// Stop takes it, so a kill lands between two Readies' sends, never within one.
	loopMu sync.Mutex
	// pauseMu guards paused: Pause holds loopMu until Resume (or Stop takes it over).
	pauseMu sync.Mutex
	paused  bool

	// How the links are emulated; kernel is set when this server installs them itself.
	links  atomic.Pointer[LinkStatus]
	kernel *kernelLinks

	submits chan submit
	touches chan int64
	// held: what waits, per peer, for a snapshot being streamed to it; snapDone says
	// a stream is queued.
	held     map[int][]heldSend
	snapDone chan snapDone
	status   atomic.Pointer[nodeStatus]

	timeline *event.Timeline
	trace    *trace.Log // nil unless cfg.Trace
	// hiccups is the process's hiccup meter, when the process runs one (poled).
	hiccups atomic.Pointer[hiccup.Meter]

	// Loop-owned state.
	tracker  *zkserver.SessionTracker // leader only
	touched  map[int64]bool           // follower: touches to forward
	lastReap time.Time                // leader: when containers and TTL nodes were last reaped
}

type submit struct {
	txn  datatree.Txn
	ch   chan zkserver.Outcome
	user bool // a client write (counts toward theta_r)
}

type nodeStatus struct {
	zab   zab.Status
	epoch pole.Epoch
	peers []pole.PeerStatus
}

// Start opens the node's storage, restores its state and starts serving. It returns
// once every listener is open; the node runs until Stop or ctx ends.
func Start(ctx context.Context, cfg Config, lns Listeners, log *slog.Logger) (*Node, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("poled config: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("server", cfg.ID)
	n := &Node{
		cfg: cfg, log: log, start: time.Now(),
		submits: make(chan submit, 4096), touches: make(chan int64, 4096),
		held: map[int][]heldSend{}, snapDone: make(chan snapDone),
		touched: map[int64]bool{}, timeline: event.NewTimeline(cfg.ID),
	}
	if cfg.Trace {
		n.trace = trace.NewLog(0, netem.At(n.start))
	}
	n.ctx, n.cancel = context.WithCancel(ctx)
	if err := n.open(lns); err != nil {
		n.cancel()
		n.closeAll()
		return nil, err
	}
	n.wg.Add(1)
	go n.run()
	return n, nil
}

// open brings the node up in its steps: storage, the cores, the listeners, the links,
// the servers.
func (n *Node) open(lns Listeners) error {
	restored, err := n.openStore()
	if err != nil {
		return err
	}
	if n.d, err = NewDriver(n.cfg, restored.Persisted, restored.Tree, (*driverIO)(n), n.log); err != nil {
		return err
	}
	// Request ids must be unique across restarts: the start time in ms, then a counter.
	n.d.SetRequestBase(uint64(n.start.UnixMilli()) << 20)
	if err := n.listen(lns); err != nil {
		return err
	}
	links, err := n.setupLinks()
	if err != nil {
		return err
	}
	n.startTransports(links)
	if n.kernel != nil {
		n.wg.Go(func() { n.kernel.run(n.ctx) })
	}
	return n.startServers()
}

// openStore opens the data directory and restores the tree.
func (n *Node) openStore() (*storage.Restored, error) {
	cfg := n.cfg
	st, err := storage.Open(cfg.DataDir, storage.Options{Fsync: cfg.Fsync, Logger: n.log, TrustTail: cfg.Broken == TrustTornTail})
	if err != nil {
		return nil, fmt.Errorf("open data dir %s: %w", cfg.DataDir, err)
	}
	n.store = st
	t0 := time.Now()
	restored, err := Restore(n.ctx, st, cfg, n.log)
	if err != nil {
		return nil, fmt.Errorf("restore from %s: %w", cfg.DataDir, err)
	}
	n.log.Info("restored", "snapshot", restored.Persisted.Snapshot, "logged", len(restored.Persisted.Log), "took", time.Since(t0))
	return &restored, nil
}

// Restore reads what a start needs from st (storage.Store.Restore). A fresh server
// preloads cfg.PreloadMB of deterministic data first: every server preloads the same
// tree at zxid 0, so the ensemble starts identical, and the snapshot makes it survive
// a restart. The simulator restores its servers with it too.
func Restore(ctx context.Context, st *storage.Store, cfg Config, log *slog.Logger) (storage.Restored, error) {
	r, err := st.Restore(ctx)
	if err != nil {
		return storage.Restored{}, err
	}
	fresh := len(r.Persisted.Log) == 0 && r.Persisted.Snapshot == 0 && !r.Tree.Exists("/preload")
	if fresh && cfg.PreloadMB > 0 {
		if _, err := r.Tree.Preload(int64(cfg.PreloadMB) << 20); err != nil {
			return storage.Restored{}, fmt.Errorf("preload: %w", err)
		}
		if _, err := st.Snapshot(r.Tree); err != nil {
			return storage.Restored{}, fmt.Errorf("snapshot of the preloaded tree: %w", err)
		}
		log.Info("preloaded", "mb", cfg.PreloadMB, "nodes", r.Tree.NodeCount())
	}
	return r, nil
}

// listen opens the listeners the caller did not hand over.
func (n *Node) listen(lns Listeners) error {
	cfg := n.cfg
	self := cfg.Self()
	n.lns = lns
	for _, l := range []struct {
		ln   *net.Listener
		port int
		what string
	}{{&n.lns.Client, self.ClientPort, "client"}, {&n.lns.Peer, self.PeerPort, "peer"},
		{&n.lns.Election, self.ElectionPort, "election"}, {&n.lns.Admin, self.AdminPort, "admin"}} {
		if *l.ln != nil {
			continue
		}
		addr := self.addr(l.port)
		if cfg.ListenHost != "" {
			addr = net.JoinHostPort(cfg.ListenHost, strconv.Itoa(l.port))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s port: %w", l.what, err)
		}
		*l.ln = ln
	}
	return nil
}

// userLinks emulates the network in user space from the configured plan: when each
// message departs and arrives, and how late a closed stream is noticed.
type userLinks struct {
	schedule   func(int, transport.Channel, int) (int64, int64, error)
	closeDelay func(from int) time.Duration
}

// setupLinks reads the configured plan and decides how to emulate it: in the kernel on
// this server's own interface (n.kernel), or in user space (the schedule it returns;
// zero when the network is real or emulated from outside).
func (n *Node) setupLinks() (userLinks, error) {
	n.links.Store(&LinkStatus{Mode: LinksNone})
	if n.cfg.LinkPlan == "" {
		return userLinks{}, nil
	}
	plan, err := netem.ReadPlan(n.cfg.LinkPlan)
	if err != nil {
		return userLinks{}, fmt.Errorf("link plan: %w", err)
	}
	var reason string
	if m := n.cfg.LinkMode; m == LinksKernel || m == LinksAuto {
		err := kernelLinksUnavailable(n.ctx)
		if err == nil {
			n.kernel = newKernelLinks(n.cfg, plan, n.log.With("links", LinksKernel))
			n.log.Info("kernel links from plan, on this server's own interface", "plan", n.cfg.LinkPlan, "mode", m)
			return userLinks{}, nil
		}
		if m == LinksKernel {
			return userLinks{}, fmt.Errorf("link_mode %s: %w", LinksKernel, err)
		}
		reason = "kernel links unavailable: " + err.Error()
	}
	n.links.Store(&LinkStatus{Mode: LinksUserSpace, Reason: reason})
	sched, err := plan.Scheduler(n.cfg.ID)
	if err != nil {
		return userLinks{}, fmt.Errorf("link plan %s: %w", n.cfg.LinkPlan, err)
	}
	n.sched = sched
	n.log.Info("user-space links from plan", "plan", n.cfg.LinkPlan, "reason", reason)
	return userLinks{
		schedule: func(to int, ch transport.Channel, size int) (int64, int64, error) {
			return sched.Schedule(to, int(ch), size)
		},
		closeDelay: func(from int) time.Duration {
			l, _ := plan.Link(from, n.cfg.ID)
			return l.Delay
		},
	}, nil
}

// startTransports starts the election and broadcast channels to the peers.
func (n *Node) startTransports(links userLinks) {
	cfg := n.cfg
	peerAddrs := func(port func(Peer) int) map[int]string {
		m := map[int]string{}
		for _, p := range cfg.Servers {
			if p.ID != cfg.ID {
				m[p.ID] = p.addr(port(p))
			}
		}
		return m
	}
	n.election = transport.New(n.ctx, n.lns.Election, transport.Config{
		ID: cfg.ID, Peers: peerAddrs(func(p Peer) int { return p.ElectionPort }), Schedule: links.schedule,
		CloseDelay: links.closeDelay, Logger: n.log.With("channel", "election"),
	})
	n.peer = transport.New(n.ctx, n.lns.Peer, transport.Config{
		ID: cfg.ID, Peers: peerAddrs(func(p Peer) int { return p.PeerPort }), Schedule: links.schedule,
		CloseDelay: links.closeDelay, QueueLen: 1 << 14, Logger: n.log.With("channel", "broadcast"),
	})
}

// startServers serves the ZooKeeper client port and the admin port.
func (n *Node) startServers() error {
	cfg := n.cfg
	secret := sha256.Sum256(fmt.Appendf(nil, "polebench ensemble of %d", len(cfg.Servers)))
	var users map[string]string
	if cfg.JAASConfig != "" {
		var err error
		if users, err = zkserver.ReadJAAS(cfg.JAASConfig); err != nil {
			return fmt.Errorf("client port: %w", err)
		}
	}
	var err error
	n.zk, err = zkserver.New(zkserver.Config{
		ServerID: int64(cfg.ID), Tick: time.Duration(cfg.Tick),
		MinSessionTimeout: time.Duration(cfg.MinSessionTimeout), MaxSessionTimeout: time.Duration(cfg.MaxSessionTimeout),
		Secret: secret[:], Logger: n.log.With("port", "client"), Replied: n.replied,
		FourLetterWords: cfg.FourLetterWords, SuperDigest: cfg.SuperDigest, ExtendedTypes: cfg.ExtendedTypes,
		SASLUsers: users, SASLProvider: cfg.SASLProvider,
	}, (*clientPortView)(n))
	if err != nil {
		return fmt.Errorf("client port: %w", err)
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.zk.Serve(n.ctx, n.lns.Client); err != nil && n.ctx.Err() == nil {
			n.log.Error("client port stopped", "err", err)
		}
	}()
	n.admin = &http.Server{Handler: n.adminHandler(), ReadHeaderTimeout: 5 * time.Second}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.admin.Serve(n.lns.Admin); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("admin port stopped", "err", err)
		}
	}()
	n.publish()
	return nil
}

// Stop ends the node at once, the way a killed process ends: no goodbye to peers or
// clients. The data directory keeps exactly what was persisted.
//
// The death is one instant, as a SIGKILL's: between two Readies' sends (or during a
// write to disk), never within one, so one broadcast reaches every peer or none; and
// what the node sent before it and had departed on a user-space link reaches its peer
// on every link alike, as a kernel still transmits what a killed process wrote to its
// sockets (transport.Die). Without that, which of a dying leader's last proposals
// reached which follower was decided by its goroutines' scheduling (docs/crash.md).
func (n *Node) Stop() {
	n.pauseMu.Lock()
	if n.paused { // a paused node's loop is held already: the kill takes it over
		n.paused = false
	} else {
		n.loopMu.Lock()
	}
	n.pauseMu.Unlock()
	at := netem.Now()
	for _, t := range []*transport.Transport{n.election, n.peer} {
		if t != nil {
			t.Die(at)
		}
	}
	n.cancel()
	n.loopMu.Unlock()
	n.closeAll()
	n.wg.Wait()
	if n.store != nil {
		n.store.Close()
	}
	if n.kernel != nil {
		n.kernel.clear()
	}
}

// Links says how this server's links are emulated.
func (n *Node) Links() LinkStatus {
	if n.kernel != nil {
		return *n.kernel.status.Load()
	}
	if s := n.links.Load(); s != nil {
		return *s
	}
	return LinkStatus{Mode: LinksNone}
}

func (n *Node) closeAll() {
	if n.admin != nil {
		n.admin.Close()
	}
	if n.zk != nil {
		n.zk.CloseConnections()
	}
	for _, t := range []*transport.Transport{n.election, n.peer} {
		if t != nil {
			t.Close()
		}
	}
	for _, l := range []net.Listener{n.lns.Client, n.lns.Admin, n.lns.Peer, n.lns.Election} {
		if l != nil {
			l.Close()
		}
	}
}

// Done is closed when the node has stopped.
func (n *Node) Done() <-chan struct{} { return n.ctx.Done() }

// Timeline is the node's event log.
func (n *Node) Timeline() *event.Timeline { return n.timeline }

// now is the cores' clock: the host's monotonic clock (netem.Now), which the links'
// arrival stamps, the trace's marks and the harness share.
func (n *Node) now() time.Duration { return time.Duration(netem.Now()) }

// arrival is when a peer's message arrived, in the cores' clock.
func arrival(m transport.Message) time.Duration { return time.Duration(m.At) }

// replied marks a write's receipt and reply at the client port (zkserver.Config.Replied).
func (n *Node) replied(zxid int64, recv time.Time) {
	if n.trace == nil || zxid <= 0 {
		return
	}
	n.trace.Add(trace.Mark{Zxid: zab.Zxid(zxid), At: netem.At(recv), Kind: trace.Recv})
	n.trace.Add(trace.Mark{Zxid: zab.Zxid(zxid), At: netem.Now(), Kind: trace.Reply})
}

// drainPeer steps the peer messages already queued. A stream's end is an event on
// another channel than its frames, and select picks among ready channels at random:
// without this a follower could go LOOKING before stepping the last proposals its
// dead leader's stream delivered (TCP hands over the data before the FIN), vote with
// an older zxid than a follower across the WAN that stepped them, and bend history's
// choice (the likely cause of a CI run where poled-history elected a D1 server of
// two-dc after p5 died: a D1 follower was ahead of both D2 followers).
func (n *Node) drainPeer() {
	for range len(n.peer.Recv()) {
		n.onPeer(<-n.peer.Recv())
	}
}

// run is the only goroutine that touches the driver and the store.
func (n *Node) run() {
	defer n.wg.Done()
	tick := time.NewTicker(time.Duration(n.cfg.Tick))
	defer tick.Stop()
	n.d.Start(n.now())
	for {
		n.loopMu.Lock()
		if n.ctx.Err() == nil { // dead: nothing more leaves
			n.d.Drain()
		}
		n.publish()
		n.loopMu.Unlock()
		select {
		case <-n.ctx.Done():
			n.d.FailPending(errors.New("server stopping"))
			return
		case m := <-n.election.Recv():
			n.d.StepElection(arrival(m), m.From, m.Payload)
		case m := <-n.peer.Recv():
			n.onPeer(m)
		case e := <-n.peer.Events():
			n.drainPeer()
			switch {
			case e.Closed:
				n.d.Closed(e.Peer)
			case !e.Up:
				n.d.Disconnected(e.Peer)
			}
		case <-n.election.Events():
		case s := <-n.submits:
			n.onSubmit(s)
		case d := <-n.snapDone:
			n.onSnapDone(d)
		case id := <-n.touches:
			n.touch(id)
		case <-tick.C:
			n.d.Tick(n.now())
			n.onTick()
		}
		// Group commit: step whatever broadcast messages and client writes are
		// already queued before the next Drain, so that one Persist (one fsync with
		// fsync on) and one Ready's messages cover them all, as ZooKeeper's
		// SyncRequestProcessor batches its log flushes.
	batch:
		for range maxBatch {
			select {
			case m := <-n.peer.Recv():
				n.onPeer(m)
			case s := <-n.submits:
				n.onSubmit(s)
			default:
				break batch
			}
		}
	}
}

// maxBatch bounds the inputs one Drain covers, so a flood cannot hold back the ticks.
const maxBatch = 1000

// Peer channel frames start with a kind byte: a zab message, or session touches a
// follower forwards to its leader (the leader owns session expiry).
const (
	frameZab     = 'Z'
	frameTouches = 'T'
)

func (n *Node) onPeer(m transport.Message) {
	if len(m.Payload) == 0 {
		return
	}
	switch m.Payload[0] {
	case frameZab:
		n.d.StepZab(arrival(m), m.From, m.Payload[1:])
	case frameTouches:
		for b := m.Payload[1:]; len(b) >= 8; b = b[8:] {
			n.touch(int64(binary.BigEndian.Uint64(b)))
		}
	}
}

func (n *Node) onSubmit(s submit) {
	var done func(zkserver.Outcome)
	if s.ch != nil {
		done = func(o zkserver.Outcome) { s.ch <- o }
	}
	n.d.Submit(s.txn, s.user, done)
}

func (n *Node) touch(id int64) {
	if n.tracker != nil {
		n.tracker.Touch(id, time.Now())
		return
	}
	n.touched[id] = true
}

// onTick runs the client port's periodic duties: session touches and expiry.
func (n *Node) onTick() {
	st := n.d.Status()
	if st.Role == zab.Following && st.Serving && len(n.touched) > 0 {
		b := []byte{frameTouches}
		for id := range n.touched {
			b = binary.BigEndian.AppendUint64(b, uint64(id))
		}
		n.peer.Send(st.Leader, transport.Broadcast, b)
		clear(n.touched)
	}
	if n.tracker != nil && st.Serving {
		for _, id := range n.tracker.Expire(time.Now()) {
			n.log.Info("session expired", "session", fmt.Sprintf("0x%x", id))
			n.onSubmit(submit{txn: datatree.Txn{Session: id, Time: time.Now().UnixMilli(), Op: datatree.CloseSession()}})
		}
		n.reap()
	}
}

// reap deletes, every ContainerCheck, the containers and TTL nodes that are due, as
// ZooKeeper's ContainerManager does on its leader: each through a deleteContainer
// txn that re-checks on apply, so one a client changed meanwhile stays.
func (n *Node) reap() {
	now := time.Now()
	if now.Sub(n.lastReap) < time.Duration(n.cfg.ContainerCheck) {
		return
	}
	n.lastReap = now
	var due []string
	n.d.Read(func(t *datatree.Tree) { due = t.Reapable(now.UnixMilli()) })
	for _, p := range due {
		n.onSubmit(submit{txn: datatree.Txn{Time: now.UnixMilli(), Op: datatree.DeleteContainer(p)}})
	}
}

// driverIO is the Node as its Driver sees it: sockets, files, the client port.
type driverIO Node

func (io *driverIO) SendElection(to int, b []byte) { io.election.Send(to, transport.Election, b) }
func (io *driverIO) SendZab(m zab.Message)         { (*Node)(io).sendZab(m) }
func (io *driverIO) SendSnapshot(m zab.Message, v *datatree.View) {
	(*Node)(io).sendSnapshot(m, v)
}

// Persist lets a kill (Stop) land during the write, as a SIGKILL may.
func (io *driverIO) Persist(ops []zab.Op) (*datatree.Tree, error) {
	io.loopMu.Unlock()
	defer io.loopMu.Lock()
	return io.store.Persist(ops)
}

func (io *driverIO) Record(e event.Event) { io.timeline.Add(e) }
func (io *driverIO) Now() time.Duration   { return (*Node)(io).now() }
func (io *driverIO) Mark(m trace.Mark)    { io.trace.Add(m) }
func (io *driverIO) Fail(error)           { io.cancel() }

func (io *driverIO) ResetPeers() {
	for _, p := range io.cfg.Servers {
		if p.ID != io.cfg.ID {
			io.peer.Reset(p.ID)
		}
	}
}

func (io *driverIO) Applied(txn datatree.Txn, res datatree.Result) {
	io.zk.Applied(txn, res)
	(*Node)(io).trackSession(txn, res)
}

func (io *driverIO) Role(e zab.Event) {
	n := (*Node)(io)
	switch e.Type {
	case zab.EventLooking:
		n.tracker = nil
		n.zk.CloseConnections()
	case zab.EventLeading:
		// A new leader starts every session's clock afresh, as ZooKeeper does. Role is
		// called outside the tree's lock, so Read may take it.
		n.tracker = zkserver.NewSessionTracker()
		n.d.Read(func(t *datatree.Tree) {
			for _, s := range t.Sessions() {
				n.tracker.Add(s.ID, time.Duration(s.Timeout)*time.Millisecond, time.Now())
			}
		})
	case zab.EventFollowing:
		n.tracker = nil
	}
}

func (n *Node) trackSession(txn datatree.Txn, res datatree.Result) {
	if n.tracker == nil || res.Err != datatree.Ok {
		return
	}
	switch txn.Type {
	case datatree.OpCreateSession:
		n.tracker.Add(txn.Session, time.Duration(txn.Timeout)*time.Millisecond, time.Now())
	case datatree.OpCloseSession:
		n.tracker.Remove(txn.Session)
	}
}

// sendZab sends a message of the loop's, after any snapshot streaming to that peer.
func (n *Node) sendZab(m zab.Message) {
	if q, busy := n.held[m.To]; busy {
		n.held[m.To] = append(q, heldSend{send: func() { n.sendZabNow(m) }})
		return
	}
	n.sendZabNow(m)
}

func (n *Node) sendZabNow(m zab.Message) {
	b, err := m.AppendBinary(append(make([]byte, 0, 1+m.EncodedSize()), frameZab)) // sized once: a 1 kB proposal grew through 9 buffers
	if err != nil {
		n.log.Error("encode broadcast message", "msg", m.String(), "err", err)
		return
	}
	n.peer.Send(m.To, transport.Broadcast, b)
}

// sendSnapshot streams this server's state as it is before this Ready's commits (the
// SNAP's zxid) to the peer, from another goroutine, so the loop keeps committing: the
// tree's View is copy-on-write and costs Apply little, however large the state.
// Until the last chunk is queued, whatever else the loop sends that peer waits in
// n.held, so the peer's FIFO order stays the protocol's; the user-space link paces
// the chunks at window / RTT.
func (n *Node) sendSnapshot(m zab.Message, v *datatree.View) {
	if q, busy := n.held[m.To]; busy {
		n.held[m.To] = append(q, heldSend{send: func() { n.streamSnapshot(m, v) }, drop: v.Close})
		return
	}
	n.streamSnapshot(m, v)
}

// heldSend is a send waiting behind a snapshot; drop releases what it holds when the
// stream broke and it will not be sent.
type heldSend struct {
	send, drop func()
}

func (n *Node) streamSnapshot(m zab.Message, v *datatree.View) {
	n.held[m.To] = nil
	t0 := time.Now()
	go func() {
		defer v.Close()
		chunks := 0
		w, err := zab.NewChunkWriter(m, 1<<20, func(c zab.Message) error {
			chunks++
			n.sendZabNow(c)
			return n.ctx.Err()
		})
		if err == nil {
			err = v.Write(w)
		}
		if err == nil {
			err = w.Close()
		}
		if err == nil {
			n.log.Info("snapshot queued", "peer", m.To, "zxid", m.Zxid, "chunks", chunks, "took", time.Since(t0))
		}
		select {
		case n.snapDone <- snapDone{peer: m.To, err: err}:
		case <-n.ctx.Done():
		}
	}()
}

// snapDone says a snapshot for peer is queued (or failed).
type snapDone struct {
	peer int
	err  error
}

// onSnapDone releases what waited behind a snapshot, in order; after a failure the
// peer's stream is broken and the protocol resyncs it.
func (n *Node) onSnapDone(d snapDone) {
	q := n.held[d.peer]
	delete(n.held, d.peer)
	if d.err != nil {
		n.log.Error("snapshot for peer failed", "peer", d.peer, "err", d.err)
		for _, h := range q {
			if h.drop != nil {
				h.drop()
			}
		}
		n.d.Disconnected(d.peer)
		return
	}
	for i, h := range q {
		h.send()
		if _, busy := n.held[d.peer]; busy { // another snapshot started: the rest waits for it
			n.held[d.peer] = append(n.held[d.peer], q[i+1:]...)
			return
		}
	}
}

// publish makes the loop's view readable by other goroutines.
func (n *Node) publish() {
	e, peers := n.d.Election()
	n.status.Store(&nodeStatus{zab: n.d.Status(), epoch: e, peers: peers})
}

// SetLinkStart has the user-space links count their plan's schedules from ns (on
// netem.Now's clock): the start of the run's load, as the faults count theirs. Without
// user-space links it does nothing.
func (n *Node) SetLinkStart(ns int64) {
	if n.sched != nil {
		n.sched.SetStart(ns)
	}
}
