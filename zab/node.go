package zab

import (
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// FetchPolicy picks, among the quorum members with the longest history, the one a
// behind leader fetches from.
type FetchPolicy uint8

// Fetch policies.
const (
	// FetchFirst takes the first of them to ACKEPOCH: usually the nearest.
	FetchFirst FetchPolicy = iota
	// FetchHighestID takes the highest id, as ZooKeeper's vote order would.
	FetchHighestID
)

// Config configures a Node. A zero field takes its default; InitTicks 0 is no limit.
type Config struct {
	ID    int   // this server
	Peers []int // every configured server, this one included; a quorum is a majority of them

	Window        int         // committed transactions kept in memory for DIFFs (default 500)
	PingTicks     int         // a leader pings every PingTicks ticks (default 1)
	TimeoutTicks  int         // a follower not hearing its leader, or a leader not hearing a quorum, for this long goes LOOKING (default 10)
	RetryTicks    int         // a follower resends FOLLOWERINFO this often until answered (default 2)
	InitTicks     int         // recovery (election to serving) must finish within this many ticks; 0: no limit
	MaxBatchBytes int         // DIFF messages are split at about this many bytes of data (default 1 MiB)
	FetchFrom     FetchPolicy // see FetchPolicy
	Logger        *slog.Logger
	// Unsafe breaks this server on purpose, for the checkers' tests only
	// (replica.Variant); the zero value is the sound code every other test runs.
	Unsafe Unsafe
}

// Unsafe names duties of the protocol this server does wrong on purpose, so that a
// test can measure whether the checkers find one broken server. Each field is one
// switch; none is ever set outside a test.
type Unsafe struct {
	// AckBeforeDurable: a follower acknowledges a proposal as soon as it has it,
	// before its log write is durable (a kill then loses what it acknowledged).
	AckBeforeDurable bool
	// ReackEpoch: a follower promises a second leader the epoch it already promised
	// one (a fresh ACKEPOCH for an equal epoch): two votes in one epoch.
	ReackEpoch bool
	// SelfTwice: a leader counts its own acknowledgement twice toward a quorum.
	SelfTwice bool
	// CommitOnReceipt: a follower takes a proposal as committed as soon as it has
	// logged it, before the leader's COMMIT (it applies it and answers its client).
	CommitOnReceipt bool
}

// DefaultInitLimit is how long recovery may take, ZooKeeper's initLimit times tickTime
// as its zoo_sample.cfg ships them (10 x 2 s).
const DefaultInitLimit = 20 * time.Second

// DefaultWindow is ZooKeeper 3.3's committedLog size.
const DefaultWindow = 500

// DefaultConfig is server id's configuration among peers (every server, id included)
// for a driver that ticks every tick: a follower that hears nothing from its leader for
// 1 s (at least 10 ticks; in sync, DefaultInitLimit) goes LOOKING, recovery must end
// within DefaultInitLimit, FOLLOWERINFO is resent every 200 ms (at least 2 ticks),
// DIFFs cover the last DefaultWindow transactions in batches of about 1 MiB.
func DefaultConfig(id int, peers []int, tick time.Duration) Config {
	return Config{
		ID: id, Peers: peers, Window: DefaultWindow, PingTicks: 1,
		TimeoutTicks: max(10, int(time.Second/tick)), RetryTicks: max(2, int(200*time.Millisecond/tick)),
		InitTicks: max(10, int(DefaultInitLimit/tick)), MaxBatchBytes: 1 << 20,
	}
}

func (c Config) validate() error {
	if c.ID == 0 {
		return fmt.Errorf("zab: config: ID must be > 0")
	}
	seen := map[int]bool{}
	for _, p := range c.Peers {
		if p == 0 {
			return fmt.Errorf("zab: config: peer id 0")
		}
		if seen[p] {
			return fmt.Errorf("zab: config: peer %d listed twice", p)
		}
		seen[p] = true
	}
	if !seen[c.ID] {
		return fmt.Errorf("zab: config: ID %d not among Peers %v", c.ID, c.Peers)
	}
	for name, v := range map[string]int{"Window": c.Window, "PingTicks": c.PingTicks, "TimeoutTicks": c.TimeoutTicks,
		"RetryTicks": c.RetryTicks, "InitTicks": c.InitTicks, "MaxBatchBytes": c.MaxBatchBytes} {
		if v < 0 {
			return fmt.Errorf("zab: config: %s = %d, must be >= 0", name, v)
		}
	}
	for name, v := range map[string]int{"PingTicks": c.PingTicks, "TimeoutTicks": c.TimeoutTicks, "RetryTicks": c.RetryTicks, "MaxBatchBytes": c.MaxBatchBytes} {
		if v == 0 {
			return fmt.Errorf("zab: config: %s is 0 (start from DefaultConfig)", name)
		}
	}
	return nil
}

// Node is the broadcast and recovery core of one server: a pure state machine.
// Inputs: Step (peer messages), Tick, Elected, Propose, StepDown; outputs: Ready,
// acknowledged with Advance. It is not safe for concurrent use.
type Node struct {
	cfg    Config
	log    *slog.Logger
	id     int
	quorum int
	now    int64 // ticks since New

	hs      HardState // as it is once the queued operations are durable
	hist    history
	commit  Zxid // highest zxid known committed
	applied Zxid // highest zxid handed to the state machine (its state)

	// Persistence: operations are numbered; durSeq of them are durable.
	ops      []Op
	opsSpare []Op      // the array of the Ready before last, reused as spare is
	appends  []*Append // Appends of earlier Readies, free, with their arrays
	comSpare []Txn     // the same for Committed
	opSeq    uint64
	durSeq   uint64
	durLast  Zxid // every entry of hist up to durLast is durable
	durHS    HardState
	inflight inflight // the Ready awaiting Advance, if inflight.on

	msgs     []Message
	spare    []Message // the array of the Ready before last, reused
	slots    peerSlots // server id -> index in Config.Peers (and lastTo)
	lastTo   []lastTo  // takeMessages' note per server
	takes    uint64
	deferred []deferredMsg
	events   []Event
	results  []Result
	resSpare []Result        // the array of the Ready before last's Results, reused as spare is
	pending  map[uint64]bool // this server's requests awaiting their commit
	early    map[int]Message // FOLLOWERINFOs received while looking, by sender

	role   Role
	leader int
	epoch  Epoch // epoch of the leadership being established or served (0: not yet known)
	ls     *leaderState
	fs     *followerState
	snapIn *snapIn
	// recvBytes: history received in this role (snapshot chunks, DIFFs), for the
	// words of an exceeded InitTicks.
	recvBytes int64
}

// peerSlots maps a configured server's id to its index in Config.Peers. Ids are small
// in practice, and a slice by id then answers a message's lookups (a map's were 5 % of
// a simulated run); other ids take the map.
type peerSlots struct {
	dense []int32 // id -> index+1, 0 for none; nil if an id is negative or large
	m     map[int]int
}

// maxDenseID bounds the ids a peerSlots holds in its slice.
const maxDenseID = 1 << 12

func newPeerSlots(peers []int) peerSlots {
	var s peerSlots
	for _, p := range peers {
		if p < 0 || p >= maxDenseID {
			s.dense, s.m = nil, map[int]int{}
			for i, p := range peers {
				s.m[p] = i
			}
			return s
		}
		if p >= len(s.dense) {
			s.dense = append(s.dense, make([]int32, p+1-len(s.dense))...)
		}
	}
	for i, p := range peers {
		s.dense[p] = int32(i + 1)
	}
	return s
}

// of is id's index, if it is a configured server.
func (s *peerSlots) of(id int) (int, bool) {
	if s.dense == nil {
		i, ok := s.m[id]
		return i, ok
	}
	if uint(id) < uint(len(s.dense)) && s.dense[id] != 0 {
		return int(s.dense[id]) - 1, true
	}
	return 0, false
}

type inflight struct {
	on   bool
	seq  uint64
	last Zxid
	hs   HardState
}

type deferredMsg struct {
	need uint64 // op sequence that must be durable first
	m    Message
}

type snapIn struct {
	zxid Zxid
	next uint32
}

// New builds a node from what its driver persisted (the zero Persisted for a new
// server). The node starts LOOKING.
func New(cfg Config, st Persisted) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if st.AcceptedEpoch < st.CurrentEpoch {
		return nil, fmt.Errorf("zab: persisted state: accepted epoch %d below current epoch %d", st.AcceptedEpoch, st.CurrentEpoch)
	}
	for i := 1; i < len(st.Log); i++ {
		if !follows(st.Log[i-1].Zxid, st.Log[i].Zxid) {
			return nil, fmt.Errorf("zab: persisted log: entry %d (%v) does not follow %v", i, st.Log[i].Zxid, st.Log[i-1].Zxid)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	n := &Node{
		cfg:     cfg,
		log:     cfg.Logger.With("zab", cfg.ID),
		id:      cfg.ID,
		quorum:  len(cfg.Peers)/2 + 1,
		hs:      st.HardState,
		durHS:   st.HardState,
		commit:  st.Snapshot,
		applied: st.Snapshot,
		pending: map[uint64]bool{},
		slots:   newPeerSlots(cfg.Peers),
	}
	n.lastTo = make([]lastTo, len(cfg.Peers))
	ents := make([]Entry, len(st.Log))
	for i, t := range st.Log {
		ents[i] = Entry{Txn: t}
	}
	switch {
	case len(ents) == 0 || ents[len(ents)-1].Zxid < st.Snapshot:
		// Nothing logged after the snapshot: the gap between log and snapshot is unknown.
		n.hist.base = st.Snapshot
	case ents[0].Zxid <= st.Snapshot:
		i, ok := slices.BinarySearchFunc(ents, st.Snapshot, func(e Entry, z Zxid) int { return cmpZxid(e.Zxid, z) })
		if !ok {
			return nil, fmt.Errorf("zab: persisted state: snapshot %v is not a logged zxid (log %v..%v)", st.Snapshot, ents[0].Zxid, ents[len(ents)-1].Zxid)
		}
		_ = i
		n.hist.base, n.hist.ents = ents[0].Zxid, ents[1:]
	default:
		if !follows(st.Snapshot, ents[0].Zxid) {
			return nil, fmt.Errorf("zab: persisted state: log starts at %v, which does not follow snapshot %v", ents[0].Zxid, st.Snapshot)
		}
		n.hist.base, n.hist.ents = st.Snapshot, ents
	}
	n.durLast = n.hist.last()
	n.hist.trim(n.applied, n.cfg.Window)
	n.becomeLooking("started")
	return n, nil
}

func cmpZxid(a, b Zxid) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Status reports the core's state.
func (n *Node) Status() Status {
	return Status{
		ID: n.id, Role: n.role, Leader: n.leader, Serving: n.serving(), Epoch: n.epoch,
		AcceptedEpoch: n.hs.AcceptedEpoch, CurrentEpoch: n.hs.CurrentEpoch,
		LastZxid: n.hist.last(), Committed: n.commit, Applied: n.applied,
	}
}

func (n *Node) serving() bool {
	return (n.ls != nil && n.ls.phase == lServe) || (n.fs != nil && n.fs.phase == fServe)
}

// Tick advances the node's clock by one tick: pings, retries and timeouts.
func (n *Node) Tick() {
	n.now++
	switch n.role {
	case Leading:
		n.tickLeader()
	case Following:
		n.tickFollower()
	}
}

// Elected tells the node who the election chose. Telling a node what it already
// does (lead, or follow that leader) changes nothing: a leader that started a new
// epoch is noticed through its pings.
func (n *Node) Elected(leader int) error {
	if !slices.Contains(n.cfg.Peers, leader) {
		return fmt.Errorf("zab: elected %d is not a configured server", leader)
	}
	switch {
	case leader == n.id && n.role == Leading, leader != n.id && n.role == Following && n.leader == leader:
	case leader == n.id:
		n.becomeLeader()
	default:
		n.becomeFollower(leader)
	}
	return nil
}

// Closed tells the node that peer closed its connection: its process has most likely
// died (a killed process's sockets close at once, and the FIN reaches the peers one
// link delay later). A follower of that peer goes LOOKING at once, as ZooKeeper's
// followers do when the leader's socket closes, instead of waiting out TimeoutTicks,
// which stays for silent failures. Anything else is handled as Disconnected.
func (n *Node) Closed(peer int) {
	if n.role == Following && peer == n.leader {
		n.becomeLooking(fmt.Sprintf("leader %d closed its connection", peer))
		return
	}
	n.Disconnected(peer)
}

// Disconnected tells the node that the connection to peer broke, so messages to
// or from it may have been lost. A follower starts its handshake with the leader
// again; a leader stops sending to the peer until it does.
func (n *Node) Disconnected(peer int) {
	switch {
	case n.role == Following && peer == n.leader:
		n.resync("connection to the leader lost")
	case n.role == Leading && peer != n.id:
		if p := n.ls.peer(peer); p != nil {
			if p == n.ls.source && n.ls.phase == lFetch {
				n.becomeLooking(fmt.Sprintf("connection to fetch source %d lost", peer))
				return
			}
			p.phase = pNone
		}
	}
}

// StepDown makes the node LOOKING (for instance when the election resigns it).
func (n *Node) StepDown(reason string) { n.becomeLooking(reason) }

// Propose submits a client write of this server. reqID must be unique among this
// server's requests, across restarts too (a Result names it). The Result comes
// in a later Ready.
func (n *Node) Propose(reqID uint64, data []byte) error {
	if !n.serving() {
		return ErrNotServing
	}
	if n.pending[reqID] {
		return fmt.Errorf("zab: request %d already pending", reqID)
	}
	n.pending[reqID] = true
	if n.role == Leading {
		n.propose(n.id, reqID, data)
		return nil
	}
	n.send(Message{Type: MsgRequest, To: n.leader, Epoch: n.epoch, ReqID: reqID, Data: data})
	return nil
}

// Step feeds a peer message to the node. Messages that do not fit the node's
// state (stale epochs, another leader's) are dropped; the error is for messages
// that cannot be from a peer at all.
func (n *Node) Step(m Message) error {
	if m.To != n.id {
		return fmt.Errorf("zab: message %v is for %d, this is %d", m, m.To, n.id)
	}
	if _, ok := n.slots.of(m.From); m.From == n.id || !ok {
		return fmt.Errorf("zab: message %v from unknown server %d", m, m.From)
	}
	if m.Type == 0 || m.Type >= msgTypeEnd || m.Type == MsgSnap {
		return fmt.Errorf("zab: message of type %v cannot be stepped", m.Type)
	}
	switch n.role {
	case Leading:
		n.stepLeader(m)
	case Following:
		if m.From == n.leader {
			n.stepFollower(m)
		}
	case Looking:
		if m.Type == MsgFollowerInfo { // a follower that elected this server first
			if n.early == nil {
				n.early = map[int]Message{}
			}
			n.early[m.From] = m
		}
	}
	return nil
}

// HasReady reports whether Ready has something (and no Ready awaits its Advance).
func (n *Node) HasReady() bool {
	if n.inflight.on {
		return false
	}
	return len(n.msgs) > 0 || len(n.ops) > 0 || len(n.events) > 0 || len(n.results) > 0 ||
		n.committable() > n.applied || n.commitsToSend()
}

func (n *Node) committable() Zxid { return min(n.commit, n.durLast) }

// Ready returns what the driver must do now (see Ready). Call Advance when done;
// until then Ready returns nothing.
func (n *Node) Ready() Ready {
	if n.inflight.on {
		return Ready{}
	}
	n.flushCommits()
	var rd Ready
	rd.Messages = n.takeMessages()
	for _, op := range n.opsSpare { // the last Ready's operations are done with: reuse them
		if a, ok := op.(*Append); ok {
			clear(a.Txns)
			a.Txns = a.Txns[:0]
			n.appends = append(n.appends, a)
		}
	}
	clear(n.opsSpare)
	rd.Persist, n.ops, n.opsSpare = n.ops, n.opsSpare[:0], n.ops
	n.inflight = inflight{on: true, seq: n.opSeq, last: n.hist.last(), hs: n.hs}
	if upto := n.committable(); upto > n.applied {
		ents := n.hist.through(n.applied, upto)
		clear(n.comSpare)
		rd.Committed = n.comSpare[:0]
		for _, e := range ents {
			rd.Committed = append(rd.Committed, e.Txn)
			if e.Origin == n.id && n.pending[e.ReqID] {
				delete(n.pending, e.ReqID)
				n.results = append(n.results, Result{ReqID: e.ReqID, Zxid: e.Zxid})
			}
			n.applied = e.Zxid
		}
	}
	if rd.Committed != nil {
		n.comSpare = rd.Committed
	}
	// A Ready with results is one per client write: their arrays alternate as the
	// messages' do rather than one being made for each.
	clear(n.resSpare)
	rd.Results, n.results, n.resSpare = n.results, n.resSpare[:0], n.results
	rd.Events, n.events = n.events, nil
	return rd
}

// takeMessages hands out the queued messages, merging consecutive proposals to a
// peer. (A MsgSnap is for the state before this Ready; the protocol never sends a
// snapshot while it is installing one, so that state is the one at m.Zxid.)
func (n *Node) takeMessages() []Message {
	msgs := n.msgs
	n.msgs, n.spare = n.spare[:0], msgs // the last Ready's array is free again: see Ready
	if len(msgs) < 2 {
		return msgs
	}
	n.takes++       // marks lastTo's entries of this call (no clearing between calls)
	out := msgs[:0] // compacted in place: out never overtakes the message being read
	for _, m := range msgs {
		i, _ := n.slots.of(m.To)
		slot := &n.lastTo[i]
		if slot.take == n.takes {
			if p := &out[slot.at]; m.Type == MsgProposal && p.Type == MsgProposal && p.Epoch == m.Epoch &&
				p.Entries[len(p.Entries)-1].Zxid == m.Zxid {
				if !slot.owned { // the first merge copies: a proposal's entries are every peer's
					p.Entries = slices.Clip(p.Entries)
					slot.owned = true
				}
				p.Entries = append(p.Entries, m.Entries...)
				continue
			}
		}
		*slot = lastTo{take: n.takes, at: len(out)}
		out = append(out, m)
	}
	clear(msgs[len(out):]) // let merged messages' data go
	return out
}

// lastTo is takeMessages' note of the last message to a peer.
type lastTo struct {
	take  uint64 // the call it is from
	at    int    // its index in the output
	owned bool   // its entries are its own array
}

// Advance tells the node that the last Ready was handled: its operations are
// durable and its committed transactions applied.
func (n *Node) Advance() {
	in := n.inflight
	if !in.on {
		return
	}
	n.inflight = inflight{}
	n.durSeq, n.durLast, n.durHS = in.seq, in.last, in.hs
	kept := n.deferred[:0]
	for _, d := range n.deferred {
		if d.need <= n.durSeq {
			n.msgs = append(n.msgs, d.m)
		} else {
			kept = append(kept, d)
		}
	}
	n.deferred = kept
	n.hist.trim(n.applied, n.cfg.Window)
	switch n.role {
	case Leading:
		n.leaderDurable()
	case Following:
		n.maybeAck()
	}
}

// --- helpers shared by both roles ---

func (n *Node) send(m Message) {
	m.From = n.id
	n.msgs = append(n.msgs, m)
}

// sendDurable sends m once every operation queued so far is durable.
func (n *Node) sendDurable(m Message) {
	if n.durSeq >= n.opSeq {
		n.send(m)
		return
	}
	m.From = n.id
	n.deferred = append(n.deferred, deferredMsg{need: n.opSeq, m: m})
}

func (n *Node) persist(op Op) {
	n.opSeq++
	n.ops = append(n.ops, op)
}

func (n *Node) setHardState(hs HardState) {
	n.hs = hs
	n.persist(&SetHardState{hs})
}

func (n *Node) appendEntries(es []Entry) error {
	if err := n.hist.append(es); err != nil || len(es) == 0 {
		return err
	}
	var a *Append
	if len(n.ops) > 0 {
		a, _ = n.ops[len(n.ops)-1].(*Append)
	}
	if a == nil {
		if k := len(n.appends); k > 0 {
			a, n.appends = n.appends[k-1], n.appends[:k-1]
		} else {
			a = &Append{}
		}
		n.persist(a)
	}
	for _, e := range es {
		a.Txns = append(a.Txns, e.Txn)
	}
	return nil
}

// forgetDurableAfter lowers what is known durable when the log is cut back to z.
func (n *Node) forgetDurableAfter(z Zxid) {
	n.durLast = min(n.durLast, z)
	if n.inflight.on {
		n.inflight.last = min(n.inflight.last, z)
	}
}

func (n *Node) emit(e Event) { n.events = append(n.events, e) }

func (n *Node) leaveRole() {
	for _, id := range slices.Sorted(mapKeys(n.pending)) {
		n.results = append(n.results, Result{ReqID: id, Err: ErrLeaderChanged})
	}
	clear(n.pending)
	n.ls, n.fs, n.snapIn, n.deferred = nil, nil, nil, nil
	n.leader, n.epoch, n.recvBytes = 0, 0, 0
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (n *Node) becomeLooking(reason string) { n.lookAfter(Event{Type: EventLooking, Reason: reason}) }

// initLimitExceeded goes LOOKING because recovery with from (the leader, or the
// fetch source) outlasted InitTicks, saying how long it waited and what came in.
func (n *Node) initLimitExceeded(reason string, from int, start int64) {
	n.lookAfter(Event{Type: EventLooking, Reason: reason, Leader: from, InitLimit: true, Waited: n.now - start, Received: n.recvBytes})
}

func (n *Node) lookAfter(e Event) {
	n.log.Info("looking", "reason", e.Reason)
	n.leaveRole()
	n.role = Looking
	n.early = nil // FOLLOWERINFOs of an earlier election
	n.emit(e)
}

// --- receiving a history (a follower from its leader, a leader from its fetch source) ---

func (n *Node) recvTrunc(m Message) error {
	z := m.Zxid
	if z < n.applied || z < n.commit || !n.hist.has(z) {
		return fmt.Errorf("TRUNC to %v: applied %v, committed %v, log %v..%v", z, n.applied, n.commit, n.hist.base, n.hist.last())
	}
	n.hist.truncate(z)
	n.forgetDurableAfter(z)
	n.persist(&Truncate{After: z})
	return nil
}

func (n *Node) recvEntries(m Message) error {
	for _, e := range m.Entries {
		n.recvBytes += int64(len(e.Data))
	}
	if m.Zxid != n.hist.last() {
		return fmt.Errorf("%v continues %v, log ends at %v", m.Type, m.Zxid, n.hist.last())
	}
	if err := n.appendEntries(m.Entries); err != nil {
		return fmt.Errorf("%v: %w", m.Type, err)
	}
	return nil
}

func (n *Node) recvChunk(m Message) error {
	switch {
	case m.Seq == 0:
		n.snapIn = &snapIn{zxid: m.Zxid}
	case n.snapIn == nil || n.snapIn.zxid != m.Zxid || n.snapIn.next != m.Seq:
		return fmt.Errorf("snapshot chunk %d of %v out of sequence", m.Seq, m.Zxid)
	}
	n.snapIn.next++
	n.recvBytes += int64(len(m.Data))
	n.persist(&SnapshotChunk{Zxid: m.Zxid, Seq: m.Seq, Last: m.Last, Data: m.Data})
	if m.Last {
		n.snapIn = nil
		n.hist.reset(m.Zxid)
		n.applied = m.Zxid
		n.commit = max(n.commit, m.Zxid)
		n.forgetDurableAfter(m.Zxid)
	}
	return nil
}

// sendHistory brings peer `to` (whose log r summarizes) up to this server's log:
// TRUNC, SNAP or nothing, then DIFFs. It returns the plan, for logs and tests.
func (n *Node) sendHistory(to int, r Summary) syncPlan {
	p := n.hist.plan(r, n.applied)
	from := p.at
	switch p.kind {
	case syncTrunc:
		n.send(Message{Type: MsgTrunc, To: to, Epoch: n.epoch, Zxid: p.at})
	case syncSnap:
		n.send(Message{Type: MsgSnap, To: to, Epoch: n.epoch, Zxid: p.at})
	}
	ents := n.hist.after(from)
	prev := from
	for first := true; first || len(ents) > 0; first = false {
		k, size := 0, 0
		for k < len(ents) && (k == 0 || size+len(ents[k].Data) <= n.cfg.MaxBatchBytes) {
			size += len(ents[k].Data)
			k++
		}
		// A copy: the history's array changes when it truncates, a message's entries
		// never do (a simulator's links carry them as they are).
		n.send(Message{Type: MsgDiff, To: to, Epoch: n.epoch, Zxid: prev, Entries: slices.Clone(ents[:k])})
		if k > 0 {
			prev = ents[k-1].Zxid
		}
		ents = ents[k:]
	}
	n.log.Info("sync", "peer", to, "plan", p.String(), "peerLast", r.Last, "last", n.hist.last())
	return p
}
