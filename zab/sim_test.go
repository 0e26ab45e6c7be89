package zab

// A small deterministic discrete-event driver for the core: in-memory network
// with per-pair delays and a bandwidth model, disks with a latency, a hash-chain
// state machine whose snapshot size is a knob, an election oracle standing in for
// package pole, a client workload, and invariant checks on every apply.

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

type simConfig struct {
	n          int
	tickUS     int64                // tick period
	diskUS     int64                // persistence latency (0: synchronous)
	electUS    int64                // election duration
	delayUS    func(a, b int) int64 // one-way delay between servers a and b
	jitter     float64              // fraction of the delay, uniform
	bandwidth  int64                // bytes per second per link (0: infinite)
	chunk      int                  // snapshot chunk size
	statePad   int                  // bytes of padding in every state snapshot (the state "size")
	localSnap  int                  // a server snapshots its own state every localSnap applies (0: never)
	zab        Config               // template (ID and Peers are filled in)
	policy     func(s *sim) int     // the election: who leads, among live servers
	loadUS     int64                // a client write every loadUS (0: none)
	writeBytes int
	lean       bool // benchmarks: keep only the recent log on disk, check nothing per apply
}

// simZabConfig is the template of every simulated server's config (ID and Peers are
// filled in): a small DIFF window so SNAPs happen, 20 ticks of silence before LOOKING.
func simZabConfig() Config {
	c := DefaultConfig(0, nil, 10*time.Millisecond)
	c.Window, c.TimeoutTicks, c.RetryTicks = 50, 20, 2
	return c
}

func defaultSimConfig() simConfig {
	return simConfig{
		n:          5,
		tickUS:     10_000,
		electUS:    20_000,
		delayUS:    func(a, b int) int64 { return 500 },
		chunk:      1 << 20,
		localSnap:  100,
		zab:        simZabConfig(),
		policy:     historyPolicy,
		loadUS:     1000,
		writeBytes: 1024,
	}
}

type simEvent struct {
	at  int64
	seq uint64
	fn  func()
}

type eventHeap []simEvent

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].seq < h[j].seq)
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(simEvent)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type canonRec struct {
	zxid Zxid
	hash uint64
}

type reqRec struct {
	node int
	hash uint64
}

type stamped struct {
	at   int64
	node int
	ev   Event
}

type sim struct {
	tb    testing.TB
	cfg   simConfig
	rng   *rand.Rand
	now   int64
	seq   uint64
	queue eventHeap
	nodes []*simNode // index 1..n
	links map[[2]int]*simLink
	cut   map[[2]int]bool

	quiet           bool // the client load is off
	leader          int  // the last election's choice
	electionPending bool

	canon    []canonRec
	canonIdx map[Zxid]int
	nextReq  uint64
	reqs     map[uint64]reqRec
	acked    map[uint64]Zxid
	unknown  int

	onResult func(nd *simNode, r Result)

	sent   map[MsgType]int
	sentTo map[[3]int]int // type, from, to
	events []stamped
	bytes  int64
}

type simLink struct{ busy, lastArrive int64 }

type simNode struct {
	id         int
	core       *Node
	up         bool
	inc        int
	disk       simDisk
	sm         *hashSM
	recvSnap   []byte
	persisting bool
}

type simDisk struct {
	hs       HardState
	log      []Txn
	snapZxid Zxid
	snap     []byte
}

func newSim(tb testing.TB, seed uint64, cfg simConfig) *sim {
	s := &sim{
		tb: tb, cfg: cfg, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		links: map[[2]int]*simLink{}, cut: map[[2]int]bool{}, canonIdx: map[Zxid]int{},
		reqs: map[uint64]reqRec{}, acked: map[uint64]Zxid{}, sent: map[MsgType]int{}, sentTo: map[[3]int]int{},
	}
	s.nodes = make([]*simNode, cfg.n+1)
	for i := 1; i <= cfg.n; i++ {
		nd := &simNode{id: i}
		nd.sm = &hashSM{}
		nd.disk.snap = nd.sm.encode(0)
		s.nodes[i] = nd
		s.start(nd)
	}
	if cfg.loadUS > 0 {
		s.every(cfg.loadUS, func() {
			if !s.quiet {
				s.clientWrite(0)
			}
		})
	}
	return s
}

func (s *sim) fatalf(format string, a ...any) {
	s.tb.Helper()
	s.tb.Fatalf("t=%.3fms: "+format, append([]any{float64(s.now) / 1000}, a...)...)
}

func (s *sim) at(t int64, fn func()) {
	s.seq++
	heap.Push(&s.queue, simEvent{at: max(t, s.now), seq: s.seq, fn: fn})
}

