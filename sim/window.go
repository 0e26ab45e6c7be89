package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/record"
)

// A run on several cores (Config.Workers): each DC is a partition, a copy of the Sim
// with its own clock, event queue, requests and records, that its servers, clients and
// links' arrivals run in. Nothing a partition does reaches another in less than the
// lookahead, the least delay of a link between two DCs (netem.Link.MinDelay) plus the
// hop to the receiver's loop, so the partitions run apart through windows that long,
// on the cores there are, and meet at each window's end: what one sent another is
// handed over then. The order of events (at, pushed, key) is one loop's, and every
// part of it is known to the partition that schedules an event, so each partition
// steps its events as one loop would.
//
// A link's event is scheduled by its sender when the message is the only one on it,
// or else by the receiver when it takes the message before; which of the two it was
// depends on when the receiver last emptied the link (linkQueue.popAt), which the
// hand-over compares with the sending (at one instant, the keys of the events that
// emptied and sent). Records and log lines go in the order of the events that made
// them. Whatever a window cannot order as one loop would stops the windows, and the
// run is simulated again on one loop (errRedo): a sending and an emptying of one link,
// or records or log lines of two partitions, at an instant the harness scheduled
// events on (windows.rootNow); an event one partition schedules on another's within
// a window (ResetPeers); a message due before its window's end; an error.

// windows is a windowed run's partitions and the goroutines that step them.
type windows struct {
	root      *Sim
	ps        []*Sim
	lookahead int64
	n         uint64 // windows run
	why       string // why the run went back to one loop

	// The helpers (workers - 1 goroutines; the caller steps partitions too) spin
	// between windows: a window is often a few µs of work, less than waking a
	// parked goroutine takes.
	helpers int
	gen     atomic.Uint64 // bumped to start a window
	next    atomic.Int64  // the next partition to step
	done    atomic.Int64  // partitions stepped
	stop    atomic.Bool
	end     int64 // the window's last instant
	// stall is how long a window may make no progress before the run fails (Config.Stall).
	stall time.Duration
	// yields, in tests, makes every step of the hand-off yield the processor; lose,
	// in tests, is a window whose first partition's count is lost (a planted hang).
	yields bool
	lose   uint64
	// rootNow is the last instant the harness scheduled an event on: it steps them
	// after the instant's others, and what they schedule at once for the same
	// instant orders before them, not after.
	rootNow int64
}

// errRedo stops a windowed run that must be simulated on one loop.
var errRedo = errors.New("sim: the windows cannot order this run as one loop does")

// handover is a message sent on another partition's link in a window: the receiver
// gets it at the window's end.
type handover struct {
	link int
	seq  uint64 // the sender's counter, taken at the sending
	sent int64
	// the event that sent it
	pushed int64
	key    uint64
	d      delivery
}

// logged is a log line held until the run ends, so that a run simulated again logs once.
type logged struct {
	h slog.Handler
	r slog.Record
}

// partition splits s into its DCs when the config asks for workers and the layout
// allows it. It runs after the servers are made and before they boot.
func (s *Sim) partition() {
	if s.cfg.Workers <= 1 || s.parts < 2 || s.parts >= root {
		return
	}
	la := s.lookahead()
	if la <= 0 {
		return
	}
	w := &windows{root: s, lookahead: la, helpers: min(s.cfg.Workers, s.parts) - 1, stall: s.cfg.Stall, yields: s.cfg.yields, lose: s.cfg.loseWindow}
	s.win, s.idx = w, root
	s.log = slog.New(&holdLog{s: s, next: s.cfg.Log.Handler()})
	for i := range s.parts {
		p := new(Sim)
		*p = *s
		p.idx, p.cur = i, root
		p.queue, p.harness, p.reqs, p.open, p.value, p.err, p.count = nil, nil, nil, 0, nil, nil, 0
		p.outbox, p.hrecs, p.hlogs, p.held = nil, nil, nil, nil
		p.log = slog.New(&holdLog{s: p, next: s.cfg.Log.Handler()})
		w.ps = append(w.ps, p)
	}
	for _, v := range s.servers[1:] {
		v.s = w.ps[v.part]
	}
	n := len(s.servers) - 1
	for i := range s.lq {
		if s.lq[i].fire != nil {
			s.lq[i].fire = w.ps[s.servers[i/2%(n+1)].part].arriveFn(i)
		}
	}
	for range w.helpers {
		go w.help()
	}
}

