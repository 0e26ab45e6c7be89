// Package sim runs a spec's servers in virtual time: the same replica.Driver (and
// through it the pole, zab and datatree cores) that poled runs, over links that the
// plan's netem.DelayLines schedule (the iproute2 tables, the jitter arithmetic, per-link
// order and the window / RTT bandwidth of the user-space links), with clients that
// issue exactly the requests of a real run (the workload's schedules, keys and picks
// from the same seeds) and record them the same way. Faults are nemesis.Play on a
// virtual clock. One event loop does everything, so a seed gives one history;
// with Config.Workers, one per DC in windows gives the same (window.go).
//
// What the simulator reduces to constants is documented on Config: a server's CPU per
// request, a write's latency (its loop waits for it; a kill loses what is not yet
// written), the client hop.
package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/gctune"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/topology"
	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/workload"
	"github.com/polebench/polebench/workload/arrival"
	"github.com/polebench/polebench/workload/client"
	"github.com/polebench/polebench/zab"
)

// Config is one simulated run.
type Config struct {
	Topology      *topology.Topology
	Plan          netem.Plan
	Oracle        score.Oracle
	InitialLeader int
	PreloadMB     int
	InitLimit     time.Duration // a server's patience to recover (replica.Config.InitLimit); 0: poled's default
	Faults        []nemesis.Fault

	Rates        map[string]float64 // req/s per DC
	Arrival      arrival.Kind
	Seed         uint64 // the run's seed: the workload's streams
	Duration     time.Duration
	PayloadBytes int // default 1024
	Keys         int // default 1000

	// ServiceTime is the CPU a server spends on each client request before proposing
	// it (one queue per server). Default DefaultServiceTime.
	ServiceTime time.Duration
	// ClientDelay is the one-way delay between a client and a server of its DC
	// (clients run beside their DC's servers). Default DefaultClientDelay.
	ClientDelay time.Duration
	// HopDelay is how long a server takes to act on a peer's message once it arrived
	// (the message is handed over that much later; the trace marks the arrival).
	// Default DefaultHopDelay.
	HopDelay time.Duration
	// SnapshotWriteRate and SnapshotLoadRate are how fast a server writes its state
	// into a snapshot stream and reads a received one into a tree (bytes/s; a
	// snapshot transfer is limited by these as well as by the link). Defaults
	// DefaultSnapshotWriteRate, DefaultSnapshotLoadRate; negative means no limit.
	SnapshotWriteRate, SnapshotLoadRate float64
	// Trace records each write's steps on every server as poled's --trace does
	// (Result.Marks), for the latency anatomy.
	Trace bool
	// DiskLatency is how long a server's write to its log takes; its loop waits for it.
	// Default DefaultDiskLatency; negative means none.
	DiskLatency time.Duration

	// Workers is how many goroutines step the DCs' partitions, in windows as long as
	// the least delay between two DCs (window.go). The outputs are the same at any
	// count; 0 or 1 is one loop.
	Workers int
	// Stall is how long in wall time a run may make no progress (its clock does not
	// move, or a window of Workers steps no partition) before it fails with its state
	// in the error, rather than spin. Default DefaultStall.
	Stall time.Duration

	Log *slog.Logger

	// Broken, for the checkers' tests only, breaks the named servers on purpose
	// (replica.Variant, one duty each); the others run the sound code.
	Broken map[int]replica.Variant

	// yields, in tests, makes the windows' hand-off yield the processor at every step;
	// loseWindow, in tests, loses a count in that window's hand-off (1 is the first).
	yields     bool
	loseWindow uint64
	// beforeFinish, in tests, tampers with the cluster before the checks read it.
	beforeFinish func(s *Sim)
	// digests asks for each live server's state hash at the end (Check compares them).
	digests bool
	// keepMarks, in tests, keeps every trace mark (pruneMarks drops none); markChunk,
	// in tests, makes chunks that small, so that short runs fill them.
	keepMarks bool
	markChunk int
	// ackBeforeWrite, in tests, breaks the servers on purpose: they go on (and
	// acknowledge proposals) before their writes are done, so a kill loses what they
	// acknowledged. The checks must catch it.
	ackBeforeWrite bool
}