func (s *sim) after(d int64, fn func()) { s.at(s.now+d, fn) }

func (s *sim) every(d int64, fn func()) {
	var loop func()
	loop = func() { fn(); s.after(d, loop) }
	s.after(d, loop)
}

func (s *sim) runUntil(t int64) {
	for len(s.queue) > 0 && s.queue[0].at <= t {
		e := heap.Pop(&s.queue).(simEvent)
		s.now = e.at
		e.fn()
	}
	s.now = t
}

func (s *sim) runFor(d int64) { s.runUntil(s.now + d) }

func (s *sim) zabConfig(id int) Config {
	c := s.cfg.zab
	c.ID = id
	c.Peers = nil
	for i := 1; i <= s.cfg.n; i++ {
		c.Peers = append(c.Peers, i)
	}
	return c
}

// start boots a node from its disk, as a restarted server would.
func (s *sim) start(nd *simNode) {
	sm, err := decodeHashSM(nd.disk.snap)
	if err != nil {
		s.fatalf("node %d: restore: %v", nd.id, err)
	}
	if sm.zxid != nd.disk.snapZxid {
		s.fatalf("node %d: snapshot holds %v, disk says %v", nd.id, sm.zxid, nd.disk.snapZxid)
	}
	core, err := New(s.zabConfig(nd.id), Persisted{HardState: nd.disk.hs, Snapshot: nd.disk.snapZxid, Log: slices.Clone(nd.disk.log)})
	if err != nil {
		s.fatalf("node %d: New: %v", nd.id, err)
	}
	nd.core, nd.sm, nd.up, nd.persisting, nd.recvSnap = core, sm, true, false, nil
	nd.inc++
	inc := nd.inc
	var tick func()
	tick = func() {
		if !nd.up || nd.inc != inc {
			return
		}
		nd.core.Tick()
		s.drain(nd)
		s.after(s.cfg.tickUS, tick)
	}
	s.after(int64(s.rng.Int64N(s.cfg.tickUS))+1, tick)
	s.drain(nd)
}

func (s *sim) crash(id int) {
	nd := s.nodes[id]
	nd.up = false
	nd.inc++
	nd.persisting = false
}

func (s *sim) restart(id int) { s.start(s.nodes[id]) }

func (s *sim) live() []*simNode {
	var out []*simNode
	for _, nd := range s.nodes[1:] {
		if nd.up {
			out = append(out, nd)
		}
	}
	return out
}

func (s *sim) partition(a, b int, on bool) {
	s.cut[[2]int{a, b}] = on
	s.cut[[2]int{b, a}] = on
}

// --- network ---

func (s *sim) send(from *simNode, m Message) {
	to := s.nodes[m.To]
	s.sent[m.Type]++
	s.sentTo[[3]int{int(m.Type), from.id, to.id}]++
	if m.From != from.id {
		s.fatalf("node %d sends %v with From %d", from.id, m, m.From)
	}
	b, err := m.MarshalBinary()
	if err != nil {
		s.fatalf("marshal %v: %v", m, err)
	}
	s.bytes += int64(len(b))
	if s.cut[[2]int{from.id, to.id}] {
		return
	}
	l := s.links[[2]int{from.id, to.id}]
	if l == nil {
		l = &simLink{}
		s.links[[2]int{from.id, to.id}] = l
	}
	depart := max(s.now, l.busy)
	if s.cfg.bandwidth > 0 {
		depart += int64(len(b)) * 1_000_000 / s.cfg.bandwidth
	}
	l.busy = depart
	d := s.cfg.delayUS(from.id, to.id)
	if s.cfg.jitter > 0 {
		d += int64(float64(d) * s.cfg.jitter * (2*s.rng.Float64() - 1))
	}
	arrive := max(depart+d, l.lastArrive) // TCP keeps order
	l.lastArrive = arrive
	fromInc, toInc := from.inc, to.inc
	s.at(arrive, func() {
		if !to.up || to.inc != toInc || from.inc != fromInc || s.cut[[2]int{from.id, to.id}] {
			return // a crash resets the connection
		}
		var got Message
		if err := got.UnmarshalBinary(b); err != nil {
			s.fatalf("unmarshal %v: %v", m, err)
		}
		if err := to.core.Step(got); err != nil {
			s.fatalf("node %d: step %v: %v", to.id, got, err)
		}
		s.drain(to)
	})
}

// --- driver ---

