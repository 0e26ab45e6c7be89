package replica

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/pole"
	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/zab"
	"github.com/polebench/polebench/zkserver"
)

// Driver is poled's logic between its two pure cores and the world: what a peer's
// message, a client's write, a tick or a closed link does to the election (pole) and
// broadcast (zab) cores, and what their output means (send, persist, apply, reply,
// record). It does no I/O and reads no clock: poled's Node gives it sockets, files
// and the monotonic clock; the simulator (package sim) virtual links, an in-memory
// disk and virtual time. Both therefore make the same decisions.
//
// A Driver is not safe for concurrent use, except Read, which other goroutines may
// call while the owner applies (the tree is guarded by a read-write lock).
type Driver struct {
	log       *slog.Logger
	io        IO
	heartbeat time.Duration
	id        int
	tick      time.Duration

	elect *pole.Node
	bcast *zab.Node

	mu   sync.RWMutex
	tree *datatree.Tree

	nextReq   uint64
	pending   map[uint64]func(zkserver.Outcome)
	clientReq int // client writes since the last rate sample
	rate      float64
	lastRate  time.Duration
	leading   bool // the broadcast core's last role event was LEADING
	// pingAt: when each peer's latest heartbeat arrived, so its pong can say how long
	// it waited here.
	pingAt map[int]time.Duration
	// results and found: broadcastReady's arrays, kept between Readies.
	results []datatree.Result
	found   []bool

	tr *tracer // nil unless Config.Trace
}

// IO is what a Driver does to the world. Calls come from the Driver's owner's
// goroutine, during Drain (Applied under the tree's write lock).
type IO interface {
	// SendElection sends an encoded election message.
	SendElection(to int, b []byte)
	// SendZab sends a broadcast message, in order with earlier ones to m.To.
	SendZab(m zab.Message)
	// SendSnapshot streams v (the state a MsgSnap asks for) to m.To as MsgSnapChunks,
	// before anything sent to m.To later; it closes v when done.
	SendSnapshot(m zab.Message, v *datatree.View)
	// Persist carries out the core's persistence operations in order and returns the
	// tree a completed snapshot installed, if any.
	Persist(ops []zab.Op) (*datatree.Tree, error)
	// Record adds an event to the server's timeline.
	Record(e event.Event)
	// Applied hears about each applied transaction (the client port's watches,
	// session tracking).
	Applied(txn datatree.Txn, res datatree.Result)
	// Role hears about the broadcast core's role events (LOOKING, LEADING,
	// FOLLOWING) before the Driver acts on them.
	Role(e zab.Event)
	// Fail says persistence failed: the server must stop without acknowledging more.
	Fail(err error)
	// ResetPeers breaks the broadcast streams to and from every peer (transport.Reset).
	ResetPeers()
	// Now is the owner's clock: poled's netem.Now, the simulator's virtual time. It
	// stamps heartbeats as they leave and, with Config.Trace, a write's steps.
	Now() time.Duration
	// Mark records one step of a write (with Config.Trace only).
	Mark(m trace.Mark)
}

// NewDriver builds the cores of server cfg.ID (cfg with defaults) from its persisted
// state and restored tree.
func NewDriver(cfg Config, persisted zab.Persisted, tree *datatree.Tree, io IO, log *slog.Logger) (*Driver, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var ids []int
	for _, p := range cfg.Servers {
		ids = append(ids, p.ID)
	}
	tick := time.Duration(cfg.Tick)
	zc := zab.DefaultConfig(cfg.ID, ids, tick)
	zc.Window, zc.FetchFrom, zc.Logger = cfg.SnapWindow, zab.FetchFirst, log.With("core", "zab")
	zc.Unsafe, persisted = cfg.Broken.unsafe(), cfg.Broken.restored(persisted)
	if cfg.Broken != "" {
		log.Warn("broken on purpose (a checker's test)", "variant", cfg.Broken)
	}
	if cfg.InitLimit > 0 {
		zc.InitTicks = max(10, int(time.Duration(cfg.InitLimit)/tick))
	}
	d := &Driver{log: log, io: io, heartbeat: time.Duration(cfg.Heartbeat), id: cfg.ID, tick: tick, tree: tree,
		pending: map[uint64]func(zkserver.Outcome){}, pingAt: map[int]time.Duration{}}
	var err error
	if d.bcast, err = zab.New(zc, persisted); err != nil {
		return nil, fmt.Errorf("broadcast core: %w", err)
	}
	oracle, err := pole.FromConfig(cfg.Oracle)
	if err != nil {
		return nil, fmt.Errorf("oracle: %w", err)
	}
	if cfg.InitialLeader != 0 {
		oracle = pole.Initial{Leader: cfg.InitialLeader, Oracle: oracle}
	}
	pc := pole.DefaultConfig(cfg.ID, ids, oracle, tick)
	pc.HeartbeatTicks = max(1, int(time.Duration(cfg.Heartbeat)/tick))
	pc.Logger = log.With("core", "pole")
	if d.elect, err = pole.NewNode(pc); err != nil {
		return nil, fmt.Errorf("election core: %w", err)
	}
	d.elect.SetZxid(d.bcast.Status().LastZxid)
	if cfg.Trace {
		d.tr = newTracer(cfg.ID, io)
	}
	return d, nil
}