// The per-hop costs, from the latency anatomy of the local backend on a quiet machine
// (summary.json's anatomy.*.phases_ms; the command, the machine and the phases
// measured are in docs/performance.md, "The simulator's costs"):
//   - DefaultServiceTime: a client request from the client port to the loop (the
//     anatomy's intake), charged as the serving server's CPU, so requests queue behind it;
//   - DefaultClientDelay: the client library and socket each way (to_server and
//     to_client);
//   - DefaultHopDelay: a server acting on a peer's message (leader, quorum_follower,
//     commit, apply): goroutine hand-offs, decoding, the loop.
//
// The anatomy's send lag is the harness's pacer, which the simulator's clients do not
// have.
const (
	DefaultServiceTime = 40 * time.Microsecond
	DefaultClientDelay = 100 * time.Microsecond
	DefaultHopDelay    = 100 * time.Microsecond
	// DefaultStall: the longest window measured was about a second on a loaded host
	// (docs/simulator.md, "The watchdog"), so a minute without progress is a hang.
	DefaultStall = time.Minute
)

// DefaultDiskLatency is a write to the log with fsync off, as poled's runs keep it: a
// 1 kB append as go test ./storage -run XXX -bench LogAppend measured it.
// SyncDiskLatency is the same with fsync on (docs/performance.md).
const (
	DefaultDiskLatency = 9 * time.Microsecond
	SyncDiskLatency    = 950 * time.Microsecond
)

// DefaultSnapshotWriteRate and DefaultSnapshotLoadRate, bytes per second: a snapshot
// written to its file (go test ./storage -run XXX -bench SnapshotWrite -benchtime=1x
// -snapmb=250) and loaded into a tree (go test ./datatree -run XXX -bench ReadSnapshot
// -benchtime=1x -snapmb=100), as measured on a quiet machine (docs/performance.md).
const (
	DefaultSnapshotWriteRate = 546e6
	DefaultSnapshotLoadRate  = 311e6
)

// Result is what a simulated run produced, in the shapes a real run's parts produce.
type Result struct {
	Records      []workload.Record
	Timeline     []record.Record
	Verification *workload.Verification
	RTTs         map[string]any // what each server's heartbeats measured, as rtts.json
	RunID        string
	// Converged says every live server served and had applied the leader's last
	// commit at the end; Digests are then each live server's state hash (for Check).
	Converged bool
	Digests   map[int]string
	// Marks are each server's trace marks (Config.Trace), in order, in the chunks
	// they were gathered in (a run's millions are not copied into one slice), in
	// virtual ns since the servers started; the load started at MarksStart.
	Marks      map[int][][]trace.Mark
	MarksStart int64
	Events     uint64        // simulated events processed
	Virtual    time.Duration // virtual time from the servers' start to the end
	// Windows is how many windows the partitions ran in (Config.Workers; 0 on one
	// loop). OneLoop says why a windowed run was simulated again on one loop.
	Windows uint64
	OneLoop string
}

// base is the wall-clock origin of virtual time: events carry absolute times, and a
// fixed origin keeps a seed's output byte-identical.
var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Sim is one simulated run in progress.
type Sim struct {
	cfg   Config
	log   *slog.Logger
	now   int64 // ns of virtual time since the servers started
	queue eventQueue
	count uint64
	// cur is the partition whose event is being processed (root between events): it
	// pushes what that event schedules, numbered by its own counter in seqs.
	cur  int
	seqs []uint64 // by partition, seqPad apart (partitions count on different cores)

	servers []*server   // by id; [0] unused
	links   []linkState // by linkKey.index
	// lq holds each link's messages in flight, in order: the event queue holds only
	// each link's first (a link delivers in order, as TCP does).
	lq []linkQueue
	// parts is the partitions' count: the DCs, by name, as the clients are.
	parts int

	start   int64 // when the load started
	harness []record.Record
	clients []*dcClient
	reqs    []*request
	open    int // requests not ended yet
	runID   string
	keys    []string // the keyspace's paths, made once (a Sprintf per request was 3 % of a run)
	value   []byte   // the value being submitted
	err     error

	// A windowed run's (window.go): nil on one loop. idx is a partition's index
	// (root for the root Sim); the others are what a partition holds until its
	// window ends, and the log lines the root holds until the run ends.
	win     *windows
	idx     int
	outbox  []handover
	hrecs   []held[record.Record]
	hlogs   []held[logged]
	held    []logged
	redoWhy string
	// The event a partition is stepping: a link's sending and emptying at one
	// instant are ordered by their events.
	curPushed int64
	curKey    uint64

	// marksDue says a server of this partition filled a chunk of trace marks since
	// the last pruneMarks; deciders is what pruneMarks knows (the root's: marks.go).
	marksDue bool
	deciders deciderTable

	// stall is what progress last saw: the clock, when, and the events stepped then.
	stall struct {
		at     int64
		since  time.Time
		events uint64
	}
}

