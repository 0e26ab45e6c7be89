package replica

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/pole"
	"github.com/polebench/polebench/storage"
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
	start time.Time // the monotonic origin of the cores' clock

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	election, peer *transport.Transport
	zk             *zkserver.Server
	lns            Listeners
	admin          *http.Server

	store *storage.Store
	elect *pole.Node
	bcast *zab.Node

	// mu guards tree: the loop applies under the write lock, clients read under the
	// read lock (zkserver's Backend contract).
	mu   sync.RWMutex
	tree *datatree.Tree

	submits chan submit
	touches chan int64
	// held: what waits, per peer, for a snapshot being streamed to it; snapDone says
	// a stream is queued.
	held     map[int][]heldSend
	snapDone chan snapDone
	status   atomic.Pointer[nodeStatus]

	timeline *event.Timeline

	// Loop-owned state.
	nextReq   uint64
	pending   map[uint64]chan zkserver.Outcome
	results   resultCache
	tracker   *zkserver.SessionTracker // leader only
	touched   map[int64]bool           // follower: touches to forward
	clientReq int                      // client writes since the last rate sample
	rate      float64
	lastRate  time.Time
}

type submit struct {
	txn  datatree.Txn
	ch   chan zkserver.Outcome
	user bool // a client write (counts toward theta_r)
}

type nodeStatus struct {
	zab   zab.Status
	epoch uint64
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
		pending: map[uint64]chan zkserver.Outcome{}, touched: map[int64]bool{},
		timeline: event.NewTimeline(cfg.ID),
	}
	// Request ids must be unique across restarts: the start time in ms, then a counter.
	n.nextReq = uint64(n.start.UnixMilli()) << 20
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
	if err := n.buildCores(restored.Persisted); err != nil {
		return err
	}
	if err := n.listen(lns); err != nil {
		return err
	}
	links, err := n.linkSchedule()
	if err != nil {
		return err
	}
	n.startTransports(links)
	return n.startServers()
}

// openStore opens the data directory and restores the tree; a fresh server preloads.
func (n *Node) openStore() (*storage.Restored, error) {
	cfg := n.cfg
	st, err := storage.Open(cfg.DataDir, storage.Options{Fsync: cfg.Fsync, Logger: n.log})
	if err != nil {
		return nil, fmt.Errorf("open data dir %s: %w", cfg.DataDir, err)
	}
	n.store = st
	restored, err := st.Restore(n.ctx)
	if err != nil {
		return nil, fmt.Errorf("restore from %s: %w", cfg.DataDir, err)
	}
	n.tree = restored.Tree
	fresh := len(restored.Persisted.Log) == 0 && restored.Persisted.Snapshot == 0 && !n.tree.Exists("/preload")
	if fresh && cfg.PreloadMB > 0 {
		// Every server preloads the same deterministic tree at zxid 0, so the
		// ensemble starts identical; the snapshot makes it survive a restart.
		t0 := time.Now()
		n.tree.Preload(int64(cfg.PreloadMB) << 20)
		if _, err := st.Snapshot(n.tree); err != nil {
			return nil, fmt.Errorf("snapshot of the preloaded tree: %w", err)
		}
		n.log.Info("preloaded", "mb", cfg.PreloadMB, "nodes", n.tree.NodeCount(), "took", time.Since(t0))
	}
	return &restored, nil
}

