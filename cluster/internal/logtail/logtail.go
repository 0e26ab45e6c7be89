// Package logtail keeps a flavor's servers' timelines read off their log files: it
// tails each server's log while the cluster runs, turns lines into events with the
// flavor's parser, and runs what a line starts (the poll for a new leader's first
// commit, which no flavor logs). The ZooKeeper and etcd flavors share it.
package logtail

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/polebench/polebench/event"
)

const (
	// Interval is how often the logs are read while the cluster runs.
	Interval = 5 * time.Millisecond
	// PollInterval is how often a new leader is asked whether it committed.
	PollInterval = 2 * time.Millisecond
	// PollFor is how long a leader that never commits is asked.
	PollFor = time.Minute
	// StartMarker starts the line the harness writes into a log before each start.
	StartMarker = "=== polebench:"
)

// Parse turns line n (counted from 0 over the server's events so far: the index the
// event gets) of server id's log into an event, if it is one. A non-nil then runs on
// its own goroutine once the lines read with it are kept, until Stop. Parse runs with
// the tailer's lock held, one line at a time.
type Parse func(id int, line string, n int) (e event.Event, then func(context.Context), ok bool)

// Tailer keeps the servers' timelines.
type Tailer struct {
	ids    func() []int
	path   func(id int) string
	parse  Parse
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	tailMu sync.Mutex // one reader of the logs at a time

	mu      sync.Mutex
	events  map[int][]event.Event
	offsets map[int]int64
	partial map[int]string
}

// New is a tailer of the logs of ids (at path) that parse reads; it reads on Tail
// and, after Start, every Interval.
func New(ids func() []int, path func(id int) string, parse Parse) *Tailer {
	t := &Tailer{ids: ids, path: path, parse: parse, events: map[int][]event.Event{}, offsets: map[int]int64{}, partial: map[int]string{}}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t
}

// Start tails the logs until Stop.
func (t *Tailer) Start() {
	t.wg.Go(func() {
		tick := time.NewTicker(Interval)
		defer tick.Stop()
		for {
			select {
			case <-t.ctx.Done():
				return
			case <-tick.C:
				t.Tail()
			}
		}
	})
}

// Stop ends the tailing and what the lines started, and waits for them.
func (t *Tailer) Stop() {
	t.cancel()
	t.wg.Wait()
}

// Tail reads what the logs gained since the last call.
func (t *Tailer) Tail() {
	t.tailMu.Lock()
	defer t.tailMu.Unlock()
	for _, id := range t.ids() {
		t.tailOne(id)
	}
}

func (t *Tailer) tailOne(id int) {
	f, err := os.Open(t.path(id))
	if err != nil {
		return
	}
	defer f.Close()
	t.mu.Lock()
	off := t.offsets[id]
	t.mu.Unlock()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return
	}
	b, err := io.ReadAll(bufio.NewReader(f))
	if err != nil || len(b) == 0 {
		return
	}
	t.mu.Lock()
	t.offsets[id] = off + int64(len(b))
	lines := strings.Split(t.partial[id]+string(b), "\n")
	t.partial[id] = lines[len(lines)-1]
	var thens []func(context.Context)
	for _, line := range lines[:len(lines)-1] {
		if e, then, ok := t.parse(id, line, len(t.events[id])); ok {
			t.events[id] = append(t.events[id], e)
			if then != nil {
				thens = append(thens, then)
			}
		}
	}
	t.mu.Unlock()
	for _, then := range thens {
		t.wg.Go(func() { then(t.ctx) })
	}
}

// Add keeps e, an event not read off a log.
func (t *Tailer) Add(e event.Event) {
	t.mu.Lock()
	t.events[e.Server] = append(t.events[e.Server], e)
	t.mu.Unlock()
}

// Timeline returns server id's events so far, in time order, after reading the log's
// latest lines. fix, if not nil, mends each event (by its index) before they are
// sorted, with the tailer's lock held.
func (t *Tailer) Timeline(id int, fix func(i int, e *event.Event)) []event.Event {
	t.Tail()
	t.mu.Lock()
	defer t.mu.Unlock()
	ev := slices.Clone(t.events[id])
	if fix != nil {
		for i := range ev {
			fix(i, &ev[i])
		}
	}
	slices.SortStableFunc(ev, func(a, b event.Event) int { return cmp.Compare(a.TimeNS, b.TimeNS) })
	return ev
}

// MarkStart writes the line Started reads: the n-th start of server id, now.
func MarkStart(w io.Writer, n, id int) error {
	_, err := fmt.Fprintf(w, "%s start %d of p%d at %s\n", StartMarker, n, id, time.Now().Format(time.RFC3339Nano))
	return err
}

// Started is the STARTED event of a line the harness wrote before a start ("=== polebench:
// start N of pID at RFC3339Nano"), if line is one.
func Started(id int, line string) (event.Event, bool) {
	rest, ok := strings.CutPrefix(line, StartMarker)
	if !ok {
		return event.Event{}, false
	}
	i := strings.LastIndex(rest, " at ")
	if i < 0 {
		return event.Event{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(rest[i+4:]))
	if err != nil {
		return event.Event{}, false
	}
	return event.Event{TimeNS: at.UnixNano(), Server: id, Kind: event.Started}, true
}

// Answer is what one poll of a new leader found.
type Answer int

const (
	NoAnswer  Answer = iota // it did not answer (yet): ask again
	NoCommit                // it answered, with nothing of its term committed: ask again
	Committed               // done: it committed, or it no longer leads
)

// PollFirstCommit asks ask every PollInterval, for up to PollFor, until it says
// Committed. sent is when that poll was sent (the first commit's stamp: at most one
// interval late); first, that no answer came before it (a commit it shows is an upper
// bound).
func PollFirstCommit(ctx context.Context, ask func(ctx context.Context, sent time.Time, first bool) Answer) {
	ctx, cancel := context.WithTimeout(ctx, PollFor)
	defer cancel()
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	first := true
	for {
		switch ask(ctx, time.Now(), first) {
		case Committed:
			return
		case NoCommit:
			first = false
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
