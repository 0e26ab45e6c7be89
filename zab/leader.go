package zab

import (
	"fmt"
	"math"
	"slices"
)

type leaderPhase uint8

const (
	lDiscover leaderPhase = iota // collecting FOLLOWERINFO from a quorum
	lAckEpoch                    // LEADERINFO sent, collecting fresh ACKEPOCHs from a quorum
	lFetch                       // learning the missing history from the best quorum member
	lSync                        // history established: syncing followers, counting NEWLEADER ACKs
	lServe                       // broadcast
)

type peerPhase uint8

const (
	pNone    peerPhase = iota // heard from (PONG) but no FOLLOWERINFO
	pInfo                     // FOLLOWERINFO received
	pAcked                    // ACKEPOCH received, waiting for the leader's history
	pSyncing                  // history and NEWLEADER sent, waiting for its ACK
	pSynced                   // acked NEWLEADER: counts for commits
)

type peerState struct {
	id       int
	phase    peerPhase
	heard    int64 // tick a message last came from it
	accepted Epoch // FOLLOWERINFO's accepted epoch
	current  Epoch // ACKEPOCH's current epoch
	sum      Summary
	fresh    bool // its ACKEPOCH accepted our epoch for the first time
	ours     bool // it accepted our epoch from us (kept across its handshakes)
	ackOrder int  // order among fresh ACKEPOCHs
	acked    Zxid // durable last zxid it acked in our epoch
}

type leaderState struct {
	phase       leaderPhase
	start       int64
	lastPing    int64
	peers       []*peerState // every other configured server, in config order
	bySlot      []*peerState // by index in Config.Peers (nil for this server)
	slots       *peerSlots
	acks        int        // fresh ACKEPOCHs so far
	source      *peerState // fetch source
	fetchDone   bool
	fetchNeed   uint64 // op sequence that holds the fetched history
	initLast    Zxid   // the history NEWLEADER establishes
	counter     uint32 // last proposal counter of our epoch
	commitSent  Zxid
	firstCommit bool
}

func (ls *leaderState) peer(id int) *peerState {
	if i, ok := ls.slots.of(id); ok {
		return ls.bySlot[i]
	}
	return nil
}

func (n *Node) becomeLeader() {
	n.leaveRole()
	n.role, n.leader = Leading, n.id
	ls := &leaderState{start: n.now, lastPing: n.now - int64(n.cfg.PingTicks), bySlot: make([]*peerState, len(n.cfg.Peers)), slots: &n.slots}
	for i, id := range n.cfg.Peers {
		if id != n.id {
			p := &peerState{id: id, heard: n.now}
			ls.peers = append(ls.peers, p)
			ls.bySlot[i] = p
		}
	}
	n.ls = ls
	n.log.Info("leading", "last", n.hist.last(), "accepted", n.hs.AcceptedEpoch, "current", n.hs.CurrentEpoch)
	n.emit(Event{Type: EventLeading, Leader: n.id, Zxid: n.hist.last()})
	// Followers that elected this server before it did already said FOLLOWERINFO:
	// take it now rather than wait for their retry (RetryTicks, 200 ms).
	n.maybeDecideEpoch()
	early := n.early
	n.early = nil
	for _, id := range slices.Sorted(mapKeys(early)) {
		if n.ls != nil {
			n.stepLeader(early[id])
		}
	}
	if n.ls != nil {
		n.tickPing()
	}
}

func (n *Node) tickLeader() {
	ls := n.ls
	n.tickPing()
	heard := 1
	for _, p := range ls.peers {
		if n.now-p.heard <= int64(n.cfg.TimeoutTicks) {
			heard++
		}
	}
	switch {
	case heard < n.quorum:
		n.becomeLooking(fmt.Sprintf("leader hears %d servers, quorum is %d", heard, n.quorum))
	case ls.phase == lFetch && n.now-ls.source.heard > int64(n.cfg.TimeoutTicks):
		n.becomeLooking(fmt.Sprintf("fetch source %d silent", ls.source.id))
	case n.cfg.InitTicks > 0 && ls.phase != lServe && n.now-ls.start > int64(n.cfg.InitTicks):
		from := 0
		if ls.source != nil {
			from = ls.source.id
		}
		n.initLimitExceeded("recovery exceeded InitTicks", from, ls.start)
	}
}

