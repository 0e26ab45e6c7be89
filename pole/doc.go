// Package pole is POLE's leader selection (Becker, Junqueira, Serafini, Middleware 2011,
// Alg. 1) with its score oracles, as a pure state machine: the same code runs inside
// poled, an in-process cluster and the deterministic simulator.
//
// A driver owns a Node per process. It calls Tick at a fixed period and Step for every
// message received, each with its monotonic clock; it sends what Ready returns (the
// messages name their destination) and hands the events to the broadcast layer. The
// broadcast layer calls NewElection when it loses its leader or its quorum (failure
// detection lives there, Sec. 3.1) and acts on EventLeader and EventResign. The driver
// also feeds the oracles: SetZxid (theta_z) and SetRate (theta_r).
//
// Where Alg. 1 lives:
//
//	lines 1-4   Config.Oracle (get-score, ≺θ), Config.ElectionTicks (T), Node's timers
//	lines 5-9   NewNode
//	lines 10-13 Node.startEpoch
//	lines 14-18 Node.NewElection / newElection (get-score may block: Sec. 5)
//	lines 19-25 Node.Tick, the retry timer with exponential backoff
//	line  26    Node.elect ends the election with an EventLeader
//	lines 27-32 Node.startTimer (start-timer?)
//	lines 33-49 Node.onPropose (and Node.resume for line 45's get-score)
//	lines 50-53 Node.checkElectionTimer, run from Tick and from line 30
//	lines 54-65 Node.onVote
//	≺p          Node.less: epoch, then score by the oracle's ≺θ, then id
//
// Readings of the two-column listing, each documented where it is implemented: "send to
// all" includes the sender (its own copy only counts it in the proposal set); line 49
// counts a sender only if its proposal is for the receiver's epoch; start-epoch stops
// the election timer along with emptying the proposal set; a running election timer is
// not restarted by line 32; line 64 is the "else" of 56-63; once a leader is known the
// election timer stays stopped; a voter counted by line 65 counts for the quorum of
// line 31 but not as a proposal for line 29; a vote quorum for l needs l's own vote but
// not one epoch for all votes, and the adopter takes the epoch of l's vote (onVote says
// why: followers of one leader may have elected it in different epochs); a voter for
// another leader than the process's proposal leaves the proposal-set, for it has left
// the election; a process that leads takes no vote (lines 56-65 apply to the others).
//
// Oracles (Sec. 3.3, 5): History, Rotating, Request, Consensus, Latency, WorstCase,
// Preference, Combined (priority order with equivalence classes), and Initial, which
// makes a chosen server win the very first election. The latency-type scores use
// score.ThetaC/ThetaW/ThetaL over the RTTs the node's heartbeat monitor measures.
package pole