// lookahead is the least time between a partition's sending and another's acting on
// it: the least delay of a link between two DCs, at any step of its schedule, plus
// the hop to the receiver's loop.
func (s *Sim) lookahead() int64 {
	least := int64(math.MaxInt64)
	check := func(l netem.Link) {
		if s.servers[l.From].part == s.servers[l.To].part {
			return
		}
		d, err := l.MinDelay()
		if err != nil {
			least = 0
			return
		}
		least = min(least, int64(d)+int64(s.cfg.HopDelay))
	}
	for _, l := range s.cfg.Plan.Links {
		check(l)
	}
	for _, sc := range s.cfg.Plan.Schedules {
		for _, st := range sc.Steps {
			check(st.Link)
		}
	}
	return least
}

// part is partition i, or s itself on one loop.
func (s *Sim) part(i int) *Sim {
	if s.win == nil {
		return s
	}
	return s.win.ps[i]
}

// top is the run's root Sim (the harness's).
func (s *Sim) top() *Sim {
	if s.win == nil {
		return s
	}
	return s.win.root
}

// inWindow says s is a partition stepping its events (not the harness between windows).
func (s *Sim) inWindow() bool { return s.win != nil && s.cur != root }

// redo gives up the windows: the run will be simulated on one loop.
func (s *Sim) redo(why string) {
	if s.err == nil {
		s.err = errRedo
		s.redoWhy = why
	}
}

// queueOf is the queue of partition part's events, as s schedules them.
func (s *Sim) queueOf(part int) *eventQueue {
	switch {
	case s.win == nil:
		return &s.queue
	case s.cur == root:
		s.win.rootNow = s.now
		return &s.win.ps[part].queue
	case part == s.idx:
		return &s.queue
	}
	s.redo("an event scheduled on another partition within a window")
	return &s.queue
}

// handOver puts d, sent by this partition on another's link i, in its outbox.
func (s *Sim) handOver(i int, seq uint64, d *delivery) {
	if d.at <= s.win.end {
		s.redo("a message due within its window")
	}
	s.outbox = append(s.outbox, handover{link: i, seq: seq, sent: s.now, pushed: s.curPushed, key: s.curKey, d: *d})
}

// runWindows is runUntil for a windowed run.
func (s *Sim) runWindows(ctx context.Context, t int64) error {
	w := s.win
	for s.err == nil {
		if err := ctx.Err(); err != nil {
			return err
		}
		next := int64(math.MaxInt64)
		for _, p := range w.ps {
			if len(p.queue) > 0 {
				next = min(next, p.queue[0].at)
			}
		}
		if next > t {
			break
		}
		w.end = min(next+w.lookahead-1, t)
		for _, p := range w.ps {
			p.cur = p.idx
		}
		w.n++
		if err := w.step(); err != nil {
			s.err = err
			return err
		}
		w.meet()
		due := false
		for _, p := range w.ps {
			due = due || p.marksDue
			p.marksDue = false
		}
		if due {
			s.pruneMarks(false)
		}
	}
	for _, p := range w.ps {
		p.now, p.cur = max(p.now, t), root
	}
	s.now = max(s.now, t)
	return s.err
}