// buildCores makes the broadcast core from the persisted state and the election core
// with the configured oracle.
func (n *Node) buildCores(persisted zab.Persisted) error {
	cfg := n.cfg
	var ids []int
	for _, p := range cfg.Servers {
		ids = append(ids, p.ID)
	}
	tick := time.Duration(cfg.Tick)
	zc := zab.DefaultConfig(cfg.ID, ids, tick)
	zc.Window, zc.FetchFrom, zc.Logger = cfg.SnapWindow, zab.FetchFirst, n.log.With("core", "zab")
	var err error
	if n.bcast, err = zab.New(zc, persisted); err != nil {
		return fmt.Errorf("broadcast core: %w", err)
	}
	oracle, err := pole.FromConfig(cfg.Oracle)
	if err != nil {
		return fmt.Errorf("oracle: %w", err)
	}
	if cfg.InitialLeader != 0 {
		oracle = pole.Initial{Leader: cfg.InitialLeader, Oracle: oracle}
	}
	pc := pole.DefaultConfig(cfg.ID, ids, oracle, tick)
	pc.HeartbeatTicks = max(1, int(time.Duration(cfg.Heartbeat)/tick))
	pc.Logger = n.log.With("core", "pole")
	if n.elect, err = pole.NewNode(pc); err != nil {
		return fmt.Errorf("election core: %w", err)
	}
	n.elect.SetZxid(uint64(n.bcast.Status().LastZxid))
	return nil
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

// linkSchedule reads the user-space links from the configured plan; zero when the
// network is real (or emulated by the kernel).
func (n *Node) linkSchedule() (userLinks, error) {
	if n.cfg.LinkPlan == "" {
		return userLinks{}, nil
	}
	plan, err := netem.ReadPlan(n.cfg.LinkPlan)
	if err != nil {
		return userLinks{}, fmt.Errorf("link plan: %w", err)
	}
	sched, err := plan.Scheduler(n.cfg.ID)
	if err != nil {
		return userLinks{}, fmt.Errorf("link plan %s: %w", n.cfg.LinkPlan, err)
	}
	n.log.Info("user-space links from plan", "plan", n.cfg.LinkPlan)
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
	var err error
	n.zk, err = zkserver.New(zkserver.Config{
		ServerID: int64(cfg.ID), Tick: time.Duration(cfg.Tick),
		MinSessionTimeout: time.Duration(cfg.MinSessionTimeout), MaxSessionTimeout: time.Duration(cfg.MaxSessionTimeout),
		Secret: secret[:], Logger: n.log.With("port", "client"),
	}, (*backend)(n))
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
func (n *Node) Stop() {
	n.cancel()
	n.closeAll()
	n.wg.Wait()
	if n.store != nil {
		n.store.Close()
	}
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

// now is the cores' monotonic clock.
func (n *Node) now() time.Duration { return time.Since(n.start) }

// run is the only goroutine that touches the cores and the store.
func (n *Node) run() {
	defer n.wg.Done()
	tick := time.NewTicker(time.Duration(n.cfg.Tick))
	defer tick.Stop()
	// STARTED carries the last zxid restored from the data directory: a restarted
	// server shows here that it came back with its old state.
	n.timeline.Add(event.Event{Kind: event.Started, Zxid: uint64(n.bcast.Status().LastZxid)})
	n.elect.NewElection()
	n.lastRate = time.Now()
	for {
		n.drain()
		select {
		case <-n.ctx.Done():
			n.failPending(errors.New("server stopping"))
			return
		case m := <-n.election.Recv():
			var pm pole.Message
			if err := pm.UnmarshalBinary(m.Payload); err != nil {
				n.log.Warn("bad election message", "from", m.From, "err", err)
				continue
			}
			if err := n.elect.Step(n.now(), pm); err != nil {
				n.log.Warn("election message refused", "from", m.From, "err", err)
			}
		case m := <-n.peer.Recv():
			n.onPeer(m)
		case e := <-n.peer.Events():
			switch {
			case e.Closed:
				n.bcast.Closed(e.Peer)
			case !e.Up:
				n.bcast.Disconnected(e.Peer)
			}
		case <-n.election.Events():
		case s := <-n.submits:
			n.onSubmit(s)
		case d := <-n.snapDone:
			n.onSnapDone(d)
		case id := <-n.touches:
			n.touch(id)
		case <-tick.C:
			n.elect.Tick(n.now())
			n.bcast.Tick()
			n.onTick()
		}
	}
}

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
		var zm zab.Message
		if err := zm.UnmarshalBinary(m.Payload[1:]); err != nil {
			n.log.Warn("bad broadcast message", "from", m.From, "err", err)
			return
		}
		if zm.From != m.From {
			n.log.Warn("broadcast message with a forged sender", "from", m.From, "claims", zm.From)
			return
		}
		if err := n.bcast.Step(zm); err != nil {
			n.log.Warn("broadcast message refused", "from", m.From, "err", err)
		}
	case frameTouches:
		for b := m.Payload[1:]; len(b) >= 8; b = b[8:] {
			n.touch(int64(binary.BigEndian.Uint64(b)))
		}
	}
}

func (n *Node) onSubmit(s submit) {
	if s.user {
		n.clientReq++
	}
	data := s.txn.Marshal()
	n.nextReq++
	id := n.nextReq
	if err := n.bcast.Propose(id, data); err != nil {
		if s.ch != nil {
			s.ch <- zkserver.Outcome{Err: err}
		}
		return
	}
	if s.ch != nil {
		n.pending[id] = s.ch
	}
}

func (n *Node) touch(id int64) {
	if n.tracker != nil {
		n.tracker.Touch(id, time.Now())
		return
	}
	n.touched[id] = true
}

// onTick runs the driver's periodic duties: theta_r, session touches and expiry.
func (n *Node) onTick() {
	if d := time.Since(n.lastRate); d >= time.Duration(n.cfg.Heartbeat) {
		// theta_r: client writes per second, smoothed over a few heartbeats.
		sample := float64(n.clientReq) / d.Seconds()
		n.rate = 0.5*n.rate + 0.5*sample
		if n.rate < 0.01 {
			n.rate = sample
		}
		n.elect.SetRate(n.rate)
		n.clientReq, n.lastRate = 0, time.Now()
	}
	st := n.bcast.Status()
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
	}
}