func (s *sim) drain(nd *simNode) {
	for nd.up && !nd.persisting && nd.core.HasReady() {
		rd := nd.core.Ready()
		for _, ev := range rd.Events {
			s.events = append(s.events, stamped{at: s.now, node: nd.id, ev: ev})
			if ev.Type == EventLooking {
				s.onLooking(nd)
			}
		}
		for _, m := range rd.Messages {
			if m.Type != MsgSnap {
				s.send(nd, m)
				continue
			}
			s.sent[MsgSnap]++
			s.sentTo[[3]int{int(MsgSnap), nd.id, int(m.To)}]++
			if nd.sm.zxid != m.Zxid {
				s.fatalf("node %d: SNAP at %v but state is at %v", nd.id, m.Zxid, nd.sm.zxid)
			}
			state := nd.sm.encode(s.cfg.statePad)
			w, err := NewChunkWriter(m, s.cfg.chunk, func(c Message) error {
				c.Data = bytes.Clone(c.Data) // the writer reuses it
				s.send(nd, c)
				return nil
			})
			if err == nil {
				_, err = w.Write(state)
			}
			if err == nil {
				err = w.Close()
			}
			if err != nil {
				s.fatalf("stream snapshot: %v", err)
			}
		}
		finish := func() {
			s.persist(nd, rd.Persist)
			for _, t := range rd.Committed {
				s.apply(nd, t)
			}
			for _, r := range rd.Results {
				s.result(nd, r)
			}
			nd.core.Advance()
		}
		if s.cfg.diskUS == 0 {
			finish()
			continue
		}
		nd.persisting = true
		inc := nd.inc
		s.after(s.cfg.diskUS, func() {
			if !nd.up || nd.inc != inc {
				return // crashed before the write completed: it never happened
			}
			nd.persisting = false
			finish()
			s.drain(nd)
		})
	}
}

func (s *sim) persist(nd *simNode, ops []Op) {
	d := &nd.disk
	for _, op := range ops {
		switch op := op.(type) {
		case *Append:
			for _, t := range op.Txns {
				prev := d.snapZxid
				if len(d.log) > 0 {
					prev = d.log[len(d.log)-1].Zxid
				}
				if !follows(prev, t.Zxid) {
					s.fatalf("node %d: append %v after %v", nd.id, t.Zxid, prev)
				}
				d.log = append(d.log, t)
			}
			if s.cfg.lean && len(d.log) > 2000 {
				d.log = slices.Clone(d.log[len(d.log)-1000:])
			}
		case *Truncate:
			if op.After < nd.sm.zxid {
				s.fatalf("node %d: truncate after %v below applied %v", nd.id, op.After, nd.sm.zxid)
			}
			i := slices.IndexFunc(d.log, func(t Txn) bool { return t.Zxid > op.After })
			if i >= 0 {
				d.log = d.log[:i]
			}
		case *SnapshotChunk:
			if op.Seq == 0 {
				nd.recvSnap = nil
			}
			nd.recvSnap = append(nd.recvSnap, op.Data...)
			if op.Last {
				sm, err := decodeHashSM(nd.recvSnap)
				if err != nil {
					s.fatalf("node %d: install: %v", nd.id, err)
				}
				if sm.zxid != op.Zxid {
					s.fatalf("node %d: snapshot says %v, chunk %v", nd.id, sm.zxid, op.Zxid)
				}
				for i, r := range sm.hist {
					s.checkCanon(nd, i, r)
				}
				nd.sm, d.snap, d.snapZxid, d.log, nd.recvSnap = sm, nd.recvSnap, op.Zxid, nil, nil
			}
		case *SetHardState:
			d.hs = op.HardState
		default:
			s.fatalf("unknown op %T", op)
		}
	}
}

func (s *sim) checkCanon(nd *simNode, i int, r canonRec) {
	switch {
	case i < len(s.canon):
		if s.canon[i] != r {
			s.fatalf("node %d: applied #%d is %v/%x, others applied %v/%x", nd.id, i, r.zxid, r.hash, s.canon[i].zxid, s.canon[i].hash)
		}
	case i == len(s.canon):
		if i > 0 && r.zxid <= s.canon[i-1].zxid {
			s.fatalf("node %d: zxid %v after %v", nd.id, r.zxid, s.canon[i-1].zxid)
		}
		s.canon = append(s.canon, r)
		s.canonIdx[r.zxid] = i
	default:
		s.fatalf("node %d: applied #%d, only %d known", nd.id, i, len(s.canon))
	}
}