// tickPing pings every configured server: followers answer, and a server still
// following an earlier epoch of ours learns it must resync.
func (n *Node) tickPing() {
	ls := n.ls
	if n.now-ls.lastPing < int64(n.cfg.PingTicks) {
		return
	}
	ls.lastPing = n.now
	for _, p := range ls.peers {
		n.send(Message{Type: MsgPing, To: p.id, Epoch: n.epoch, Zxid: n.commit})
	}
}

func (n *Node) stepLeader(m Message) {
	ls := n.ls
	if m.Type == MsgPing {
		// Only a leader pings: the sender leads elsewhere. It is no follower of ours and
		// must not count toward our quorum (two leaders would keep each other alive);
		// a later epoch than ours means ours is over.
		if m.Epoch > n.epoch {
			n.becomeLooking(fmt.Sprintf("server %d leads epoch %d, above ours %d", m.From, m.Epoch, n.epoch))
		}
		return
	}
	p := ls.peer(m.From)
	p.heard = n.now
	switch m.Type {
	case MsgFollowerInfo:
		n.onFollowerInfo(p, m)
	case MsgAckEpoch:
		// A peer at pNone acking our epoch shook hands again before the news that its
		// old stream ended came in (the two streams are read apart): ZooKeeper's
		// handshakes are per connection, and an old connection's end never undoes a
		// newer one's. The ack carries all a sync needs; dropping it would leave the
		// follower waiting out InitTicks.
		if ls.phase != lDiscover && m.Epoch == n.epoch && (p.phase == pInfo || p.phase == pNone) {
			n.onAckEpoch(p, m)
		}
	case MsgAck:
		if m.Epoch == n.epoch && p.phase >= pSyncing {
			n.onAck(p, m)
		}
	case MsgRequest:
		if ls.phase == lServe && m.Epoch == n.epoch && p.phase >= pSyncing {
			n.propose(p.id, m.ReqID, m.Data)
		}
	case MsgTrunc, MsgDiff, MsgSnapChunk, MsgFetchDone:
		if ls.phase == lFetch && p == ls.source && m.Epoch == n.epoch && !ls.fetchDone {
			if err := n.recvFetch(m); err != nil {
				n.becomeLooking(fmt.Sprintf("fetch from %d: %v", p.id, err))
			}
		}
	}
}

func (n *Node) onFollowerInfo(p *peerState, m Message) {
	ls := n.ls
	if ls.phase != lDiscover && m.Epoch > n.epoch {
		// It promised a later epoch and cannot join ours: make way for a new election.
		n.becomeLooking(fmt.Sprintf("server %d accepted epoch %d, above ours %d", p.id, m.Epoch, n.epoch))
		return
	}
	if ls.phase == lAckEpoch && m.Epoch == n.epoch && !p.ours {
		// It took an epoch of this number from another leader: its ack can never count,
		// and the number is spent. Waiting would only end at InitTicks.
		n.becomeLooking(fmt.Sprintf("server %d accepted epoch %d from another leader", p.id, m.Epoch))
		return
	}
	if p == ls.source && ls.phase == lFetch {
		n.becomeLooking(fmt.Sprintf("fetch source %d restarted its handshake", p.id))
		return
	}
	if p.phase > pInfo {
		n.log.Info("follower resyncs", "peer", p.id, "phase", p.phase)
	}
	p.phase, p.accepted, p.fresh, p.acked = pInfo, m.Epoch, false, 0
	if ls.phase == lDiscover {
		n.maybeDecideEpoch()
		return
	}
	n.send(Message{Type: MsgLeaderInfo, To: p.id, Epoch: n.epoch})
}

