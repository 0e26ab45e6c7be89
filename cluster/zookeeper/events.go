package zookeeper

import (
	"bufio"
	"context"
	"io"
	"net"
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

// A ZooKeeper server's timeline, in the event kinds poled records, so that
// election_ms and recovery_ms mean the same on both flavors:
//
//   - STARTED: the harness's marker before each start of the JVM;
//   - LOOKING, ELECTION (with the zxid it proposes: "New election. My id = N,
//     proposed zxid=0x..."), LEADING, FOLLOWING: QuorumPeer's and
//     FastLeaderElection's log lines, stamped by ZooKeeper's logger in ms;
//   - SYNCED: the leader's "Have quorum of supporters ... setting last processed
//     zxid" (a quorum is synced; its epoch), a follower's "Peer state changed:
//     following - broadcast";
//   - FIRST_COMMIT: ZooKeeper logs no commit, so once a server logs LEADING the
//     watcher polls its srvr every pollInterval until the Zxid line shows a
//     transaction of the leader's new epoch; the event is stamped with the send
//     time of that poll, so it is at most one interval (plus srvr's answer) late.
//     A poll that sees a commit already at its first answer says so in Reason.
//
// The watcher reads the logs every tailInterval while the cluster runs.

const (
	tailInterval = 5 * time.Millisecond
	pollInterval = 2 * time.Millisecond
	pollFor      = time.Minute // give up on a leader that never commits
	startMarker  = "=== polebench:"
	logTimeJava  = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX" // slf4j-simple's dateTimeFormat
	logTimeGo    = "2006-01-02T15:04:05.000Z07:00"
)

var (
	electionRe = regexp.MustCompile(`New election\. My id = (\d+), proposed zxid=0x([0-9a-fA-F]+)`)
	quorumRe   = regexp.MustCompile(`Have quorum of supporters.*setting last processed zxid: 0x([0-9a-fA-F]+)`)
	zxidRe     = regexp.MustCompile(`(?m)^Zxid: 0x([0-9a-fA-F]+)`)
)

// parseLine turns one log line of server id into an event, if it is one.
func parseLine(id int, line string) (event.Event, bool) {
	if rest, ok := strings.CutPrefix(line, startMarker); ok {
		// "=== polebench: start N of pID at RFC3339Nano"
		i := strings.LastIndex(rest, " at ")
		if i < 0 {
			return event.Event{}, false
		}
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(rest[i+4:]))
		if err != nil {
			return event.Event{}, false
		}
		return event.Event{TimeNS: t.UnixNano(), Server: id, Kind: event.Started}, true
	}
	ts, rest, ok := strings.Cut(line, " ")
	if !ok {
		return event.Event{}, false
	}
	t, err := time.Parse(logTimeGo, ts)
	if err != nil {
		return event.Event{}, false
	}
	_, msg, ok := strings.Cut(rest, " - ")
	if !ok {
		return event.Event{}, false
	}
	e := event.Event{TimeNS: t.UnixNano(), Server: id}
	switch {
	case msg == "LOOKING" && strings.Contains(rest, ".QuorumPeer "):
		e.Kind = event.Looking
	case msg == "LEADING" && strings.Contains(rest, ".QuorumPeer "):
		e.Kind, e.Leader = event.Leading, id
	case msg == "FOLLOWING" && strings.Contains(rest, ".QuorumPeer "):
		e.Kind = event.Following
	case msg == "Peer state changed: following - broadcast":
		e.Kind = event.Synced
	default:
		if m := electionRe.FindStringSubmatch(msg); m != nil {
			e.Kind = event.Election
			z, _ := strconv.ParseUint(m[2], 16, 64)
			e.Zxid = zxid.Zxid(z)
		} else if m := quorumRe.FindStringSubmatch(msg); m != nil {
			z, _ := strconv.ParseUint(m[1], 16, 64)
			e.Kind, e.Leader, e.Epoch = event.Synced, id, zxid.Zxid(z).Epoch()
		} else {
			return event.Event{}, false
		}
	}
	return e, true
}

// watcher keeps every server's timeline: it tails the logs and, after each LEADING,
// polls the leader for its first commit.
type watcher struct {
	e      *ensemble
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	tailMu sync.Mutex // one reader of the logs at a time

	mu      sync.Mutex
	events  map[int][]event.Event
	offsets map[int]int64
	partial map[int]string
}

func newWatcher(e *ensemble) *watcher {
	w := &watcher{e: e, events: map[int][]event.Event{}, offsets: map[int]int64{}, partial: map[int]string{}}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	return w
}

// start tails the logs until stop.
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

// tail reads what the logs gained since the last call.
func (w *watcher) tail() {
	w.tailMu.Lock()
	defer w.tailMu.Unlock()
	for _, id := range w.e.ids() {
		w.tailOne(id)
	}
}

func (w *watcher) tailOne(id int) {
	f, err := os.Open(w.e.logFile(id))
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
	text := w.partial[id] + string(b)
	lines := strings.Split(text, "\n")
	w.partial[id] = lines[len(lines)-1]
	var leading []event.Event
	for _, line := range lines[:len(lines)-1] {
		if e, ok := parseLine(id, line); ok {
			w.events[id] = append(w.events[id], e)
			if e.Kind == event.Leading {
				leading = append(leading, e)
			}
		}
	}
	w.mu.Unlock()
	for _, e := range leading {
		w.wg.Go(func() { w.pollFirstCommit(id, e) })
	}
}

func (w *watcher) add(e event.Event) {
	w.mu.Lock()
	w.events[e.Server] = append(w.events[e.Server], e)
	w.mu.Unlock()
}

// pollFirstCommit polls server id's srvr after it logged leading until a transaction
// of its new epoch shows, or it stops leading, or pollFor passes.
func (w *watcher) pollFirstCommit(id int, leading event.Event) {
	addr := w.e.addrs[id].client()
	ctx, cancel := context.WithTimeout(w.ctx, pollFor)
	defer cancel()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	first := true
	for {
		sent := time.Now()
		out, err := fourLetter(ctx, addr, "srvr")
		if m := zxidRe.FindStringSubmatch(out); err == nil && m != nil {
			if !strings.Contains(out, "Mode: leader") {
				return // it lost the leadership before committing anything
			}
			z, _ := strconv.ParseUint(m[1], 16, 64)
			if z&0xffffffff != 0 {
				e := event.Event{TimeNS: sent.UnixNano(), Server: id, Kind: event.FirstCommit, Epoch: zxid.Zxid(z).Epoch(), Zxid: zxid.Zxid(z), Leader: id}
				if first {
					e.Reason = "the first srvr answer already showed a commit: an upper bound"
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

// timeline returns server id's events so far, in time order, after reading the log's
// latest lines.
func (w *watcher) timeline(id int) []event.Event {
	w.tail()
	w.mu.Lock()
	defer w.mu.Unlock()
	ev := slices.Clone(w.events[id])
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

// fourLetter sends a four-letter word and returns the whole answer.
func fourLetter(ctx context.Context, addr, word string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}
