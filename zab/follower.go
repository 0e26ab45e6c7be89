package zab

import "fmt"

type followerPhase uint8

const (
	fDiscover followerPhase = iota // FOLLOWERINFO sent, waiting for LEADERINFO
	fSync                          // epoch acked: receiving the leader's history (or serving a FETCH)
	fServe                         // UPTODATE received: broadcast
)

type followerState struct {
	phase       followerPhase
	start       int64
	heard       int64
	retried     int64
	newLeader   bool // NEWLEADER taken: ACK once newLeaderOp is durable
	newLeaderOp uint64
	ackSent     bool
	acked       Zxid
	// resyncReason and resyncs count the resyncs in a row for one reason without
	// reaching broadcast, so a follower cut from its leader logs it once, not at
	// every retry (a line every few milliseconds in a long sync's log, while an
	// outdated server's link was cut).
	resyncReason string
	resyncs      int
}

func (n *Node) becomeFollower(leader int) {
	n.leaveRole()
	n.role, n.leader = Following, leader
	n.log.Info("following", "leader", leader)
	n.emit(Event{Type: EventFollowing, Leader: leader})
	n.handshake()
}

// handshake (re)starts discovery with the current leader.
func (n *Node) handshake() {
	n.fs = &followerState{start: n.now, heard: n.now, retried: n.now}
	n.snapIn, n.deferred, n.epoch = nil, nil, 0
	n.send(Message{Type: MsgFollowerInfo, To: n.leader, Epoch: n.hs.AcceptedEpoch})
}

// resync drops what this follower was doing with its leader and starts again.
func (n *Node) resync(reason string) {
	again := 0
	if fs := n.fs; fs != nil && fs.phase != fServe && fs.resyncReason == reason {
		again = fs.resyncs
	}
	switch {
	case again == 0:
		n.log.Warn("resync with leader", "leader", n.leader, "reason", reason)
	case (again+1)%100 == 0:
		n.log.Warn("still resyncing with leader", "leader", n.leader, "reason", reason, "attempts", again+1)
	default:
		n.log.Debug("resync with leader", "leader", n.leader, "reason", reason, "attempts", again+1)
	}
	leader := n.leader
	n.leaveRole()
	n.role, n.leader = Following, leader
	n.handshake()
	n.fs.resyncReason, n.fs.resyncs = reason, again+1
}

func (n *Node) tickFollower() {
	fs := n.fs
	// In sync the leader may be silent for long: a leader behind its quorum is
	// fetching the history (a snapshot of 250 MB takes seconds), and the follower
	// waits as ZooKeeper's learners do, up to initLimit (InitTicks), not syncLimit.
	silence := int64(n.cfg.TimeoutTicks)
	if fs.phase == fSync && !fs.newLeader {
		silence = max(silence, int64(n.cfg.InitTicks))
	}
	switch {
	case n.now-fs.heard > silence:
		n.becomeLooking(fmt.Sprintf("leader %d silent for %d ticks", n.leader, n.now-fs.heard))
	case n.cfg.InitTicks > 0 && fs.phase != fServe && n.now-fs.start > int64(n.cfg.InitTicks):
		n.initLimitExceeded("sync exceeded InitTicks", n.leader, fs.start)
	case fs.phase == fDiscover && n.now-fs.retried >= int64(n.cfg.RetryTicks):
		fs.retried = n.now
		n.send(Message{Type: MsgFollowerInfo, To: n.leader, Epoch: n.hs.AcceptedEpoch})
	}
}