// maybeDecideEpoch picks the new epoch once a quorum reported its accepted epoch.
func (n *Node) maybeDecideEpoch() {
	ls := n.ls
	count, top := 1, n.hs.AcceptedEpoch
	for _, p := range ls.peers {
		if p.phase >= pInfo {
			count++
			top = max(top, p.accepted)
		}
	}
	if count < n.quorum {
		return
	}
	if top == math.MaxUint32 {
		n.becomeLooking("epochs exhausted")
		return
	}
	n.epoch = top + 1
	n.setHardState(HardState{AcceptedEpoch: n.epoch, CurrentEpoch: n.hs.CurrentEpoch})
	ls.phase = lAckEpoch
	for _, p := range ls.peers {
		if p.phase == pInfo {
			n.send(Message{Type: MsgLeaderInfo, To: p.id, Epoch: n.epoch})
		}
	}
	n.log.Info("new epoch", "epoch", n.epoch, "infos", count)
}

func (n *Node) onAckEpoch(p *peerState, m Message) {
	ls := n.ls
	p.phase, p.current, p.sum = pAcked, m.CurrentEpoch, m.Summary
	if m.Fresh {
		ls.acks++
		p.fresh, p.ours, p.ackOrder = true, true, ls.acks
	}
	switch ls.phase {
	case lAckEpoch:
		n.maybeEstablishHistory()
	case lSync, lServe:
		n.syncPeer(p)
	}
}

// maybeEstablishHistory runs once a quorum (this server included, its new accepted
// epoch durable) acked the epoch: the quorum member with the latest history
// (current epoch, then last zxid) holds every committed transaction. If that is
// not this server, fetch what it is missing, else sync the followers.
func (n *Node) maybeEstablishHistory() {
	ls := n.ls
	if n.durHS.AcceptedEpoch < n.epoch || ls.acks+1 < n.quorum {
		return
	}
	var best *peerState
	better := func(p *peerState) bool {
		if best == nil {
			return p.current > n.hs.CurrentEpoch || (p.current == n.hs.CurrentEpoch && p.sum.Last > n.hist.last())
		}
		if p.current != best.current || p.sum.Last != best.sum.Last {
			return p.current > best.current || (p.current == best.current && p.sum.Last > best.sum.Last)
		}
		if n.cfg.FetchFrom == FetchHighestID {
			return p.id > best.id
		}
		return p.ackOrder < best.ackOrder
	}
	for _, p := range ls.peers {
		if p.fresh && better(p) {
			best = p
		}
	}
	if best == nil || best.sum.Last == n.hist.last() {
		n.startSync()
		return
	}
	n.log.Info("fetching history", "from", best.id, "theirLast", best.sum.Last, "last", n.hist.last())
	ls.phase, ls.source = lFetch, best
	n.send(Message{Type: MsgFetch, To: best.id, Epoch: n.epoch, Summary: n.hist.summary()})
}

func (n *Node) recvFetch(m Message) error {
	switch m.Type {
	case MsgTrunc:
		return n.recvTrunc(m)
	case MsgDiff:
		return n.recvEntries(m)
	case MsgSnapChunk:
		return n.recvChunk(m)
	}
	// MsgFetchDone
	if n.snapIn != nil || n.hist.last() != m.Zxid {
		return fmt.Errorf("FETCHDONE at %v, log ends at %v", m.Zxid, n.hist.last())
	}
	n.ls.fetchDone, n.ls.fetchNeed = true, n.opSeq
	if n.durSeq >= n.ls.fetchNeed {
		n.startSync()
	}
	return nil
}

// startSync begins phase 2 with this server's (now complete) history.
func (n *Node) startSync() {
	ls := n.ls
	ls.phase = lSync
	ls.initLast = n.hist.last()
	n.setHardState(HardState{AcceptedEpoch: n.epoch, CurrentEpoch: n.epoch})
	for _, p := range ls.peers {
		if p.phase == pAcked {
			n.syncPeer(p)
		}
	}
}

func (n *Node) syncPeer(p *peerState) {
	n.sendHistory(p.id, p.sum)
	n.send(Message{Type: MsgNewLeader, To: p.id, Epoch: n.epoch, Zxid: n.hist.last()})
	p.phase = pSyncing
}

func (n *Node) onAck(p *peerState, m Message) {
	advanced := m.Zxid > p.acked && m.Zxid > n.commit // else it cannot move the commit point
	p.acked = max(p.acked, m.Zxid)
	if p.phase == pSyncing {
		advanced = true
		p.phase = pSynced
		if n.ls.phase == lServe {
			n.send(Message{Type: MsgUpToDate, To: p.id, Epoch: n.epoch, Zxid: n.commit})
		}
	}
	switch n.ls.phase {
	case lSync:
		n.maybeServe()
	case lServe:
		if advanced {
			n.maybeCommit()
		}
	}
}