// drain hands both cores' output to the world until neither has any.
func (n *Node) drain() {
	for n.elect.HasReady() || n.bcast.HasReady() {
		if n.elect.HasReady() {
			n.electionReady(n.elect.Ready())
		}
		if n.bcast.HasReady() {
			n.broadcastReady(n.bcast.Ready())
		}
	}
	n.elect.SetZxid(uint64(n.bcast.Status().LastZxid))
	n.publish()
}

func (n *Node) electionReady(rd pole.Ready) {
	for _, m := range rd.Messages {
		b, err := m.MarshalBinary()
		if err != nil {
			n.log.Error("encode election message", "err", err)
			continue
		}
		n.election.Send(m.To, transport.Election, b)
	}
	for _, e := range rd.Events {
		switch e.Kind {
		case pole.EventLooking:
			n.timeline.Add(event.Event{Kind: event.Election, Epoch: e.Epoch, Zxid: uint64(n.bcast.Status().LastZxid)})
		case pole.EventLeader:
			n.timeline.Add(event.Event{Kind: event.Elected, Epoch: e.Epoch, Leader: e.Leader})
			if err := n.bcast.Elected(e.Leader); err != nil {
				n.log.Error("elected leader refused", "err", err)
			}
		case pole.EventResign:
			n.timeline.Add(event.Event{Kind: event.Resign, Epoch: e.Epoch})
			n.bcast.StepDown("resigned (a better leader exists)")
		}
	}
}