type linkKey struct {
	from, to int
	ch       channel
}

// linkState is what the nemesis and resets did to one direction of a channel.
type linkState struct {
	cut bool
	gen int // bumped when a cut or a reset breaks the channel's connection
}

func (k linkKey) index(n int) int { return (k.from*(n+1)+k.to)*2 + int(k.ch) }

// link is the state of k (ids are 1..N).
func (s *Sim) link(k linkKey) *linkState { return &s.links[k.index(len(s.servers)-1)] }

type channel int

const (
	chElection channel = iota
	chBroadcast
)

// Run simulates the spec's run and returns what it measured. ctx stops it early.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	// The servers' heap is large and busy: a full two-dc run's collector was 22 % of
	// its instructions at the default GOGC.
	defer gctune.Rare()()
	res, err := run(ctx, cfg)
	if !errors.Is(err, errRedo) {
		return res, err
	}
	why := err.Error()
	cfg.Workers = 1
	if res, err = run(ctx, cfg); res != nil {
		res.OneLoop = why
	}
	return res, err
}

func run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.PayloadBytes <= 0 {
		cfg.PayloadBytes = 1024
	}
	if cfg.Keys <= 0 {
		cfg.Keys = 1000
	}
	if cfg.ServiceTime == 0 {
		cfg.ServiceTime = DefaultServiceTime
	}
	if cfg.ClientDelay == 0 {
		cfg.ClientDelay = DefaultClientDelay
	}
	if cfg.HopDelay == 0 {
		cfg.HopDelay = DefaultHopDelay
	}
	cfg.ClientDelay, cfg.HopDelay = max(cfg.ClientDelay, 0), max(cfg.HopDelay, 0) // negative: none
	if cfg.SnapshotWriteRate == 0 {
		cfg.SnapshotWriteRate = DefaultSnapshotWriteRate
	}
	if cfg.SnapshotLoadRate == 0 {
		cfg.SnapshotLoadRate = DefaultSnapshotLoadRate
	}
	switch {
	case cfg.DiskLatency == 0:
		cfg.DiskLatency = DefaultDiskLatency
	case cfg.DiskLatency < 0:
		cfg.DiskLatency = 0
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Stall <= 0 {
		cfg.Stall = DefaultStall
	}
	if err := cfg.Plan.Validate(); err != nil {
		return nil, fmt.Errorf("sim: plan: %w", err)
	}
	// The simulator's links are the user-space delay lines: what they cannot emulate
	// (duplicates, reordering, correlations) stops the run here.
	if err := cfg.Plan.UserSpaceSupports(); err != nil {
		return nil, fmt.Errorf("sim: plan: %w", err)
	}
	n := cfg.Topology.N()
	s := &Sim{cfg: cfg, links: make([]linkState, (n+1)*(n+1)*2), runID: fmt.Sprintf("sim%x", cfg.Seed)}
	s.lq = make([]linkQueue, len(s.links))
	s.parts = len(cfg.Topology.DCs())
	s.seqs = make([]uint64, (root+1)*seqPad)
	s.cur = root
	for i := range s.lq {
		from, to := i/2/(n+1), i/2%(n+1)
		if from >= 1 && to >= 1 {
			s.lq[i].fire, s.lq[i].popAt = s.arriveFn(i), -1
		}
	}
	for i := range cfg.Keys {
		s.keys = append(s.keys, workload.KeyPath(client.DefaultPrefix, i))
	}
	s.log = slog.New(virtualTime{cfg.Log.Handler(), s})
	defer func() { s.win.close() }()
	// A windowed run that must go back to one loop says why, whatever the step it
	// stopped in made of the stop.
	redo := func(err error) error {
		if s.err == errRedo {
			return fmt.Errorf("%w: %s", errRedo, s.win.why)
		}
		return err
	}
	if err := s.boot(); err != nil {
		return nil, redo(err)
	}
	if err := s.setup(ctx); err != nil {
		return nil, redo(err)
	}
	s.load(ctx)
	if s.err != nil {
		return nil, redo(s.err)
	}
	if cfg.beforeFinish != nil {
		cfg.beforeFinish(s)
	}
	res, err := s.finish(ctx)
	if err != nil {
		return nil, redo(err)
	}
	if s.win != nil {
		res.Windows = s.win.n
		s.flushLogs(ctx)
	}
	return res, nil
}