// leaderDurable continues whatever waited for this server's own writes.
func (n *Node) leaderDurable() {
	ls := n.ls
	switch ls.phase {
	case lAckEpoch:
		n.maybeEstablishHistory()
	case lFetch:
		if ls.fetchDone && n.durSeq >= ls.fetchNeed {
			n.startSync()
		}
	case lSync:
		n.maybeServe()
	case lServe:
		n.maybeCommit()
	}
}

// maybeServe starts the broadcast once a quorum, this server included, holds the
// history durably under the new epoch: that history is then committed.
func (n *Node) maybeServe() {
	ls := n.ls
	if n.durHS.CurrentEpoch != n.epoch {
		return
	}
	count := 1
	for _, p := range ls.peers {
		if p.phase == pSynced {
			count++
		}
	}
	if count < n.quorum {
		return
	}
	ls.phase = lServe
	n.commit = max(n.commit, ls.initLast)
	ls.commitSent = n.commit
	for _, p := range ls.peers {
		if p.phase == pSynced {
			n.send(Message{Type: MsgUpToDate, To: p.id, Epoch: n.epoch, Zxid: n.commit})
		}
	}
	n.log.Info("serving", "epoch", n.epoch, "commit", n.commit, "synced", count)
	n.emit(Event{Type: EventSynced, Leader: n.id, Epoch: n.epoch, Zxid: n.commit})
	n.maybeCommit()
}

func (n *Node) propose(origin int, reqID uint64, data []byte) {
	ls := n.ls
	if ls.counter == math.MaxUint32 {
		n.becomeLooking("zxid counter exhausted")
		return
	}
	prev := n.hist.last()
	ls.counter++
	// One array for the history's copy and the proposals (appendEntries keeps none).
	es := []Entry{{Txn: Txn{Zxid: MakeZxid(n.epoch, ls.counter), Data: data}, Origin: origin, ReqID: reqID}}
	if err := n.appendEntries(es); err != nil {
		panic(fmt.Sprintf("zab: leader's own proposal: %v", err)) // a bug, not an input
	}
	for _, p := range ls.peers {
		if p.phase >= pSyncing {
			n.send(Message{Type: MsgProposal, To: p.id, Epoch: n.epoch, Zxid: prev, Entries: es})
		}
	}
}

// maybeCommit commits up to the highest zxid a quorum holds durably.
func (n *Node) maybeCommit() {
	// The commit point is the highest zxid a quorum (this server included) acked:
	// step up through the acked values above it while a quorum holds the next one.
	// O(peers) per step, and a step commits at least one transaction.
	c := n.commit
	for {
		next, above := Zxid(0), 0
		consider := func(a Zxid) {
			if a > c {
				if above == 0 || a < next {
					next = a
				}
				above++
			}
		}
		consider(n.durLast)
		if n.cfg.Unsafe.SelfTwice {
			consider(n.durLast)
		}
		for _, p := range n.ls.peers {
			if p.phase == pSynced {
				consider(p.acked)
			}
		}
		if above < n.quorum {
			break
		}
		c = next // every value above c is at least next: a quorum holds it
	}
	if c <= n.commit {
		return
	}
	n.commit = c
	if !n.ls.firstCommit && c.Epoch() == n.epoch {
		n.ls.firstCommit = true
		n.emit(Event{Type: EventFirstCommit, Leader: n.id, Epoch: n.epoch, Zxid: MakeZxid(n.epoch, 1)})
	}
}

func (n *Node) commitsToSend() bool {
	return n.ls != nil && n.ls.phase == lServe && n.commit > n.ls.commitSent
}

// flushCommits sends one COMMIT per follower for everything committed since the last.
func (n *Node) flushCommits() {
	if !n.commitsToSend() {
		return
	}
	n.ls.commitSent = n.commit
	for _, p := range n.ls.peers {
		if p.phase >= pSyncing {
			n.send(Message{Type: MsgCommit, To: p.id, Epoch: n.epoch, Zxid: n.commit})
		}
	}
}