// step steps every partition through the window, on the helpers and this goroutine.
//
// done is reset before next: a helper may still be in the last window's work loop,
// having counted its partition and not yet seen that none is left. Once next is reset
// it takes this window's first partition (w.end and the partitions' cur are set by
// then, so that is sound work), and its count must land after done's reset. In the
// other order a helper preempted between the two resets stepped a partition whose
// count the reset then erased: done never reached the partitions, and the
// coordinator spun forever (the hang runs on several workers showed).
func (w *windows) step() error {
	w.done.Store(0)
	w.yield()
	w.next.Store(0)
	w.gen.Add(1)
	w.work()
	return w.wait()
}

func (w *windows) work() {
	for {
		w.yield()
		i := w.next.Add(1) - 1
		if i >= int64(len(w.ps)) {
			return
		}
		w.yield()
		w.ps[i].stepTo(w.end)
		w.yield()
		if w.n != w.lose || i != 0 {
			w.done.Add(1)
		}
	}
}

// wait spins until every partition of the window is stepped, or fails when none was
// for w.stall of wall time: a lost hand-off must end the run with its state, not spin.
func (w *windows) wait() error {
	var since time.Time
	last := int64(-1)
	for spins := 0; ; spins++ {
		d := w.done.Load()
		if d >= int64(len(w.ps)) {
			return nil
		}
		runtime.Gosched()
		if spins&0x3ff != 0 {
			continue
		}
		if d != last {
			last, since = d, time.Now()
			continue
		}
		if time.Since(since) > w.stall {
			return w.stuck(time.Since(since))
		}
	}
}

// stuck is the error of a window that made no progress for d.
func (w *windows) stuck(d time.Duration) error {
	var b strings.Builder
	fmt.Fprintf(&b, "sim: window %d (to %v) made no progress in %v of wall time: gen %d, next %d, done %d of %d partitions, %d helpers",
		w.n, time.Duration(w.end-w.root.start), d.Round(time.Millisecond), w.gen.Load(), w.next.Load(), w.done.Load(), len(w.ps), w.helpers)
	for i, p := range w.ps {
		due := "none"
		if len(p.queue) > 0 {
			due = time.Duration(p.queue[0].at - w.root.start).String()
		}
		fmt.Fprintf(&b, "; partition %d at %v, %d events queued, next due %s", i, time.Duration(p.now-w.root.start), len(p.queue), due)
	}
	return errors.New(b.String())
}

func (w *windows) help() {
	last := w.gen.Load()
	for !w.stop.Load() {
		w.yield()
		g := w.gen.Load()
		if g == last {
			runtime.Gosched()
			continue
		}
		last = g
		w.work()
	}
}

// yield, in tests, hands the processor over at every step of the hand-off, so that
// the stress test (TestWindowsHandOff) tries the interleavings a preempted helper has.
func (w *windows) yield() {
	if w.yields {
		runtime.Gosched()
	}
}

// close stops the helpers.
func (w *windows) close() {
	if w != nil {
		w.stop.Store(true)
	}
}

// stepTo steps the partition's events up to end.
func (p *Sim) stepTo(end int64) {
	for len(p.queue) > 0 && p.queue[0].at <= end && p.err == nil {
		if p.count&0xfff == 0 {
			if p.err = p.progress(); p.err != nil {
				return
			}
		}
		e := p.queue.pop()
		p.now, p.curPushed, p.curKey = e.at, e.pushed, e.key
		p.count++
		e.fn()
	}
}