// SetRequestBase makes request ids start above base: they must be unique across a
// server's restarts (poled uses its start time).
func (d *Driver) SetRequestBase(base uint64) { d.nextReq = base }

// Start records STARTED (with the last zxid restored: a restarted server shows that
// it came back with its old state) and starts the first election.
func (d *Driver) Start(now time.Duration) {
	d.io.Record(event.Event{Kind: event.Started, Zxid: d.bcast.Status().LastZxid})
	d.elect.NewElection()
	d.lastRate = now
}

// StepElection hands the election core a message from a peer that arrived at at (the
// owner's clock; the instant a pong arrived ends its RTT, however long it waited).
func (d *Driver) StepElection(at time.Duration, from int, payload []byte) {
	var pm pole.Message
	if err := pm.UnmarshalBinary(payload); err != nil {
		d.log.Warn("bad election message", "from", from, "err", err)
		return
	}
	if pm.Type == pole.MsgPing {
		d.pingAt[from] = at
	}
	d.tr.input(at)
	if err := d.elect.Step(at, pm); err != nil {
		d.log.Warn("election message refused", "from", from, "err", err)
	}
}

// StepZab hands the broadcast core an encoded message from peer from that arrived at
// at (the owner's clock); what it decodes aliases payload, which must not change
// afterwards.
func (d *Driver) StepZab(at time.Duration, from int, payload []byte) {
	var zm zab.Message
	if err := zm.UnmarshalShared(payload); err != nil { // a frame of its own: a chunk's megabyte is not copied
		d.log.Warn("bad broadcast message", "from", from, "err", err)
		return
	}
	d.DeliverZab(at, from, zm)
}

// DeliverZab hands the broadcast core a decoded message from peer from; the
// simulator, whose links carry messages rather than bytes, calls it directly. What
// zm holds must not change afterwards.
func (d *Driver) DeliverZab(at time.Duration, from int, zm zab.Message) {
	if zm.From != from {
		d.log.Warn("broadcast message with a forged sender", "from", from, "claims", zm.From)
		return
	}
	d.tr.step(at, zm)
	if err := d.bcast.Step(zm); err != nil {
		d.log.Warn("broadcast message refused", "from", from, "err", err)
	}
}

// Closed says peer's broadcast stream closed (its process died): a follower whose
// leader it was looks for another at once.
func (d *Driver) Closed(peer int) { d.bcast.Closed(peer) }

// Disconnected says peer's broadcast stream broke for another reason.
func (d *Driver) Disconnected(peer int) { d.bcast.Disconnected(peer) }

// Submit proposes a transaction; done (if not nil) gets its outcome once this server
// has applied it, or an error. user counts it as a client write toward theta_r.
func (d *Driver) Submit(txn datatree.Txn, user bool, done func(zkserver.Outcome)) {
	if user {
		d.clientReq++
	}
	d.nextReq++
	id := d.nextReq
	d.tr.submit(id)
	if err := d.bcast.Propose(id, txn.Marshal()); err != nil {
		if done != nil {
			done(zkserver.Outcome{Err: err})
		}
		return
	}
	if done != nil {
		d.pending[id] = done
	}
}