func (s *sim) apply(nd *simNode, t Txn) {
	if t.Zxid <= nd.sm.zxid {
		s.fatalf("node %d: applies %v at state %v", nd.id, t.Zxid, nd.sm.zxid)
	}
	if s.cfg.lean {
		nd.sm.zxid = t.Zxid
		return
	}
	r := canonRec{t.Zxid, dataHash(t.Data)}
	s.checkCanon(nd, len(nd.sm.hist), r)
	nd.sm.apply(r)
	if s.cfg.localSnap > 0 && len(nd.sm.hist)%s.cfg.localSnap == 0 {
		nd.disk.snap, nd.disk.snapZxid = nd.sm.encode(0), nd.sm.zxid
		// Keep a few transactions before the snapshot, as a real log would.
		i := slices.IndexFunc(nd.disk.log, func(t Txn) bool { return t.Zxid > nd.sm.zxid })
		if i < 0 {
			i = len(nd.disk.log)
		}
		if i > 10 {
			nd.disk.log = slices.Clone(nd.disk.log[i-10:])
		}
	}
}

func (s *sim) result(nd *simNode, r Result) {
	req, ok := s.reqs[r.ReqID]
	if !ok || req.node != nd.id {
		s.fatalf("node %d: result for unknown request %d", nd.id, r.ReqID)
	}
	delete(s.reqs, r.ReqID)
	if s.onResult != nil {
		s.onResult(nd, r)
	}
	if s.cfg.lean {
		return
	}
	if r.Err != nil {
		s.unknown++
		return
	}
	i, ok := s.canonIdx[r.Zxid]
	if !ok || s.canon[i].hash != req.hash {
		s.fatalf("node %d: request %d acknowledged at %v, which holds other data", nd.id, r.ReqID, r.Zxid)
	}
	s.acked[r.ReqID] = r.Zxid
}

// clientWrite sends a write to server id (0: a random serving one).
func (s *sim) clientWrite(id int) bool {
	var cands []*simNode
	for _, nd := range s.live() {
		if (id == 0 || nd.id == id) && nd.core.Status().Serving {
			cands = append(cands, nd)
		}
	}
	if len(cands) == 0 {
		return false
	}
	nd := cands[s.rng.IntN(len(cands))]
	s.nextReq++
	data := make([]byte, s.cfg.writeBytes)
	binary.LittleEndian.PutUint64(data, s.nextReq)
	if err := nd.core.Propose(s.nextReq, data); err != nil {
		s.fatalf("node %d: propose: %v", nd.id, err)
	}
	s.reqs[s.nextReq] = reqRec{node: nd.id, hash: dataHash(data)}
	s.drain(nd)
	return true
}

// --- the election, as package pole would run it ---

func (s *sim) onLooking(nd *simNode) {
	if s.electionPending {
		return
	}
	if l := s.nodes[s.leader]; s.leader != 0 && l.up && l.id != nd.id && l.core.Status().Role == Leading {
		inc := nd.inc
		s.after(s.cfg.electUS, func() {
			if nd.up && nd.inc == inc && nd.core.Status().Role == Looking && l.up && l.core.Status().Role == Leading {
				s.elect(nd, l.id)
			} else if nd.up && nd.inc == inc && nd.core.Status().Role == Looking {
				s.onLooking(nd)
			}
		})
		return
	}
	s.electionPending = true
	s.after(s.cfg.electUS, s.runElection)
}

func (s *sim) runElection() {
	s.electionPending = false
	if len(s.live()) <= s.cfg.n/2 {
		s.electionPending = true // no quorum alive: try again later
		s.after(s.cfg.electUS, s.runElection)
		return
	}
	s.leader = s.cfg.policy(s)
	for _, nd := range s.live() {
		s.elect(nd, s.leader)
	}
}

func (s *sim) elect(nd *simNode, l int) {
	if err := nd.core.Elected(l); err != nil {
		s.fatalf("elected: %v", err)
	}
	s.drain(nd)
}

// historyPolicy is ZooKeeper's (and POLE's history oracle): the latest history, then the highest id.
func historyPolicy(s *sim) int {
	best, bst := 0, Status{}
	for _, nd := range s.live() {
		st := nd.core.Status()
		if best == 0 || st.CurrentEpoch > bst.CurrentEpoch || (st.CurrentEpoch == bst.CurrentEpoch && st.LastZxid >= bst.LastZxid) {
			best, bst = nd.id, st
		}
	}
	return best
}

// rotatingPolicy elects the next live id after the last leader.
func rotatingPolicy(s *sim) int {
	for i := 1; i <= s.cfg.n; i++ {
		id := (s.leader+i-1)%s.cfg.n + 1
		if s.nodes[id].up {
			return id
		}
	}
	return 0
}