func (n *Node) broadcastReady(rd zab.Ready) {
	for _, m := range rd.Messages {
		if m.Type == zab.MsgSnap {
			n.sendSnapshot(m)
			continue
		}
		n.sendZab(m)
	}
	installed, err := n.store.Persist(rd.Persist)
	if err != nil {
		// A replica that cannot persist must not acknowledge anything: stop.
		n.log.Error("persist failed; stopping", "err", err)
		n.timeline.Add(event.Event{Kind: event.Failed, Reason: err.Error()})
		n.cancel()
		return
	}
	n.mu.Lock()
	if installed != nil {
		n.tree = installed
		n.log.Info("installed snapshot", "zxid", installed.LastZxid(), "nodes", installed.NodeCount())
	}
	for _, t := range rd.Committed {
		var txn datatree.Txn
		if err := txn.Unmarshal(t.Data); err != nil {
			n.log.Error("undecodable committed txn", "zxid", t.Zxid, "err", err)
			continue
		}
		res := n.tree.Apply(t.Zxid, txn)
		n.results.put(t.Zxid, res)
		n.zk.Applied(txn, res)
		n.trackSession(txn, res)
	}
	n.mu.Unlock()
	for _, r := range rd.Results {
		ch, ok := n.pending[r.ReqID]
		if !ok {
			continue
		}
		delete(n.pending, r.ReqID)
		if r.Err != nil {
			ch <- zkserver.Outcome{Err: r.Err}
			continue
		}
		res, ok := n.results.get(r.Zxid)
		if !ok {
			ch <- zkserver.Outcome{Err: fmt.Errorf("result of %v no longer known", r.Zxid)}
			continue
		}
		ch <- zkserver.Outcome{Result: res}
	}
	for _, e := range rd.Events {
		n.onBroadcastEvent(e)
	}
	n.bcast.Advance()
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

func (n *Node) onBroadcastEvent(e zab.Event) {
	ev := event.Event{Kind: e.Type.Kind(), Epoch: uint64(e.Epoch), Leader: e.Leader, Zxid: uint64(e.Zxid), Reason: e.Reason}
	n.timeline.Add(ev)
	n.log.Info("broadcast", "event", e.String())
	switch e.Type {
	case zab.EventLooking:
		n.tracker = nil
		n.zk.CloseConnections()
		n.failPending(zab.ErrLeaderChanged)
		n.elect.NewElection()
	case zab.EventLeading:
		// A new leader starts every session's clock afresh, as ZooKeeper does.
		n.tracker = zkserver.NewSessionTracker()
		n.mu.RLock()
		for _, s := range n.tree.Sessions() {
			n.tracker.Add(s.ID, time.Duration(s.Timeout)*time.Millisecond, time.Now())
		}
		n.mu.RUnlock()
	case zab.EventFollowing:
		n.tracker = nil
	}
}

func (n *Node) failPending(err error) {
	for id, ch := range n.pending {
		ch <- zkserver.Outcome{Err: err}
		delete(n.pending, id)
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
	b, err := m.AppendBinary([]byte{frameZab})
	if err != nil {
		n.log.Error("encode broadcast message", "msg", m.String(), "err", err)
		return
	}
	n.peer.Send(m.To, transport.Broadcast, b)
}

// sendSnapshot streams this server's state as it is before this Ready's commits (the
// SNAP's zxid) to the peer, from another goroutine, so the loop keeps committing: the
// tree's View costs Apply a few milliseconds even at 250 MB. Until the last chunk is
// queued, whatever else the loop sends that peer waits in n.held, so the peer's FIFO
// order stays the protocol's; the user-space link paces the chunks at window / RTT.
func (n *Node) sendSnapshot(m zab.Message) {
	v := n.tree.View()
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
		pr, pw := io.Pipe()
		go func() {
			pw.CloseWithError(v.Write(pw))
			v.Close()
		}()
		chunks := 0
		err := zab.StreamSnapshot(n.ctx, m, pr, 1<<20, func(c zab.Message) error {
			chunks++
			n.sendZabNow(c)
			return nil
		})
		pr.CloseWithError(errors.New("snapshot stream ended"))
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
		n.bcast.Disconnected(d.peer)
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
	e, _ := n.elect.Leader()
	n.status.Store(&nodeStatus{zab: n.bcast.Status(), epoch: e, peers: n.elect.Peers()})
}

// resultCache remembers recent apply results by zxid, so a Result can be matched
// with what its transaction did.
type resultCache struct {
	m     map[zab.Zxid]datatree.Result
	order []zab.Zxid
}

const resultCacheSize = 1 << 16

func (c *resultCache) put(z zab.Zxid, r datatree.Result) {
	if c.m == nil {
		c.m = map[zab.Zxid]datatree.Result{}
	}
	c.m[z] = r
	c.order = append(c.order, z)
	if len(c.order) > resultCacheSize {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *resultCache) get(z zab.Zxid) (datatree.Result, bool) {
	r, ok := c.m[z]
	return r, ok
}