func (n *Node) stepFollower(m Message) {
	fs := n.fs
	fs.heard = n.now
	if fs.phase == fDiscover {
		switch m.Type {
		case MsgLeaderInfo:
			n.onLeaderInfo(m)
		case MsgPing:
			n.send(Message{Type: MsgPong, To: n.leader})
		}
		return
	}
	if m.Epoch != n.epoch {
		if m.Type != MsgLeaderInfo { // a LEADERINFO answering a retried FOLLOWERINFO is stale, not news
			n.resync(fmt.Sprintf("leader moved from epoch %d to %d", n.epoch, m.Epoch))
		}
		return
	}
	var err error
	switch m.Type {
	case MsgPing:
		n.send(Message{Type: MsgPong, To: n.leader, Epoch: n.epoch})
		if fs.newLeader {
			if m.Zxid > n.hist.last() {
				// Everything committed was sent before this ping: some of it was lost.
				err = fmt.Errorf("leader committed %v, log ends at %v", m.Zxid, n.hist.last())
				break
			}
			n.commit = max(n.commit, m.Zxid)
		}
	case MsgTrunc, MsgDiff, MsgSnapChunk, MsgFetch:
		if fs.phase != fSync || fs.newLeader {
			err = fmt.Errorf("%v after NEWLEADER", m.Type)
			break
		}
		switch m.Type {
		case MsgTrunc:
			err = n.recvTrunc(m)
		case MsgDiff:
			err = n.recvEntries(m)
		case MsgSnapChunk:
			err = n.recvChunk(m)
			n.send(Message{Type: MsgPong, To: n.leader, Epoch: n.epoch}) // a long transfer must not look like silence
		case MsgFetch:
			n.sendHistory(n.leader, m.Summary)
			n.send(Message{Type: MsgFetchDone, To: n.leader, Epoch: n.epoch, Zxid: n.hist.last()})
		}
	case MsgNewLeader:
		switch {
		case fs.newLeader:
			err = fmt.Errorf("second NEWLEADER")
		case n.snapIn != nil || n.hist.last() != m.Zxid:
			err = fmt.Errorf("NEWLEADER at %v, log ends at %v", m.Zxid, n.hist.last())
		default:
			n.setHardState(HardState{AcceptedEpoch: n.hs.AcceptedEpoch, CurrentEpoch: n.epoch})
			fs.newLeader, fs.newLeaderOp = true, n.opSeq
		}
	case MsgProposal, MsgCommit, MsgUpToDate:
		if !fs.newLeader {
			err = fmt.Errorf("%v before NEWLEADER", m.Type)
			break
		}
		switch m.Type {
		case MsgProposal:
			err = n.recvEntries(m)
			if err == nil && n.cfg.Unsafe.CommitOnReceipt {
				n.commit = max(n.commit, n.hist.last())
			}
			if err == nil && n.cfg.Unsafe.AckBeforeDurable {
				n.maybeAck()
			}
		case MsgCommit:
			n.commit = max(n.commit, m.Zxid)
		case MsgUpToDate:
			n.commit = max(n.commit, m.Zxid)
			if fs.phase == fSync {
				fs.phase = fServe
				n.log.Info("synced", "leader", n.leader, "epoch", n.epoch, "commit", n.commit)
				n.emit(Event{Type: EventSynced, Leader: n.leader, Epoch: n.epoch, Zxid: n.commit})
			}
		}
	}
	if err != nil {
		n.resync(err.Error())
	}
}

func (n *Node) onLeaderInfo(m Message) {
	if m.Epoch < n.hs.AcceptedEpoch {
		n.becomeLooking(fmt.Sprintf("leader %d proposes epoch %d, below accepted %d", n.leader, m.Epoch, n.hs.AcceptedEpoch))
		return
	}
	fresh := m.Epoch > n.hs.AcceptedEpoch || n.cfg.Unsafe.ReackEpoch && m.Epoch == n.hs.AcceptedEpoch
	if fresh {
		n.setHardState(HardState{AcceptedEpoch: m.Epoch, CurrentEpoch: n.hs.CurrentEpoch})
	}
	n.epoch = m.Epoch
	n.fs.phase = fSync
	n.sendDurable(Message{Type: MsgAckEpoch, To: n.leader, Epoch: m.Epoch, CurrentEpoch: n.hs.CurrentEpoch,
		Fresh: fresh, Summary: n.hist.summary()})
}

// maybeAck acknowledges, once durable, NEWLEADER and then the proposals logged since.
func (n *Node) maybeAck() {
	fs := n.fs
	last := n.durLast
	if n.cfg.Unsafe.AckBeforeDurable {
		last = n.hist.last()
	}
	if !fs.newLeader || n.durSeq < fs.newLeaderOp || (fs.ackSent && last <= fs.acked) {
		return
	}
	fs.ackSent, fs.acked = true, last
	n.send(Message{Type: MsgAck, To: n.leader, Epoch: n.epoch, Zxid: last})
}