// Tick advances both cores' clocks and, once per heartbeat, samples theta_r: client
// writes per second, smoothed over a few heartbeats.
func (d *Driver) Tick(now time.Duration) {
	d.tr.input(now)
	d.elect.Tick(now)
	d.bcast.Tick()
	if el := now - d.lastRate; el >= d.heartbeat {
		sample := float64(d.clientReq) / el.Seconds()
		d.rate = 0.5*d.rate + 0.5*sample
		if d.rate < 0.01 {
			d.rate = sample
		}
		d.elect.SetRate(d.rate)
		d.clientReq, d.lastRate = 0, now
	}
}

// Drain hands both cores' output to the world until neither has any.
func (d *Driver) Drain() {
	for d.elect.HasReady() || d.bcast.HasReady() {
		if d.elect.HasReady() {
			d.electionReady(d.elect.Ready())
		}
		if d.bcast.HasReady() {
			d.broadcastReady(d.bcast.Ready())
		}
	}
	d.elect.SetZxid(d.bcast.Status().LastZxid)
}

func (d *Driver) electionReady(rd pole.Ready) {
	for _, m := range rd.Messages {
		// A heartbeat's RTT is the links': a ping is stamped as it leaves, not at the
		// tick, and a pong adds how long its ping waited here to the echoed clock.
		switch m.Type {
		case pole.MsgPing:
			m.Clock = d.io.Now()
		case pole.MsgPong:
			if at, ok := d.pingAt[m.To]; ok {
				m.Clock += max(d.io.Now()-at, 0)
				delete(d.pingAt, m.To)
			}
		}
		b, err := m.MarshalBinary()
		if err != nil {
			d.log.Error("encode election message", "err", err)
			continue
		}
		d.io.SendElection(m.To, b)
	}
	for _, e := range rd.Events {
		switch e.Kind {
		case pole.EventLooking:
			d.io.Record(event.Event{Kind: event.Election, ElectionEpoch: e.Epoch, Zxid: d.bcast.Status().LastZxid})
		case pole.EventLeader:
			d.io.Record(event.Event{Kind: event.Elected, ElectionEpoch: e.Epoch, Leader: e.Leader})
			if err := d.bcast.Elected(e.Leader); err != nil {
				d.log.Error("elected leader refused", "err", err)
			}
		case pole.EventResign:
			d.io.Record(event.Event{Kind: event.Resign, ElectionEpoch: e.Epoch})
			d.bcast.StepDown("resigned (a better leader exists)")
		}
	}
}

func (d *Driver) broadcastReady(rd zab.Ready) {
	d.tr.ready(rd, d.bcast.Status())
	for _, m := range rd.Messages {
		if m.Type == zab.MsgSnap {
			// The state as it is before this Ready's commits: the SNAP's zxid.
			d.io.SendSnapshot(m, d.tree.View())
			continue
		}
		d.io.SendZab(m)
	}
	installed, err := d.io.Persist(rd.Persist)
	if err != nil {
		// A replica that cannot persist must not acknowledge anything: stop.
		d.log.Error("persist failed; stopping", "err", err)
		d.io.Record(event.Event{Kind: event.Failed, Reason: err.Error()})
		d.io.Fail(err)
		return
	}
	// A Ready with results is one per client write: they are gathered in the
	// Driver's arrays, taken while in use (a done callback that drains again makes
	// its own).
	var results []datatree.Result
	var found []bool
	if n := len(rd.Results); n > 0 {
		results, found, d.results, d.found = d.results, d.found, nil, nil
		if n > cap(results) {
			results, found = make([]datatree.Result, n), make([]bool, n)
		}
		results, found = results[:n], found[:n]
		clear(found)
	}
	if installed != nil || len(rd.Committed) > 0 { // most Readies only send or persist
		d.apply(rd, installed, results, found)
	}
	d.tr.applied(rd, d.bcast.Status())
	for i, r := range rd.Results {
		done, ok := d.pending[r.ReqID]
		if !ok {
			continue
		}
		delete(d.pending, r.ReqID)
		if r.Err != nil {
			done(zkserver.Outcome{Err: r.Err})
			continue
		}
		if !found[i] {
			done(zkserver.Outcome{Err: fmt.Errorf("result of %v not among the transactions it committed with", r.Zxid)})
			continue
		}
		done(zkserver.Outcome{Result: results[i]})
	}
	if results != nil {
		clear(results) // what the results point to is not kept alive
		d.results, d.found = results, found
	}
	for _, e := range rd.Events {
		reason := e.Reason
		if e.InitLimit {
			reason = d.initLimitWords(e)
		}
		d.io.Record(event.Event{Kind: e.Type.Kind(), Epoch: e.Epoch, Leader: e.Leader, Zxid: e.Zxid, Reason: reason})
		d.log.Info("broadcast", "event", e.String())
		switch e.Type {
		case zab.EventLooking, zab.EventLeading, zab.EventFollowing:
			d.io.Role(e)
		}
		if e.Type == zab.EventLooking {
			if d.leading {
				// A leader that steps down drops its followers' connections, as
				// ZooKeeper's does: they look for a leader at once. Left attached, they
				// would keep voting for it and follow it again when it re-elects itself
				// without a quorum, and the ensemble could split for good.
				d.io.ResetPeers()
			}
			d.FailPending(zab.ErrLeaderChanged)
			d.elect.NewElection()
		}
		switch e.Type {
		case zab.EventLeading:
			d.leading = true
		case zab.EventLooking, zab.EventFollowing:
			d.leading = false
		}
	}
	d.bcast.Advance()
}

