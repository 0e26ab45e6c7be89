package netem

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/polebench/polebench/hiccup"
)

// A user-space link that behaves like a wire: the sender holds each message until the
// link's window lets it depart, then hands it over stamped with the instant the
// network delivers it; the receiver holds it until then. What has departed is on the
// wire and survives the sender's death (a killed process's packets already in a kernel
// qdisc are delivered too); what has not dies with the sender, as the unsent part of a
// TCP send buffer does; what arrives for a dead receiver is lost. Sender and receiver share the host's monotonic clock, which every
// process, network namespace and container of one kernel reads alike.

// LinkLateness is how late this process's user-space links (transport's stamped
// streams, Proxy) woke to deliver against the arrival their delay line scheduled, or
// against the end of the previous delivery when that came later: the timer's wake and
// the goroutine's wait for a CPU, the host's, and not a receiver that had not taken the
// previous message yet (the system's own backpressure: a server loading a snapshot
// holds its links for seconds). A run's host sampler takes it every period
// (hiccup.HostSampler.Links).
var LinkLateness = new(hiccup.Lateness)

// Now is the host's monotonic clock (CLOCK_MONOTONIC) in nanoseconds. Go's own
// monotonic clock is CLOCK_MONOTONIC read through the vDSO, so Now is that reading
// plus one offset measured at the first call: no system call per reading.
func Now() int64 { return At(time.Now()) }

// At is the Now instant of t, a time.Time that carries Go's monotonic reading (as
// time.Now's do): exact, with no second reading of any clock.
func At(t time.Time) int64 {
	b := clockBase()
	return b.ns + int64(t.Sub(b.t))
}

// clockBase pairs a Go time with a CLOCK_MONOTONIC reading, taking the pair read
// closest together of a few tries (the error is half their gap: tens of ns).
var clockBase = sync.OnceValue(func() (best struct {
	t  time.Time
	ns int64
}) {
	gap := time.Duration(1 << 62)
	for range 8 {
		t1 := time.Now()
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			panic(fmt.Sprintf("clock_gettime(CLOCK_MONOTONIC): %v", err)) // cannot fail on Linux
		}
		t2 := time.Now()
		if g := t2.Sub(t1); g < gap {
			gap = g
			best.t, best.ns = t1.Add(g/2), ts.Nano()
		}
	}
	return best
})

// Waker sleeps until an instant of Now with the kernel timer's precision (Go's own
// timers can fire up to a millisecond late, a large share of a short one-way delay),
// also when every P of the process is busy. One per goroutine.
type Waker struct{ t *wakeTimer }

// NewWaker returns a Waker; Close releases it.
func NewWaker() (*Waker, error) {
	t, err := newWakeTimer()
	if err != nil {
		return nil, err
	}
	return &Waker{t: t}, nil
}

// SleepUntil returns once Now() >= at, or with an error once Close was called.
func (w *Waker) SleepUntil(at int64) error { return w.t.sleepUntil(at) }

// Close wakes a sleeper (with an error) and releases the timer.
func (w *Waker) Close() { w.t.close() }

// Scheduler stamps the messages one server sends: for each destination and stream it
// keeps a DelayLine of the plan, so delivery instants are in sending order per stream
// and carry the link's delay, jitter and window / RTT throughput. Safe for concurrent use.
type Scheduler struct {
	plan  Plan
	from  int
	mu    sync.Mutex
	lines map[[2]int]*DelayLine // (to, stream)
	start int64                 // Now instant of the schedules' time 0
}

// Scheduler returns the stamping side of the plan's links from server from.
func (p Plan) Scheduler(from int) (*Scheduler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	// Build the distribution tables now, not in the first Schedule: that takes
	// milliseconds, which the first message of a link (a heartbeat, say) would carry.
	for _, l := range p.Links {
		if _, err := table(l.Dist); err != nil {
			return nil, err
		}
	}
	return &Scheduler{plan: p, from: from, lines: map[[2]int]*DelayLine{}, start: Now()}, nil
}

// SetStart sets the Now instant at which the plan's link schedules count from (the
// run's start; by default the Scheduler's creation), for the lines made so far and
// those to come. A runner that restarts a server mid-run gives its new Scheduler the
// run's start, so that the restarted server's links follow the same schedule.
func (s *Scheduler) SetStart(ns int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start = ns
	for _, l := range s.lines {
		l.SetStart(ns)
	}
}

// Schedule gives the Now instants at which a message of size bytes, sent now to
// server to on stream (each stream, a TCP connection, has its own window), departs
// (until then the sender holds it) and arrives (until then the receiver holds it).
func (s *Scheduler) Schedule(to, stream, size int) (depart, arrive int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]int{to, stream}
	l := s.lines[k]
	if l == nil {
		var err error
		if l, err = s.plan.DelayLine(s.from, to); err != nil {
			return 0, 0, err
		}
		l.SetStart(s.start)
		s.lines[k] = l
	}
	d, a := l.Schedule(time.Unix(0, Now()), size)
	return d.UnixNano(), a.UnixNano(), nil
}
