package pole

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/polebench/polebench/zxid"
)

// Config configures one process. Timers count Ticks; the driver decides how long a
// tick is (DefaultConfig turns durations into ticks).
type Config struct {
	ID      int
	Servers []int // every configured server, this one included: |N| = len(Servers)
	Oracle  Oracle

	// ElectionTicks is Alg. 1's constant T: the election timer fires when it exceeds T.
	ElectionTicks int
	// RetryTicks is the first retry timeout t (line 15 sets t ← T); 0 means T.
	RetryTicks int
	// MaxRetryTicks caps the exponential backoff of line 25; 0 leaves it uncapped as in
	// Alg. 1.
	MaxRetryTicks int

	// HeartbeatTicks is the heartbeat period; 0 disables the monitor (RTT-based oracles
	// then see no peers).
	HeartbeatTicks int
	// MissedHeartbeats is how many periods a silent peer stays alive.
	MissedHeartbeats int
	// RTTWindow is how many RTT samples per peer the mean covers.
	RTTWindow int

	// ResignCheckTicks > 0 turns resignation on (Sec. 5): every ResignCheckTicks the
	// leader compares its score with the followers' and resigns when one beats it by
	// more than ResignMargin (in the oracle's unit, see Oracle.Gain).
	ResignCheckTicks int
	ResignMargin     float64

	// Logger gets state changes at debug level and elections at info; nil discards.
	Logger *slog.Logger
}

// DefaultConfig is a configuration for a driver ticking every tick: T = 200 ms (ZooKeeper's
// finalize wait), retries backing off up to 60 s, heartbeats every 1 s (Sec. 3.3), a peer
// dead after 3 missed heartbeats, RTT means over 10 samples, no resignation.
func DefaultConfig(id int, servers []int, o Oracle, tick time.Duration) Config {
	ticks := func(d time.Duration) int {
		if tick <= 0 {
			return 1
		}
		return max(1, int((d+tick-1)/tick))
	}
	return Config{
		ID: id, Servers: servers, Oracle: o,
		ElectionTicks:    ticks(200 * time.Millisecond),
		MaxRetryTicks:    ticks(60 * time.Second),
		HeartbeatTicks:   ticks(time.Second),
		MissedHeartbeats: 3,
		RTTWindow:        10,
	}
}

func (c Config) validate() error {
	if len(c.Servers) == 0 {
		return fmt.Errorf("pole: config: no servers")
	}
	seen := map[int]bool{}
	for _, s := range c.Servers {
		if s <= 0 {
			return fmt.Errorf("pole: config: server id %d: ids start at 1", s)
		}
		if seen[s] {
			return fmt.Errorf("pole: config: server id %d listed twice", s)
		}
		seen[s] = true
	}
	switch {
	case !seen[c.ID]:
		return fmt.Errorf("pole: config: id %d is not among the servers %v", c.ID, c.Servers)
	case c.Oracle == nil:
		return fmt.Errorf("pole: config: no oracle")
	case c.ElectionTicks < 1:
		return fmt.Errorf("pole: config: ElectionTicks %d, want >= 1", c.ElectionTicks)
	case c.RetryTicks < 0, c.MaxRetryTicks < 0, c.HeartbeatTicks < 0, c.ResignCheckTicks < 0:
		return fmt.Errorf("pole: config: negative tick count")
	case c.HeartbeatTicks > 0 && c.MissedHeartbeats < 1:
		return fmt.Errorf("pole: config: MissedHeartbeats %d, want >= 1", c.MissedHeartbeats)
	case c.HeartbeatTicks > 0 && c.RTTWindow < 1:
		return fmt.Errorf("pole: config: RTTWindow %d, want >= 1", c.RTTWindow)
	case !(c.ResignMargin >= 0):
		return fmt.Errorf("pole: config: ResignMargin %v, want >= 0", c.ResignMargin)
	}
	return nil
}

// EventKind says what an Event reports.
type EventKind uint8