// initLimitWords says what a recovery that hit its init limit waited for: the state
// it still lacked came in too slowly for the limit, or not at all.
func (d *Driver) initLimitWords(e zab.Event) string {
	waited := time.Duration(e.Waited) * d.tick
	from := "its leader"
	if e.Leader != 0 {
		from = fmt.Sprintf("p%d", e.Leader)
	}
	what := "to sync with"
	if e.Reason == "recovery exceeded InitTicks" {
		what = "as leader for a quorum, fetching from"
	}
	rate := float64(e.Received) * 8 / max(waited.Seconds(), 1e-9) / 1e6
	return fmt.Sprintf("%sp%d waited %.1f s %s %s and received %.1f MB (%d bytes, %.1f Mbit/s) before its init limit ended the recovery; a larger init_limit would let it finish",
		event.InitLimitPrefix, d.id, waited.Seconds(), what, from, float64(e.Received)/(1<<20), e.Received, rate)
}

// apply installs the snapshot a Ready completed, if any, and applies its committed
// transactions; a write's result is in the Ready that commits it: results and found
// (as long as rd.Results) get each one's as they apply.
func (d *Driver) apply(rd zab.Ready, installed *datatree.Tree, results []datatree.Result, found []bool) {
	next := 0 // the next successful result; their zxids ascend as Committed's do
	skip := func() {
		for next < len(rd.Results) && rd.Results[next].Err != nil {
			next++
		}
	}
	skip()
	d.mu.Lock()
	defer d.mu.Unlock()
	if installed != nil {
		d.tree = installed
		d.log.Info("installed snapshot", "zxid", installed.LastZxid(), "nodes", installed.NodeCount())
	}
	for _, t := range rd.Committed {
		var txn datatree.Txn
		if err := txn.UnmarshalShared(t.Data); err != nil { // a committed txn's bytes never change
			d.log.Error("undecodable committed txn", "zxid", t.Zxid, "err", err)
			continue
		}
		res := d.tree.Apply(t.Zxid, txn)
		if next < len(rd.Results) && rd.Results[next].Zxid == t.Zxid {
			results[next], found[next] = res, true
			next++
			skip()
		}
		d.io.Applied(txn, res)
	}
}

// FailPending answers every write still waiting with err.
func (d *Driver) FailPending(err error) {
	d.tr.failPending()
	for _, id := range slices.Sorted(maps.Keys(d.pending)) { // in order: the simulator is deterministic
		done := d.pending[id]
		delete(d.pending, id)
		done(zkserver.Outcome{Err: err})
	}
}

// Read calls fn with the tree under the read lock; any goroutine may call it.
func (d *Driver) Read(fn func(t *datatree.Tree)) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	fn(d.tree)
}

// Status is the broadcast core's status.
func (d *Driver) Status() zab.Status { return d.bcast.Status() }

// Election is the election core's view: the leader's epoch and the peers' scores.
func (d *Driver) Election() (epoch pole.Epoch, peers []pole.PeerStatus) {
	epoch, _ = d.elect.Leader()
	return epoch, d.elect.Peers()
}
