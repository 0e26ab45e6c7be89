package etcd

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

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
//     rule orders logs; Epoch the term it stands in;
//   - LEADING: "became leader at term T" (Epoch = T);
//   - FOLLOWING: "raft.node: X elected leader Y at term T" with Y another member;
//   - LOOKING: "raft.node: X lost leader Y at term T";
//   - FIRST_COMMIT: etcd logs no commit, so once a member leads the watcher polls its
//     Status every pollInterval until its committed index passes its term's first
//     entry (the empty entry a Raft leader appends at N+1): the first entry of its
//     term after that one, a client's write (or a restarted member's attributes).
//     Stamped with the send time of that poll, at most one interval (plus the answer)
//     late; a poll that sees it at its first answer says so in Reason.

const (
	tailInterval = 5 * time.Millisecond
	pollInterval = 2 * time.Millisecond
	pollFor      = time.Minute // give up on a leader that never commits
	startMarker  = "=== polebench:"
)

var (
	leaderRe = regexp.MustCompile(`^[0-9a-f]+ became leader at term (\d+)$`)
	voteRe   = regexp.MustCompile(`^[0-9a-f]+ \[logterm: (\d+), index: (\d+)\] sent MsgVote request to [0-9a-f]+ at term (\d+)$`)
	electRe  = regexp.MustCompile(`^raft\.node: ([0-9a-f]+) elected leader ([0-9a-f]+) at term (\d+)$`)
	lostRe   = regexp.MustCompile(`^raft\.node: [0-9a-f]+ lost leader ([0-9a-f]+) at term (\d+)$`)
	candRe   = regexp.MustCompile(`^[0-9a-f]+ became candidate at term (\d+)$`)
)

// logLine is what a zap JSON line of etcd has that the timeline reads.
type logLine struct {
	TS  string `json:"ts"`
	Msg string `json:"msg"`
}

// parser turns one member's log into events; it keeps whether the member stands as a
// candidate (its next vote request is its ELECTION).
type parser struct {
	id        int
	candidate bool
	lastIndex uint64 // the last log index its vote requests named
	// leader is the etcd id of the leader the last FOLLOWING names: the watcher turns
	// it into a server id once it knows the members' ids.
	leader uint64
}

func (p *parser) line(s string) (event.Event, bool) {
	if rest, ok := strings.CutPrefix(s, startMarker); ok {
		i := strings.LastIndex(rest, " at ")
		if i < 0 {
			return event.Event{}, false
		}
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(rest[i+4:]))
		if err != nil {
			return event.Event{}, false
		}
		p.candidate = false
		return event.Event{TimeNS: t.UnixNano(), Server: p.id, Kind: event.Started}, true
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
	case candRe.MatchString(m):
		p.candidate = true
		return event.Event{}, false
	case voteRe.MatchString(m):
		g := voteRe.FindStringSubmatch(m)
		p.lastIndex = num(g[2])
		if !p.candidate {
			return event.Event{}, false
		}
		p.candidate = false
		e.Kind, e.Epoch, e.Zxid = event.Election, zxid.Epoch(num(g[3])), zxid.Zxid(num(g[1])<<32|num(g[2]))
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
	c      *Cluster
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	tailMu sync.Mutex

	mu      sync.Mutex
	byEtcd  map[uint64]int
	parsers map[int]*parser
	events  map[int][]event.Event
	leaders map[int]map[int]uint64 // server -> index of its FOLLOWING event -> the leader's etcd id
	offsets map[int]int64
	partial map[int]string
}

func newWatcher(c *Cluster) *watcher {
	w := &watcher{c: c, parsers: map[int]*parser{}, events: map[int][]event.Event{}, leaders: map[int]map[int]uint64{},
		offsets: map[int]int64{}, partial: map[int]string{}}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	for _, id := range c.ids() {
		w.parsers[id] = &parser{id: id}
		w.leaders[id] = map[int]uint64{}
	}
	return w
}