func fixedPolicy(order ...int) func(*sim) int {
	return func(s *sim) int {
		for _, id := range order {
			if s.nodes[id].up {
				return id
			}
		}
		return historyPolicy(s)
	}
}

func randomPolicy(s *sim) int {
	live := s.live()
	return live[s.rng.IntN(len(live))].id
}

// --- checks ---

// leaderServing returns the serving leader, if any.
func (s *sim) leaderServing() *simNode {
	for _, nd := range s.live() {
		if st := nd.core.Status(); st.Role == Leading && st.Serving {
			return nd
		}
	}
	return nil
}

// converge stops the client load and runs until every live server is serving and
// has applied the same last zxid, or fails after limit.
func (s *sim) converge(limit int64) {
	s.tb.Helper()
	s.quiet = true
	deadline := s.now + limit
	for s.now < deadline {
		s.runFor(10_000)
		if s.converged() {
			return
		}
	}
	var b bytes.Buffer
	for _, nd := range s.live() {
		fmt.Fprintf(&b, "\n  %d: %+v", nd.id, nd.core.Status())
	}
	s.fatalf("no convergence after %dms:%s", limit/1000, b.String())
}

func (s *sim) converged() bool {
	l := s.leaderServing()
	if l == nil {
		return false
	}
	want := l.core.Status().Committed
	for _, nd := range s.live() {
		st := nd.core.Status()
		if !st.Serving || st.Leader != l.id || nd.sm.zxid != want || st.LastZxid != want {
			return false
		}
	}
	return true
}

// checkFinal: every acknowledged write is applied, at its zxid and in order, by
// every live server, and they all hold the same state.
func (s *sim) checkFinal() {
	s.tb.Helper()
	live := s.live()
	ref := live[0].sm
	for _, nd := range live {
		if !slices.Equal(nd.sm.hist, ref.hist) {
			s.fatalf("servers %d and %d differ: %d vs %d applied", live[0].id, nd.id, len(ref.hist), len(nd.sm.hist))
		}
	}
	pos := map[Zxid]int{}
	for i, r := range ref.hist {
		pos[r.zxid] = i
	}
	for id, z := range s.acked {
		if _, ok := pos[z]; !ok {
			s.fatalf("acknowledged write %d at %v lost", id, z)
		}
	}
}

func (s *sim) countEvents(node int, t EventType) int {
	n := 0
	for _, e := range s.events {
		if e.node == node && e.ev.Type == t {
			n++
		}
	}
	return n
}

// lastEvent returns the time of node's last event of type t at or after since.
func (s *sim) lastEvent(node int, t EventType, since int64) (int64, bool) {
	var at int64
	found := false
	for _, e := range s.events {
		if e.node == node && e.ev.Type == t && e.at >= since {
			at, found = e.at, true
		}
	}
	return at, found
}

// --- the test state machine: a list of applied (zxid, data hash), plus padding ---

type hashSM struct {
	zxid Zxid
	hist []canonRec
}

func (sm *hashSM) apply(r canonRec) {
	sm.zxid = r.zxid
	sm.hist = append(sm.hist, r)
}

func (sm *hashSM) encode(pad int) []byte {
	b := make([]byte, 0, 12+16*len(sm.hist)+pad)
	b = binary.LittleEndian.AppendUint64(b, uint64(sm.zxid))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(sm.hist)))
	for _, r := range sm.hist {
		b = binary.LittleEndian.AppendUint64(b, uint64(r.zxid))
		b = binary.LittleEndian.AppendUint64(b, r.hash)
	}
	for i := 0; i < pad; i++ {
		b = append(b, byte(i*31))
	}
	return b
}

func decodeHashSM(b []byte) (*hashSM, error) {
	if len(b) < 12 {
		return nil, fmt.Errorf("state of %d bytes", len(b))
	}
	sm := &hashSM{zxid: Zxid(binary.LittleEndian.Uint64(b))}
	n := int(binary.LittleEndian.Uint32(b[8:]))
	b = b[12:]
	if len(b) < 16*n {
		return nil, fmt.Errorf("state lists %d transactions in %d bytes", n, len(b))
	}
	sm.hist = make([]canonRec, n)
	for i := range sm.hist {
		sm.hist[i] = canonRec{Zxid(binary.LittleEndian.Uint64(b[16*i:])), binary.LittleEndian.Uint64(b[16*i+8:])}
	}
	if n > 0 && sm.hist[n-1].zxid != sm.zxid {
		return nil, fmt.Errorf("state at %v ends with %v", sm.zxid, sm.hist[n-1].zxid)
	}
	return sm, nil
}

func dataHash(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}