// meet ends a window: the partitions' records and log lines join the run's in order,
// and what they sent each other is handed over.
func (w *windows) meet() {
	s := w.root
	for _, p := range w.ps {
		if errors.Is(p.err, errStall) {
			s.err = p.err
			return
		}
		if p.err != nil {
			s.err = errRedo
			w.why = cmp.Or(p.redoWhy, "an error: "+p.err.Error())
			return
		}
	}
	var recs []held[record.Record]
	var logs []held[logged]
	for _, p := range w.ps {
		recs = append(recs, p.hrecs...)
		logs = append(logs, p.hlogs...)
		p.hrecs, p.hlogs = p.hrecs[:0], p.hlogs[:0]
	}
	if !inOrder(recs, w.rootNow) || !inOrder(logs, w.rootNow) {
		s.err = errRedo
		w.why = "records or log lines of two partitions at an instant the harness scheduled events on"
		return
	}
	for _, r := range recs {
		s.harness = append(s.harness, r.v)
	}
	for _, l := range logs {
		w.logs(l.v)
	}
	for _, p := range w.ps {
		for i := range p.outbox {
			h := &p.outbox[i]
			q := &s.lq[h.link]
			if q.size == 0 {
				// The link was empty at the sending if the receiver emptied it
				// before: the sender scheduled its event. If the receiver emptied it
				// after, it had this message behind the one it took, and scheduled it.
				to := h.d.to.part
				e := simEvent{at: h.d.at, pushed: h.sent, key: eventKey(p.idx, to, h.seq), fn: q.fire}
				popped := q.popAt > h.sent
				if q.popAt == h.sent {
					// One instant: the events that emptied and sent go in their order,
					// but for an instant whose events the harness scheduled on it.
					if h.sent == w.rootNow {
						s.err = errRedo
						w.why = "a link sent on and emptied at an instant the harness scheduled events on"
						return
					}
					popped = q.popPushed > h.pushed || q.popPushed == h.pushed && q.popKey > h.key
				}
				if popped {
					e = simEvent{at: h.d.at, pushed: q.popAt, key: eventKey(to, to, q.popSeq), fn: q.fire}
				}
				w.ps[to].queue.push(e)
			}
			q.push(&h.d)
		}
		clear(p.outbox)
		p.outbox = p.outbox[:0]
	}
}

// logs keeps a log line until the run ends.
func (w *windows) logs(l logged) { w.root.held = append(w.root.held, l) }

// held is a record or a log line of a partition, with the event that made it.
type held[T any] struct {
	at, pushed int64
	key        uint64
	v          T
}

// inOrder sorts xs as one loop steps the events that made them, each event's in its
// own order, and says whether it could: no two partitions have one at rootNow, whose
// events the harness scheduled (see windows.rootNow).
func inOrder[T any](xs []held[T], rootNow int64) bool {
	slices.SortStableFunc(xs, func(a, b held[T]) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.pushed, b.pushed), cmp.Compare(a.key, b.key))
	})
	for i := 1; i < len(xs); i++ {
		if xs[i].at == rootNow && xs[i-1].at == rootNow && keyPart(xs[i].key) != keyPart(xs[i-1].key) {
			return false
		}
	}
	return true
}

// record adds a harness record (a server serving again), which a partition holds
// until its window ends.
func (s *Sim) record(r record.Record) {
	if s.inWindow() {
		s.hrecs = append(s.hrecs, held[record.Record]{s.now, s.curPushed, s.curKey, r})
		return
	}
	t := s.top()
	t.harness = append(t.harness, r)
}

// holdLog stamps log lines with s's virtual time and, in a windowed run, holds them
// until the run ends (a partition's until its window ends, to be put in order).
type holdLog struct {
	s    *Sim
	next slog.Handler
}

func (h *holdLog) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *holdLog) Handle(_ context.Context, r slog.Record) error {
	s := h.s
	r.Time = s.wall()
	l := logged{h.next, r.Clone()}
	if s.inWindow() {
		s.hlogs = append(s.hlogs, held[logged]{s.now, s.curPushed, s.curKey, l})
	} else {
		s.win.logs(l)
	}
	return nil
}

func (h *holdLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &holdLog{h.s, h.next.WithAttrs(as)}
}

func (h *holdLog) WithGroup(name string) slog.Handler {
	return &holdLog{h.s, h.next.WithGroup(name)}
}

// flushLogs writes the lines a windowed run held.
func (s *Sim) flushLogs(ctx context.Context) {
	for _, l := range s.held {
		l.h.Handle(ctx, l.r)
	}
	s.held = nil
}