// --- the event queue and the clock ---

type simEvent struct {
	at     int64
	pushed int64  // when it was scheduled
	key    uint64 // the partition that scheduled it, its own, and its counter (eventKey)
	fn     func()
}

// The order of events is (at, pushed, key): a total order in which every part is
// known to the partition that schedules an event, so partitions that run apart order
// their events as one loop does. It is the order of scheduling, except among events
// due at one instant and scheduled at one instant by different partitions, which go
// by partition.
func (e *simEvent) before(o *simEvent) bool {
	return e.at < o.at || e.at == o.at && (e.pushed < o.pushed || e.pushed == o.pushed && e.key < o.key)
}

// root is the partition of what runs between events (the harness: setup, the
// nemesis, the end); it orders after the DCs at one instant, as it acts once the
// instant's events are done.
const root = 255

// seqPad spaces the partitions' counters a cache line apart.
const seqPad = 8

// eventKey packs the scheduling partition, the partition the event is for and the
// scheduler's counter.
func eventKey(from, to int, seq uint64) uint64 { return uint64(from)<<56 | uint64(to)<<48 | seq }

func keyPart(k uint64) int { return int(k >> 48 & 0xff) }

// eventQueue is a 4-ary min-heap by (at, pushed, key), typed so that pushing and popping
// allocate nothing (container/heap boxes every element); four children a node halve
// the depth of a binary heap for the same comparisons.
type eventQueue []simEvent

