package netem

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A user-space link that behaves like a wire: the sender holds each message until the
// link's window lets it depart, then hands it over stamped with the instant the
// network delivers it; the receiver holds it until then. What has departed is on the
// wire and survives the sender's death (a killed process's packets already in a kernel
// qdisc are delivered too); what has not dies with the sender, as the unsent part of a
// TCP send buffer does; what arrives for a dead receiver is lost. Sender and receiver share the host's monotonic clock, which every
// process, network namespace and container of one kernel reads alike.

// Now is the host's monotonic clock (CLOCK_MONOTONIC) in nanoseconds.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_MONOTONIC): %v", err)) // cannot fail on Linux
	}
	return ts.Nano()
}

// Waker sleeps until an instant of Now with the kernel timer's precision (Go's own
// timers fire 0.2-1 ms late: 5-20 % of a 5 ms one-way delay). One per goroutine.
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
func (w *Waker) SleepUntil(at int64) error {
	return w.t.sleepUntil(time.Now().Add(time.Duration(at - Now())))
}

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
}

// Scheduler returns the stamping side of the plan's links from server from.
func (p Plan) Scheduler(from int) (*Scheduler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Scheduler{plan: p, from: from, lines: map[[2]int]*DelayLine{}}, nil
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
		s.lines[k] = l
	}
	d, a := l.Schedule(time.Unix(0, Now()), size)
	return d.UnixNano(), a.UnixNano(), nil
}
