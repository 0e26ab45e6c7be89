package etcd

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/polebench/polebench/cluster/internal/logtail"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/zxid"
)

// A member's timeline, in the event kinds poled records, so that election_ms and
// recovery_ms mean what they mean for the other flavors. Read off etcd's raft log
// lines (zap's JSON, stamped in ms):
//
//   - STARTED: the harness's marker before each start;
//   - ELECTION: "[logterm: T, index: N] sent MsgVote request" (its first after it became
//     a candidate), Zxid = T<<32 | N: how up to date its log is, ordered as Raft's vote
//     rule orders logs; Epoch the term it stands in. With pre-vote, the first MsgPreVote
//     request after it became a pre-candidate, its timer having fired as a candidate's
//     does (Epoch the term it asks for); the candidacy a won pre-vote leads to is the
//     same campaign, not a second ELECTION;
//   - LEADING: "became leader at term T" (Epoch = T);
//   - FOLLOWING: "raft.node: X elected leader Y at term T" with Y another member;
//   - LOOKING: "raft.node: X lost leader Y at term T";
//   - FIRST_COMMIT: etcd logs no commit, so once a member leads the watcher polls its
//     Status every logtail.PollInterval until its committed index passes its term's first
//     entry (the empty entry a Raft leader appends at N+1): the first entry of its
//     term after that one, a client's write (or a restarted member's attributes).
//     Stamped with the send time of that poll, at most one interval (plus the answer)
//     late; a poll that sees it at its first answer says so in Reason.

var (
	leaderRe = regexp.MustCompile(`^[0-9a-f]+ became leader at term (\d+)$`)
	voteRe   = regexp.MustCompile(`^[0-9a-f]+ \[logterm: (\d+), index: (\d+)\] sent (MsgVote|MsgPreVote) request to [0-9a-f]+ at term (\d+)$`)
	electRe  = regexp.MustCompile(`^raft\.node: ([0-9a-f]+) elected leader ([0-9a-f]+) at term (\d+)$`)
	lostRe   = regexp.MustCompile(`^raft\.node: [0-9a-f]+ lost leader ([0-9a-f]+) at term (\d+)$`)
	candRe   = regexp.MustCompile(`^[0-9a-f]+ became candidate at term (\d+)$`)
	preRe    = regexp.MustCompile(`^[0-9a-f]+ became pre-candidate at term (\d+)$`)
	follRe   = regexp.MustCompile(`^[0-9a-f]+ became follower at term (\d+)$`)
)

// logLine is what a zap JSON line of etcd has that the timeline reads.
type logLine struct {
	TS  string `json:"ts"`
	Msg string `json:"msg"`
}

// parser turns one member's log into events; it keeps whether the member stands as a
// candidate (its next vote request is its ELECTION) and whether as a pre-candidate
// (its candidacy, if it wins the pre-vote, continues that campaign).
type parser struct {
	id        int
	candidate bool
	pre       bool
	lastIndex uint64 // the last log index its vote requests named
	// leader is the etcd id of the leader the last FOLLOWING names: the watcher turns
	// it into a server id once it knows the members' ids.
	leader uint64
}

func (p *parser) line(s string) (event.Event, bool) {
	if e, ok := logtail.Started(p.id, s); ok {
		p.candidate = false
		return e, true
	}
	if !strings.HasPrefix(s, "{") {
		return event.Event{}, false
	}
	var l logLine
	if err := json.Unmarshal([]byte(s), &l); err != nil || l.Msg == "" {
		return event.Event{}, false
	}
	t, err := time.Parse("2006-01-02T15:04:05.999Z07:00", l.TS)
	if err != nil {
		return event.Event{}, false
	}
	e := event.Event{TimeNS: t.UnixNano(), Server: p.id}
	num := func(s string) uint64 { n, _ := strconv.ParseUint(s, 10, 64); return n }
	switch m := l.Msg; {
	case preRe.MatchString(m):
		p.candidate, p.pre = true, true
		return event.Event{}, false
	case candRe.MatchString(m):
		p.candidate, p.pre = !p.pre, false
		return event.Event{}, false
	case follRe.MatchString(m):
		p.candidate, p.pre = false, false
		return event.Event{}, false
	case voteRe.MatchString(m):
		g := voteRe.FindStringSubmatch(m)
		p.lastIndex = num(g[2])
		if !p.candidate {
			return event.Event{}, false
		}
		p.candidate = false
		term := num(g[4])
		if g[3] == "MsgPreVote" {
			term++ // a pre-candidate asks at its term for the next
		}
		e.Kind, e.Epoch, e.Zxid = event.Election, zxid.Epoch(term), zxid.Zxid(num(g[1])<<32|num(g[2]))
	case leaderRe.MatchString(m):
		e.Kind, e.Leader, e.Epoch = event.Leading, p.id, zxid.Epoch(num(leaderRe.FindStringSubmatch(m)[1]))
	case electRe.MatchString(m):
		g := electRe.FindStringSubmatch(m)
		if g[1] == g[2] {
			return event.Event{}, false // its LEADING says it
		}
		p.leader, _ = strconv.ParseUint(g[2], 16, 64)
		e.Kind, e.Epoch = event.Following, zxid.Epoch(num(g[3]))
	case lostRe.MatchString(m):
		e.Kind, e.Epoch, e.Reason = event.Looking, zxid.Epoch(num(lostRe.FindStringSubmatch(m)[2])), "lost its leader"
	default:
		return event.Event{}, false
	}
	return e, true
}