const (
	// EventLooking: the process started an election (new-election, or its leader resigned).
	EventLooking EventKind = iota + 1
	// EventLeader: the process now believes Leader leads Epoch.
	EventLeader
	// EventResign: this process, leader of Epoch, gave up leadership (Sec. 5); the
	// broadcast layer must stop leading. An election follows (EventLooking).
	EventResign
)

func (k EventKind) String() string {
	switch k {
	case EventLooking:
		return "looking"
	case EventLeader:
		return "leader"
	case EventResign:
		return "resign"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is a state change the driver and the broadcast layer act on.
type Event struct {
	Kind   EventKind
	Epoch  Epoch
	Leader int // EventLeader only
}

func (e Event) String() string {
	if e.Kind == EventLeader {
		return fmt.Sprintf("leader e=%d leader=%d", e.Epoch, e.Leader)
	}
	return fmt.Sprintf("%v e=%d", e.Kind, e.Epoch)
}

// Ready is what the node produced since the last call: messages to send (From and To
// set) and events, both in order.
type Ready struct {
	Messages []Message
	Events   []Event
}

// Node is one process of Alg. 1 plus its heartbeat monitor: a pure state machine.
// Messages and ticks go in through Step and Tick, messages and events come out of Ready.
// It is not safe for concurrent use; the driver serializes calls.
type Node struct {
	cfg     Config
	servers []int // ascending
	log     *slog.Logger

	// Alg. 1's variables.
	epoch       Epoch
	leader      int // 0 is ⊥
	proposal    Proposal
	proposalSet map[int]bool // true: j's proposal arrived; false: only its vote (line 65)
	voteSet     map[vote]bool
	elecTimer   timer
	// new-election's retry loop (lines 19-25) runs while electing and leader = ⊥.
	electing   bool
	retryTimer int // ticks since the retry timer (re)started (line 20)
	retryLimit int // t (lines 15, 25)

	// blocked holds the rest of new-election or of the proposal handler while
	// get-score has no answer yet (Sec. 5); queue holds P and V messages meanwhile.
	blocked *blockedScore
	queue   []Message

	prevLeader int // the last leader known; unlike leader, start-epoch does not clear it
	exclude    int // the leader this election replaces, left out of scores
	announced  Event
	rate       float64
	zxid       zxid.Zxid
	mon        monitor

	resignTimer  int
	resignScores map[int]Score

	out Ready
}

type timer struct {
	running bool
	elapsed int
}

type vote struct {
	epoch        Epoch
	leader, from int
}

type blockedScore struct {
	newElection bool     // blocked in line 17; otherwise in line 45
	p           Proposal // line 45: the proposal received
	from        int
}

// queueLimit bounds the messages held while get-score blocks; the oldest go first,
// which the algorithm tolerates like any message loss.
const queueLimit = 1024

// NewNode validates c and returns a process in Alg. 1's initial state (lines 5-9):
// no leader, epoch 0, empty sets, election timer stopped. Nothing happens until the
// broadcast layer calls NewElection or a message arrives.
func NewNode(c Config) (*Node, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	if c.RetryTicks == 0 {
		c.RetryTicks = c.ElectionTicks
	}
	n := &Node{cfg: c, servers: slices.Sorted(slices.Values(c.Servers)), log: c.Logger}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	n.log = n.log.With("id", c.ID)
	peers := slices.DeleteFunc(slices.Clone(n.servers), func(s int) bool { return s == c.ID })
	n.mon = newMonitor(c.ID, peers, c.HeartbeatTicks, c.MissedHeartbeats, c.RTTWindow)
	n.proposalSet = map[int]bool{}
	n.voteSet = map[vote]bool{}
	return n, nil
}

// SetRate sets this process's request rate (theta_r, req/s), as the driver measures it.
func (n *Node) SetRate(r float64) { n.rate = r }

// SetZxid sets this process's last zxid (theta_z), as the broadcast layer reports it.
func (n *Node) SetZxid(z zxid.Zxid) { n.zxid = z }

// Leader returns the current epoch and leader (0 while none is known).
func (n *Node) Leader() (epoch Epoch, leader int) { return n.epoch, n.leader }

// Peers reports the monitor's view of every peer, for drivers to record measured RTTs.
func (n *Node) Peers() []PeerStatus { return n.mon.status() }

// HasReady reports whether Ready has anything.
func (n *Node) HasReady() bool { return len(n.out.Messages) > 0 || len(n.out.Events) > 0 }

// Ready returns the messages and events produced so far and forgets them.
func (n *Node) Ready() Ready {
	r := n.out
	n.out = Ready{}
	return r
}

// NewElection is Alg. 1's new-election (lines 14-18); its loop (19-26) runs on Tick and
// its result arrives as an EventLeader. The broadcast layer calls it when it loses its
// leader or its quorum; the scores then leave the lost leader out (Sec. 3.3).
func (n *Node) NewElection() {
	n.exclude = n.prevLeader
	n.newElection()
}

func (n *Node) newElection() {
	n.leader = 0 // start-epoch's line 11, early: nothing observes it while get-score blocks
	n.announced = Event{}
	n.elecTimer = timer{}
	n.retryLimit = n.cfg.RetryTicks // line 15: t ← T
	n.retryTimer = 0                // line 20
	n.electing = true               // line 19
	n.epoch++                       // line 16
	n.emit(Event{Kind: EventLooking, Epoch: n.epoch})
	n.log.Debug("new election", "epoch", n.epoch, "exclude", n.exclude)
	n.scoreThen(&blockedScore{newElection: true}) // line 17
}

// scoreThen asks get-score for the current epoch and continues b with the score, or
// blocks until a later Tick gets one.
func (n *Node) scoreThen(b *blockedScore) {
	s, ok := n.getScore(n.exclude)
	if !ok {
		n.blocked = b
		n.log.Debug("get-score blocked", "epoch", n.epoch)
		return
	}
	n.blocked = nil
	n.resume(b, s)
}

func (n *Node) resume(b *blockedScore, s Score) {
	n.proposal = Proposal{Score: s, ID: n.cfg.ID} // line 17 / line 45
	if b.newElection {
		n.startEpoch() // line 18
		return
	}
	if n.less(n.epoch, n.proposal, n.epoch, b.p) { // line 46
		n.proposal = b.p
	}
	n.startEpoch()             // line 48
	n.startTimer(b.from, true) // line 49
}

// getScore builds the oracle's View; exclude is left out of the peers.
func (n *Node) getScore(exclude int) (Score, bool) {
	return n.cfg.Oracle.Score(View{
		Epoch: n.epoch, Self: n.cfg.ID, Servers: n.servers,
		PrevLeader: n.prevLeader, Exclude: exclude,
		Peers: n.mon.view(exclude), Rate: n.rate, Zxid: n.zxid, Ready: n.mon.ready(),
	})
}

// startEpoch is lines 10-13. It also stops the election timer: the timer stands for
// "a quorum proposed in this epoch" (line 32), and the proposal set just emptied.
func (n *Node) startEpoch() {
	n.leader = 0          // line 11
	clear(n.proposalSet)  // line 12
	clear(n.voteSet)      // line 12
	n.elecTimer = timer{} // (see above)
	n.broadcastProposal() // line 13
}

// broadcastProposal is "send ⟨P, epoch, proposal⟩ to all" (lines 13, 24, 42). The copy
// a process sends itself reaches lines 33-49 with its own proposal and epoch, where only
// line 49 has an effect, so it is applied directly.
func (n *Node) broadcastProposal() {
	for _, s := range n.servers {
		if s != n.cfg.ID {
			n.send(Message{Type: MsgPropose, To: s, Epoch: n.epoch, Proposal: n.proposal.clone()})
		}
	}
	n.startTimer(n.cfg.ID, true)
}

// startTimer is start-timer? (lines 27-32). Starting a running timer leaves it running,
// so it measures T from the moment a quorum first proposed. Once a leader is known the
// election is over (lines 26, 53, 63) and the timer stays stopped.
//
// proposed tells a proposal from a vote (line 65). Both count for the quorum of line 31,
// but line 29 elects at once only when every process's proposal arrived ("received
// proposals from all processes", Sec. 3.2): a voter's score is unknown, and electing
// without it picks a leader that the voter's own proposal would have beaten.
func (n *Node) startTimer(j int, proposed bool) {
	n.proposalSet[j] = n.proposalSet[j] || proposed // line 28
	if n.leader != 0 {
		return
	}
	proposals := 0
	for _, p := range n.proposalSet {
		if p {
			proposals++
		}
	}
	switch {
	case proposals == len(n.servers): // line 29
		n.elecTimer = timer{running: true, elapsed: n.cfg.ElectionTicks + 1} // line 30
		n.checkElectionTimer()
	case len(n.proposalSet) > len(n.servers)/2 && !n.elecTimer.running: // line 31
		n.elecTimer = timer{running: true} // line 32
	}
}

// checkElectionTimer is lines 50-53: upon election-timer > T the highest proposal leads.
func (n *Node) checkElectionTimer() {
	if n.elecTimer.running && n.elecTimer.elapsed > n.cfg.ElectionTicks { // line 50
		n.elect(n.proposal.ID) // lines 51-53
	}
}

// elect sets leader (lines 52, 62), stops the election timer (53, 63) and ends
// new-election's loop (26).
func (n *Node) elect(l int) {
	n.leader = l
	n.elecTimer = timer{}
	n.electing = false
	n.prevLeader = l
	n.exclude = 0
	n.resignTimer = 0
	n.resignScores = nil
	if ev := (Event{Kind: EventLeader, Epoch: n.epoch, Leader: l}); ev != n.announced {
		n.announced = ev
		n.emit(ev)
		n.log.Info("leader elected", "epoch", n.epoch, "leader", l, "proposal", n.proposal.String())
	}
}

// less is ≺p (Sec. 3.2): epoch first, then the score under the oracle's ≺θ, then id.
func (n *Node) less(e1 Epoch, p1 Proposal, e2 Epoch, p2 Proposal) bool {
	if e1 != e2 {
		return e1 < e2
	}
	if n.cfg.Oracle.Less(p1.Score, p2.Score) {
		return true
	}
	if n.cfg.Oracle.Less(p2.Score, p1.Score) {
		return false
	}
	return p1.ID < p2.ID
}

// Tick advances the timers by one tick; now is the driver's monotonic clock.
func (n *Node) Tick(now time.Duration) {
	n.out.Messages = append(n.out.Messages, n.mon.tick(now, n.rate)...)
	if b := n.blocked; b != nil {
		// Blocked in get-score: ask again; the timers wait with the process.
		if s, ok := n.getScore(n.exclude); ok {
			n.blocked = nil
			n.resume(b, s)
			n.drainQueue()
		}
		return
	}
	if n.elecTimer.running { // line 50
		n.elecTimer.elapsed++
		n.checkElectionTimer()
	}
	if n.electing && n.leader == 0 { // lines 19-25
		n.retryTimer++
		if n.retryTimer >= n.retryLimit { // line 21: the wait ends, leader still ⊥ (23)
			n.log.Debug("retry", "epoch", n.epoch, "t", n.retryLimit)
			n.broadcastProposal() // line 24
			n.retryLimit *= 2     // line 25
			if m := n.cfg.MaxRetryTicks; m > 0 {
				n.retryLimit = min(n.retryLimit, m)
			}
			n.retryTimer = 0 // line 20
		}
	}
	n.checkResign()
}

// Step delivers one message; now is the driver's monotonic clock at delivery. A
// message that is not for this process, or from a server not configured, is an error.
func (n *Node) Step(now time.Duration, m Message) error {
	if _, ok := msgNames[m.Type]; !ok {
		return fmt.Errorf("pole: node %d: unknown message type %v", n.cfg.ID, m.Type)
	}
	if m.To != n.cfg.ID {
		return fmt.Errorf("pole: node %d: message for %d: %v", n.cfg.ID, m.To, m)
	}
	if m.From == n.cfg.ID || !slices.Contains(n.servers, m.From) {
		return fmt.Errorf("pole: node %d: message from unknown server %d: %v", n.cfg.ID, m.From, m)
	}
	if m.Type == MsgVote && !slices.Contains(n.servers, m.Leader) {
		return fmt.Errorf("pole: node %d: vote for unknown server %d: %v", n.cfg.ID, m.Leader, m)
	}
	if m.Type == MsgPropose && !slices.Contains(n.servers, m.Proposal.ID) {
		return fmt.Errorf("pole: node %d: proposal of unknown server %d: %v", n.cfg.ID, m.Proposal.ID, m)
	}
	if err := checkFloats(m.Rate, m.Proposal.Score); err != nil {
		return fmt.Errorf("pole: node %d: %v: %w", n.cfg.ID, m, err)
	}
	n.mon.heard(m.From)
	switch m.Type {
	case MsgPing:
		n.send(n.mon.ping(m, n.rate))
	case MsgPong:
		n.mon.pong(now, m)
	case MsgPropose, MsgVote:
		if n.blocked != nil {
			if len(n.queue) == queueLimit {
				n.queue = n.queue[1:]
			}
			n.queue = append(n.queue, m)
			return nil
		}
		n.handle(m)
	case MsgScoreQuery:
		// Scores for resignation include the live leader (Sec. 5): nothing excluded.
		if m.From == n.leader && m.Epoch == n.epoch {
			if s, ok := n.getScore(0); ok {
				n.send(Message{Type: MsgScore, To: m.From, Epoch: n.epoch, Proposal: Proposal{Score: s, ID: n.cfg.ID}})
			}
		}
	case MsgScore:
		if n.leader == n.cfg.ID && m.Epoch == n.epoch && n.resignScores != nil {
			n.resignScores[m.From] = m.Proposal.Score.clone()
		}
	case MsgResign:
		if m.From == n.leader && m.Epoch == n.epoch {
			n.log.Info("leader resigned", "epoch", n.epoch, "leader", m.From)
			n.exclude = 0 // the leader is alive: it competes again
			n.newElection()
		}
	}
	return nil
}

func (n *Node) handle(m Message) {
	if m.Type == MsgPropose {
		n.onPropose(m.From, m.Epoch, m.Proposal)
	} else {
		n.onVote(m.From, m.Epoch, m.Leader)
	}
}

func (n *Node) drainQueue() {
	for len(n.queue) > 0 && n.blocked == nil {
		m := n.queue[0]
		n.queue = n.queue[1:]
		n.handle(m)
	}
}

// onPropose is lines 33-49: upon receive ⟨P, e, p⟩ from j.
//
// Line 49 (start-timer? with j) runs only when j's proposal belongs to the process's
// epoch after lines 37-48: start-epoch empties the proposal set for the epoch, and
// counting a sender still in an older epoch could complete "all processes proposed"
// (line 29) without that sender's score for this epoch.
func (n *Node) onPropose(j int, e Epoch, p Proposal) {
	if n.leader != 0 { // line 34
		n.send(Message{Type: MsgVote, To: j, Epoch: n.epoch, Leader: n.leader}) // line 35
		return                                                                  // line 36
	}
	switch {
	case n.less(e, p, n.epoch, n.proposal): // line 37
		n.send(Message{Type: MsgPropose, To: j, Epoch: n.epoch, Proposal: n.proposal.clone()}) // line 38
	case e == n.epoch: // line 39
		if n.less(n.epoch, n.proposal, e, p) { // line 40
			n.proposal = p.clone() // line 41
			n.broadcastProposal()  // line 42
		}
	default: // line 43: e > epoch
		n.epoch = e                                       // line 44
		n.scoreThen(&blockedScore{p: p.clone(), from: j}) // lines 45-49 (resume)
		return
	}
	if e == n.epoch {
		n.startTimer(j, true) // line 49
	}
}

// onVote is lines 54-65: upon receive ⟨V, e, l⟩ from j.
//
// Lines 56-61 are read as: S holds the votes for l, |S| > |N|/2, l's own vote is in S
// (line 60: a crashed leader cannot be adopted), and the process takes the epoch of l's
// own vote. The listing also asks every vote in S to carry the same epoch (line 57);
// that can never hold once the followers of one leader elected it in different epochs
// (one by its timer in epoch e, another through votes or a later election in e' ≠ e),
// and a late process then elects itself forever. Taking the epoch from the leader's
// own vote keeps the guarantee line 60 is there for and aligns the late process with
// the leader; ZooKeeper's election does the same for processes outside the election
// (votes grouped by leader, checkLeader).
//
// Line 65 counts the voter toward the election timer's quorum only when it votes for
// the process's own best proposal. Counted whatever it voted for, the followers of
// one leader complete the election of another: two minorities that each lead in turn
// (after a partition, say) elect their own leader with the other's votes, lose it for
// want of a quorum, and do it again, in step, forever (the simulator's random fault
// schedules found it: sim.TestCheckConverges). A voter for another
// leader is alive but not a supporter: the process waits for proposals or for a
// quorum of votes, and retries, until the other leader falls and its followers join.
//
// That voter has also left the election (it knows a leader, line 34), so the proposal
// it sent before no longer stands: it leaves the proposal-set (leftElection), as
// ZooKeeper replaces a server's LOOKING vote with its FOLLOWING one. Otherwise a
// server restarted while the others end an election, with the best proposal, counts
// proposals they sent just before electing another leader toward line 29 or 31, and
// elects itself in the epoch they elected that leader in.
//
// A process that leads (it elected itself) takes no vote: its followers count on it,
// and it leaves them only through the broadcast layer (NewElection), as ZooKeeper's
// LEADING server takes no part in elections. Switching on votes, a leader and a
// restarted server that had elected itself each followed the other in one epoch, on a
// quorum that had a follower's vote for the server's previous incarnation, and their
// broadcast layers kept each other waiting (testdata/restart_mutual.txt). Following
// another through votes needs that one's own vote, cast while it led, and a leader
// now changes its mind only in a new election: two processes can no longer come to
// follow each other within one.
func (n *Node) onVote(j int, e Epoch, l int) {
	n.voteSet[vote{epoch: e, leader: l, from: j}] = true // line 55
	if n.leader == n.cfg.ID {
		return
	}
	voters := map[int]bool{}
	var own Epoch
	ownVote := false
	for v := range n.voteSet { // lines 56-58
		if v.leader != l {
			continue
		}
		voters[v.from] = true
		if v.from == l { // line 60
			own, ownVote = max(own, v.epoch), true
		}
	}
	if len(voters) > len(n.servers)/2 && ownVote {
		n.epoch = own // line 61
		n.elect(l)    // lines 62-63
		return
	}
	if l == n.proposal.ID {
		n.startTimer(j, false) // line 65
		return
	}
	n.leftElection(j)
}

// leftElection takes j, a voter for another leader, out of the proposal-set (onVote
// says why). The election timer stops if the set no longer holds a quorum: it stands
// for "a quorum proposed in this epoch", as start-epoch stops it with the set emptied.
func (n *Node) leftElection(j int) {
	if _, ok := n.proposalSet[j]; !ok {
		return
	}
	delete(n.proposalSet, j)
	if n.elecTimer.running && len(n.proposalSet) <= len(n.servers)/2 {
		n.elecTimer = timer{}
	}
}

// checkResign is the optional resignation of Sec. 5, run by the leader on Tick: every
// ResignCheckTicks it judges the scores its last query collected, then queries again.
func (n *Node) checkResign() {
	if n.cfg.ResignCheckTicks == 0 || n.leader != n.cfg.ID {
		return
	}
	if n.resignTimer++; n.resignTimer < n.cfg.ResignCheckTicks {
		return
	}
	n.resignTimer = 0
	if own, ok := n.getScore(0); ok && len(n.resignScores) > 0 {
		for _, id := range slices.Sorted(maps.Keys(n.resignScores)) {
			s := n.resignScores[id]
			if n.cfg.Oracle.Less(own, s) && n.cfg.Oracle.Gain(own, s) > n.cfg.ResignMargin {
				n.resign(id, own, s)
				return
			}
		}
	}
	n.resignScores = map[int]Score{}
	for _, s := range n.servers {
		if s != n.cfg.ID {
			n.send(Message{Type: MsgScoreQuery, To: s, Epoch: n.epoch})
		}
	}
}

func (n *Node) resign(better int, own, theirs Score) {
	n.log.Info("resigning", "epoch", n.epoch, "own", own.String(), "better", better, "score", theirs.String())
	for _, s := range n.servers {
		if s != n.cfg.ID {
			n.send(Message{Type: MsgResign, To: s, Epoch: n.epoch})
		}
	}
	n.emit(Event{Kind: EventResign, Epoch: n.epoch})
	n.exclude = 0
	n.newElection()
}

func (n *Node) send(m Message) {
	m.From = n.cfg.ID
	n.out.Messages = append(n.out.Messages, m)
}

func (n *Node) emit(e Event) { n.out.Events = append(n.out.Events, e) }

// Status is a snapshot of the node's election state, for tests, logs and 4lw output.
type Status struct {
	ID, Leader, PrevLeader int
	Epoch                  Epoch
	Proposal               Proposal
	Electing, Blocked      bool
	Proposed               []int  // proposal-set, ascending
	Votes                  []Vote // vote-set
	ElectionTimer          int    // ticks elapsed; -1 when stopped
	RetryTimer, RetryLimit int
}

// Vote is one element of the vote-set: From said Leader leads Epoch.
type Vote struct {
	Epoch        Epoch
	Leader, From int
}

// Status reports the node's state.
func (n *Node) Status() Status {
	s := Status{ID: n.cfg.ID, Leader: n.leader, PrevLeader: n.prevLeader, Epoch: n.epoch,
		Proposal: n.proposal.clone(), Electing: n.electing, Blocked: n.blocked != nil,
		ElectionTimer: -1, RetryTimer: n.retryTimer, RetryLimit: n.retryLimit}
	if n.elecTimer.running {
		s.ElectionTimer = n.elecTimer.elapsed
	}
	for j := range n.proposalSet {
		s.Proposed = append(s.Proposed, j)
	}
	slices.Sort(s.Proposed)
	for v := range n.voteSet {
		s.Votes = append(s.Votes, Vote{Epoch: v.epoch, Leader: v.leader, From: v.from})
	}
	slices.SortFunc(s.Votes, func(a, b Vote) int {
		return cmp.Or(cmp.Compare(a.Epoch, b.Epoch), cmp.Compare(a.Leader, b.Leader), cmp.Compare(a.From, b.From))
	})
	return s
}

func (s Status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d: epoch=%d leader=%d proposal=%v proposed=%v", s.ID, s.Epoch, s.Leader, s.Proposal, s.Proposed)
	if len(s.Votes) > 0 {
		b.WriteString(" votes=")
		for i, v := range s.Votes {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%d:%d@%d", v.From, v.Leader, v.Epoch)
		}
	}
	if s.ElectionTimer >= 0 {
		fmt.Fprintf(&b, " election-timer=%d", s.ElectionTimer)
	}
	if s.Electing {
		fmt.Fprintf(&b, " retry=%d/%d", s.RetryTimer, s.RetryLimit)
	}
	if s.Blocked {
		b.WriteString(" blocked")
	}
	return b.String()
}