// setIDs tells the watcher the members' etcd ids.
func (w *watcher) setIDs(m map[uint64]int) {
	w.mu.Lock()
	w.byEtcd = m
	w.mu.Unlock()
}

func (w *watcher) start() {
	w.wg.Go(func() {
		t := time.NewTicker(tailInterval)
		defer t.Stop()
		for {
			select {
			case <-w.ctx.Done():
				return
			case <-t.C:
				w.tail()
			}
		}
	})
}

func (w *watcher) stop() {
	w.cancel()
	w.wg.Wait()
}

func (w *watcher) tail() {
	w.tailMu.Lock()
	defer w.tailMu.Unlock()
	for _, id := range w.c.ids() {
		w.tailOne(id)
	}
}

func (w *watcher) tailOne(id int) {
	f, err := os.Open(w.c.members[id].logFile)
	if err != nil {
		return
	}
	defer f.Close()
	w.mu.Lock()
	off := w.offsets[id]
	w.mu.Unlock()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return
	}
	b, err := io.ReadAll(bufio.NewReader(f))
	if err != nil || len(b) == 0 {
		return
	}
	w.mu.Lock()
	w.offsets[id] = off + int64(len(b))
	lines := strings.Split(w.partial[id]+string(b), "\n")
	w.partial[id] = lines[len(lines)-1]
	p := w.parsers[id]
	var leading []event.Event
	var indexes []uint64
	for _, line := range lines[:len(lines)-1] {
		if e, ok := p.line(line); ok {
			if e.Kind == event.Following {
				w.leaders[id][len(w.events[id])] = p.leader
			}
			w.events[id] = append(w.events[id], e)
			if e.Kind == event.Leading {
				leading, indexes = append(leading, e), append(indexes, p.lastIndex)
			}
		}
	}
	w.mu.Unlock()
	for i, e := range leading {
		w.wg.Go(func() { w.pollFirstCommit(id, e, indexes[i]) })
	}
}

func (w *watcher) add(e event.Event) {
	w.mu.Lock()
	w.events[e.Server] = append(w.events[e.Server], e)
	w.mu.Unlock()
}

// pollFirstCommit polls member id's Status after it began leading in term
// leading.Epoch with last its last log index then, until its committed index passes
// last+1 (its term's empty entry), or it leaves the term, or pollFor passes.
func (w *watcher) pollFirstCommit(id int, leading event.Event, last uint64) {
	m := w.c.members[id]
	ctx, cancel := context.WithTimeout(w.ctx, pollFor)
	defer cancel()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	first := true
	for {
		sent := time.Now()
		rctx, rcancel := context.WithTimeout(ctx, probeTimeout)
		st, err := m.cli.Status(rctx, "http://"+m.client)
		rcancel()
		if err == nil {
			// Its server may not know it leads yet (etcd sets that after raft logs it).
			if st.RaftTerm > uint64(leading.Epoch) || (st.Leader != 0 && st.Leader != st.Header.MemberId) {
				return // it left the term before committing anything of it
			}
			if st.RaftIndex >= last+2 {
				e := event.Event{TimeNS: sent.UnixNano(), Server: id, Kind: event.FirstCommit, Epoch: leading.Epoch,
					Zxid: zxid.Zxid(uint64(leading.Epoch)<<32 | st.RaftIndex), Leader: id}
				if first {
					e.Reason = "the first Status answer already showed a commit: an upper bound"
				}
				w.add(e)
				return
			}
			first = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// timeline returns member id's events so far, in time order, after reading the
// log's latest lines.
func (w *watcher) timeline(id int) []event.Event {
	w.tail()
	w.mu.Lock()
	defer w.mu.Unlock()
	ev := slices.Clone(w.events[id])
	for i, leader := range w.leaders[id] {
		ev[i].Leader = w.byEtcd[leader]
	}
	slices.SortStableFunc(ev, func(a, b event.Event) int {
		switch {
		case a.TimeNS < b.TimeNS:
			return -1
		case a.TimeNS > b.TimeNS:
			return 1
		}
		return 0
	})
	return ev
}