func (q *eventQueue) push(e simEvent) {
	*q = append(*q, e)
	h := *q
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !e.before(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

func (q *eventQueue) pop() simEvent {
	h := *q
	top := h[0]
	n := len(h) - 1
	e := h[n]
	h[n] = simEvent{}
	h = h[:n]
	*q = h
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for k := c + 1; k < min(c+4, n); k++ {
			if h[k].before(&h[m]) {
				m = k
			}
		}
		if !h[m].before(&e) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = e
	return top
}

// linkQueue holds a link's messages in flight, in order, by value, in a ring: a run's
// millions of deliveries were as many objects to allocate and, scattered over the
// heap, as many cache misses to step through; a ring neither shifts what is left nor
// grows once it holds a link's usual backlog.
type linkQueue struct {
	ds         []delivery // len(ds) is 0 or a power of two
	head, size int
	fire       func() // the link's event
	// When the receiver last emptied the link, and the counter it took then: a
	// windowed run's hand-over needs them (window.go).
	popAt, popPushed int64
	popKey, popSeq   uint64
}

// front is the link's first message; the queue must not be empty.
func (q *linkQueue) front() *delivery { return &q.ds[q.head] }

func (q *linkQueue) push(d *delivery) {
	if q.size == len(q.ds) {
		grown := make([]delivery, max(8, 2*len(q.ds)))
		n := copy(grown, q.ds[q.head:])
		copy(grown[n:], q.ds[:q.head])
		q.ds, q.head = grown, 0
	}
	q.ds[(q.head+q.size)&(len(q.ds)-1)] = *d
	q.size++
}

func (q *linkQueue) pop() {
	q.ds[q.head] = delivery{} // let its message's data go
	q.head = (q.head + 1) & (len(q.ds) - 1)
	q.size--
}

// enqueue puts d on link i; the link gets an event if d is its first message. A
// counter is taken either way, as arrive does: whether the event is scheduled here or
// at the receiver's next pop then numbers nothing else differently.
func (s *Sim) enqueue(i int, d *delivery) {
	seq := s.seqs[s.cur*seqPad]
	s.seqs[s.cur*seqPad]++
	if s.inWindow() && d.to.part != s.idx {
		s.handOver(i, seq, d)
		return
	}
	q := &s.lq[i]
	q.push(d)
	if q.size == 1 {
		s.queueOf(d.to.part).push(simEvent{at: d.at, pushed: s.now, key: eventKey(s.cur, d.to.part, seq), fn: q.fire})
	}
}

// arriveFn is link i's event (made once per link, not a closure per message).
func (s *Sim) arriveFn(i int) func() { return func() { s.arrive(i) } }

// arrive delivers link i's first message (or lets it wait for a busy receiver) and
// schedules the next.
func (s *Sim) arrive(i int) {
	q := &s.lq[i]
	// Receiving sends on other links only, so q.ds keeps its array meanwhile.
	ok := q.front().arrive()
	seq := s.seqs[s.cur*seqPad]
	s.seqs[s.cur*seqPad]++
	if d := q.front(); !ok {
		s.queue.push(simEvent{at: d.to.busy, pushed: s.now, key: eventKey(s.cur, s.cur, seq), fn: q.fire})
		return
	}
	q.pop()
	if q.size == 0 {
		q.popAt, q.popPushed, q.popKey, q.popSeq = s.now, s.curPushed, s.curKey, seq
		return
	}
	s.queue.push(simEvent{at: max(q.front().at, s.now), pushed: s.now, key: eventKey(s.cur, s.cur, seq), fn: q.fire})
}

// at schedules fn at t (not before now) for partition part.
func (s *Sim) at(part int, t int64, fn func()) {
	seq := s.seqs[s.cur*seqPad]
	s.seqs[s.cur*seqPad]++
	s.queueOf(part).push(simEvent{at: max(t, s.now), pushed: s.now, key: eventKey(s.cur, part, seq), fn: fn})
}

func (s *Sim) after(part int, d time.Duration, fn func()) { s.at(part, s.now+int64(d), fn) }

// partOf is server id's partition: its DC's index among the DCs' sorted names.
func (s *Sim) partOf(id int) int {
	var names []string
	for _, dc := range s.cfg.Topology.DCs() {
		names = append(names, dc.Name)
	}
	slices.Sort(names)
	i, _ := slices.BinarySearch(names, s.cfg.Topology.DC(id))
	return i
}

// runUntil processes every event up to t (or until ctx ends) and sets the clock to t.
func (s *Sim) runUntil(ctx context.Context, t int64) error {
	if s.win != nil {
		return s.runWindows(ctx, t)
	}
	for len(s.queue) > 0 && s.queue[0].at <= t && s.err == nil {
		if s.count&0xfff == 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if s.err = s.progress(); s.err != nil {
				return s.err
			}
		}
		e := s.queue.pop()
		s.now, s.cur = e.at, keyPart(e.key)
		s.count++
		e.fn()
		if s.marksDue {
			s.pruneMarks(false)
		}
	}
	s.now, s.cur = max(s.now, t), root
	return s.err
}

// errStall is the error of a run that stopped making progress (Config.Stall).
var errStall = errors.New("sim: no progress in virtual time")

// progress, every few thousand events, fails a loop whose clock has not moved for
// Config.Stall of wall time: events that schedule each other at one instant forever.
func (s *Sim) progress() error {
	if s.now != s.stall.at || s.stall.since.IsZero() {
		s.stall.at, s.stall.since, s.stall.events = s.now, time.Now(), s.count
		return nil
	}
	if d := time.Since(s.stall.since); d > s.cfg.Stall {
		return fmt.Errorf("%w: %d events at %v in %v of wall time", errStall,
			s.count-s.stall.events, time.Duration(s.now-s.start), d.Round(time.Millisecond))
	}
	return nil
}

// runWhile runs in steps of step until cond is false or limit passes; it reports
// whether cond became false.
func (s *Sim) runWhile(ctx context.Context, cond func() bool, step, limit time.Duration) bool {
	end := s.now + int64(limit)
	for cond() {
		if s.now >= end || s.runUntil(ctx, min(s.now+int64(step), end)) != nil {
			return !cond()
		}
	}
	return true
}

func (s *Sim) wall() time.Time { return base.Add(time.Duration(s.now)) }

// since is virtual time since the load started: the offsets records carry.
func (s *Sim) since() time.Duration { return time.Duration(s.now - s.start) }

// clock is the nemesis's clock: waiting is simulating.
type clock struct{ s *Sim }

func (c clock) Now() time.Duration { return c.s.since() }

func (c clock) WaitUntil(ctx context.Context, at time.Duration) error {
	return c.s.runUntil(ctx, c.s.start+int64(at))
}

// --- the run's phases ---

func (s *Sim) boot() error {
	s.servers = make([]*server, s.cfg.Topology.N()+1)
	for _, id := range s.cfg.Topology.Servers() {
		srv, err := newServer(s, id)
		if err != nil {
			return err
		}
		s.servers[id] = srv
	}
	s.partition()
	for _, srv := range s.servers[1:] {
		if err := srv.boot(); err != nil {
			return err
		}
	}
	return nil
}

// setup waits, as the runner does, until the initial leader leads and every server
// serves, then creates the keyspace through the leader.
func (s *Sim) setup(ctx context.Context) error {
	leader := func() int {
		for _, srv := range s.live() {
			if st := srv.d.Status(); st.Serving && st.Leader == srv.id {
				return srv.id
			}
		}
		return 0
	}
	allServing := func() bool {
		for _, srv := range s.live() {
			if !srv.d.Status().Serving {
				return false
			}
		}
		return leader() != 0
	}
	if !s.runWhile(ctx, func() bool { return !allServing() }, 10*time.Millisecond, time.Minute) {
		return fmt.Errorf("sim: no leader with every server serving after %v of virtual time", time.Minute)
	}
	if l := leader(); s.cfg.InitialLeader != 0 && l != s.cfg.InitialLeader {
		return fmt.Errorf("sim: the cluster elected p%d first, but the spec's initial leader is p%d", l, s.cfg.InitialLeader)
	}
	if err := s.createKeys(ctx, s.servers[leader()]); err != nil {
		return err
	}
	for _, srv := range s.live() {
		srv.markServing()
	}
	return nil
}

// finish lets the cluster settle, reads every live server's keys as the verification
// does, and gathers the timelines.
func (s *Sim) finish(ctx context.Context) (*Result, error) {
	leaderCommit := func() (commit zab.Zxid) {
		for _, srv := range s.live() {
			if st := srv.d.Status(); st.Serving && st.Leader == srv.id {
				commit = st.Committed
			}
		}
		return commit
	}
	caughtUp := func() bool {
		commit := leaderCommit()
		for _, srv := range s.live() {
			if st := srv.d.Status(); !st.Serving || st.Applied < commit || commit == 0 {
				return false
			}
		}
		return true
	}
	converged := s.runWhile(ctx, func() bool { return !caughtUp() }, 10*time.Millisecond, 10*time.Second)
	if s.err != nil {
		return nil, s.err
	}
	digests := map[int]string{}
	if converged && s.cfg.digests {
		for _, srv := range s.live() {
			srv.d.Read(func(t *datatree.Tree) { digests[srv.id] = digest(t) })
		}
	}
	// The read-back syncs with the leader before it reads (workload.Verify), which a
	// server that does not serve cannot do, and which a server behind the leader's
	// commit has not done yet (the run was interrupted, or did not converge): only
	// serving servers that caught up are read.
	var finals []workload.Final
	var ids []int
	commit := leaderCommit()
	for _, srv := range s.live() {
		if st := srv.d.Status(); !st.Serving || st.Applied < commit {
			continue
		}
		ids = append(ids, srv.id)
		finals = append(finals, srv.finals(s.cfg.Keys)...)
	}
	recs := s.records()
	ver := workload.Judge(recs, finals, s.runID, 10*time.Second, ids, s.cfg.Keys)
	nodes := map[int][]event.Event{}
	rtts := map[string]any{}
	s.pruneMarks(true)
	marks := map[int][][]trace.Mark{}
	for _, srv := range s.servers[1:] {
		if len(srv.marks) > 0 {
			marks[srv.id] = srv.marks
		}
	}
	for _, srv := range s.servers[1:] {
		nodes[srv.id] = append(srv.events, srv.timeline.Events()...)
		if srv.up {
			rtts[topology.Name(srv.id)] = srv.rtts()
		}
	}
	return &Result{
		Records:      recs,
		Timeline:     record.Timeline(base.Add(time.Duration(s.start)), s.harness, nodes),
		Verification: ver,
		RTTs:         rtts,
		RunID:        s.runID,
		Converged:    converged,
		Digests:      digests,
		Marks:        marks,
		MarksStart:   s.start,
		Events:       s.events(),
		Virtual:      time.Duration(s.now),
	}, nil
}

// events is how many events the run processed, on every partition.
func (s *Sim) events() uint64 {
	n := s.count
	if s.win != nil {
		for _, p := range s.win.ps {
			n += p.count
		}
	}
	return n
}

func (s *Sim) live() []*server {
	var out []*server
	for _, srv := range s.servers[1:] {
		if srv.up {
			out = append(out, srv)
		}
	}
	return out
}

func (s *Sim) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// --- the nemesis's target ---

type target struct{ s *Sim }

func (t target) Kill(_ context.Context, id int) error {
	srv, err := t.s.server(id)
	if err != nil {
		return err
	}
	if !srv.up {
		return fmt.Errorf("sim: p%d is not running", id)
	}
	srv.kill()
	return nil
}

func (t target) Restart(_ context.Context, id int) error {
	srv, err := t.s.server(id)
	if err != nil {
		return err
	}
	if srv.up {
		return fmt.Errorf("sim: p%d is running", id)
	}
	return srv.boot()
}

// SetLinks cuts or restores pairs as transport.Cut does at both ends: a cut drops
// what is in flight and resets the broadcast streams (the ends hear Disconnected and
// Closed), so that zab resyncs across it.
func (t target) SetLinks(_ context.Context, pairs [][2]int, cut, broadcastOnly bool) error {
	s := t.s
	chans := []channel{chBroadcast}
	if !broadcastOnly {
		chans = append(chans, chElection)
	}
	for _, p := range pairs {
		for _, ch := range chans {
			for _, k := range []linkKey{{p[0], p[1], ch}, {p[1], p[0], ch}} {
				l := s.link(k)
				if l.cut == cut {
					continue
				}
				l.cut = cut
				l.gen++
				if !cut || ch != chBroadcast {
					continue
				}
				if srv := s.servers[k.from]; srv.up {
					srv.d.Disconnected(k.to)
					srv.d.Closed(k.to)
					srv.drain()
				}
			}
		}
	}
	return nil
}

func (s *Sim) server(id int) (*server, error) {
	if id < 1 || id >= len(s.servers) {
		return nil, fmt.Errorf("sim: no server p%d", id)
	}
	return s.servers[id], nil
}

func (s *Sim) observer() nemesis.Observer {
	return nemesis.Observer{After: func(_ context.Context, e nemesis.Executed) {
		s.harness = append(s.harness, record.Fault(e))
		s.log.Info(string(e.Kind), "server", e.Server, "at", e.Issued, "err", e.Err)
		if e.Err != nil {
			return
		}
		switch {
		case e.Stops():
			s.servers[e.Server].harnessDown = true
		case e.Kind == nemesis.Restart:
			s.servers[e.Server].awaitServing = true
		}
	}}
}

// virtualTime stamps log records with the simulated time, not the wall clock's.
type virtualTime struct {
	slog.Handler
	s *Sim
}

func (h virtualTime) Handle(ctx context.Context, r slog.Record) error {
	r.Time = h.s.wall()
	return h.Handler.Handle(ctx, r)
}

func (h virtualTime) WithAttrs(as []slog.Attr) slog.Handler {
	return virtualTime{h.Handler.WithAttrs(as), h.s}
}

func (h virtualTime) WithGroup(name string) slog.Handler {
	return virtualTime{h.Handler.WithGroup(name), h.s}
}