// watcher keeps every member's timeline: it tails the logs and, after each LEADING,
// polls the leader for its first commit.
type watcher struct {
	*logtail.Tailer
	c *Cluster
	// parsers and leaders are the tailer's: used with its lock held.
	parsers map[int]*parser
	leaders map[int]map[int]uint64 // server -> index of its FOLLOWING event -> the leader's etcd id

	mu     sync.Mutex
	byEtcd map[uint64]int
}

func newWatcher(c *Cluster) *watcher {
	w := &watcher{c: c, parsers: map[int]*parser{}, leaders: map[int]map[int]uint64{}}
	for _, id := range c.ids() {
		w.parsers[id] = &parser{id: id}
		w.leaders[id] = map[int]uint64{}
	}
	w.Tailer = logtail.New(c.ids, func(id int) string { return c.members[id].logFile }, w.parse)
	return w
}

func (w *watcher) parse(id int, line string, n int) (event.Event, func(context.Context), bool) {
	p := w.parsers[id]
	e, ok := p.line(line)
	switch {
	case ok && e.Kind == event.Following:
		w.leaders[id][n] = p.leader
	case ok && e.Kind == event.Leading:
		last := p.lastIndex
		return e, func(ctx context.Context) {
			logtail.PollFirstCommit(ctx, func(ctx context.Context, sent time.Time, first bool) logtail.Answer {
				return w.firstCommit(ctx, id, e, last, sent, first)
			})
		}, true
	}
	return e, nil, ok
}

// setIDs tells the watcher the members' etcd ids.
func (w *watcher) setIDs(m map[uint64]int) {
	w.mu.Lock()
	w.byEtcd = m
	w.mu.Unlock()
}

// firstCommit asks member id, which began leading in term leading.Epoch with last its
// last log index then, whether its committed index passed last+1 (its term's empty
// entry), or it left the term.
func (w *watcher) firstCommit(ctx context.Context, id int, leading event.Event, last uint64, sent time.Time, first bool) logtail.Answer {
	m := w.c.members[id]
	rctx, cancel := context.WithTimeout(ctx, probeTimeout)
	st, err := m.cli.Status(rctx, "http://"+m.client)
	cancel()
	switch {
	case err != nil:
		return logtail.NoAnswer
	// Its server may not know it leads yet (etcd sets that after raft logs it).
	case st.RaftTerm > uint64(leading.Epoch) || (st.Leader != 0 && st.Leader != st.Header.MemberId):
		return logtail.Committed // it left the term before committing anything of it
	case st.RaftIndex < last+2:
		return logtail.NoCommit
	}
	e := event.Event{TimeNS: sent.UnixNano(), Server: id, Kind: event.FirstCommit, Epoch: leading.Epoch,
		Zxid: zxid.Zxid(uint64(leading.Epoch)<<32 | st.RaftIndex), Leader: id}
	if first {
		e.Reason = "the first Status answer already showed a commit: an upper bound"
	}
	w.Add(e)
	return logtail.Committed
}

// timeline returns member id's events so far, in time order, after reading the
// log's latest lines, each FOLLOWING naming its leader by server id.
func (w *watcher) timeline(id int) []event.Event {
	w.mu.Lock()
	byEtcd := w.byEtcd
	w.mu.Unlock()
	return w.Timeline(id, func(i int, e *event.Event) {
		if leader, ok := w.leaders[id][i]; ok {
			e.Leader = byEtcd[leader]
		}
	})
}
