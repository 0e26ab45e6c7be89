package netem

import (
	"fmt"
	"math"
	"time"
)

// tabledist is the kernel's tabledist() (net/sched/sch_netem.c) for one uniform
// random draw rnd: mu plus sigma times a table entry over DistScale, computed in
// integers as the kernel does it (sigma split into quotient and remainder by
// DistScale, the remainder's product rounded half away from zero), or uniform in
// [mu-sigma, mu+sigma) without a table. Times are in nanoseconds.
func tabledist(mu int64, sigma int32, rnd uint32, table []int16) int64 {
	if sigma == 0 {
		return mu
	}
	if len(table) == 0 {
		return int64(rnd%(2*uint32(sigma))) + mu - int64(sigma)
	}
	t := int64(table[rnd%uint32(len(table))])
	x := int64(sigma%DistScale) * t
	if x >= 0 {
		x += DistScale / 2
	} else {
		x -= DistScale / 2
	}
	return x/DistScale + int64(sigma/DistScale)*t + mu
}

// Sampler draws the one-way delays of a link the way a netem leaf seeded with the
// same seed does (Linux >= 6.6, no correlation): one PRNG draw per packet when there
// is jitter, none without.
type Sampler struct {
	mu    int64
	sigma int32
	table []int16
	rng   *prandom
}

// NewSampler returns the delay sampler of l seeded with seed.
func NewSampler(l Link, seed uint64) (*Sampler, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("link p%d->p%d: %w", l.From, l.To, err)
	}
	tab, err := table(l.Dist)
	if err != nil {
		return nil, err
	}
	return &Sampler{mu: int64(l.Delay), sigma: int32(l.Jitter), table: tab, rng: newPrandom(seed)}, nil
}

// Next is the delay of the next packet. It may be below zero when the jitter exceeds
// the delay (the kernel then sends at once).
func (s *Sampler) Next() time.Duration {
	if s.sigma == 0 {
		return time.Duration(s.mu)
	}
	return time.Duration(tabledist(s.mu, s.sigma, s.rng.Uint32(), s.table))
}

// MinDelay is the least one-way delay l's sampler can draw (its table's lowest entry,
// or the uniform range's bottom), and never below 0: what a message sent now cannot
// arrive before. The simulator's partitions run that far apart.
func (l Link) MinDelay() (time.Duration, error) {
	tab, err := table(l.Dist)
	if err != nil {
		return 0, err
	}
	low := 0
	for i, t := range tab {
		if t < tab[low] {
			low = i
		}
	}
	return time.Duration(max(tabledist(int64(l.Delay), int32(l.Jitter), uint32(low), tab), 0)), nil
}

// LinkSeed is the seed of the link from one server to another under a plan seed:
// repeatable, and different for every ordered pair.
func LinkSeed(planSeed int64, from, to int) uint64 {
	return splitmix64(uint64(planSeed) ^ splitmix64(uint64(from)<<32|uint64(uint32(to))))
}

// DelayLine is the user-space model of one link, a pure deterministic object: given
// when a message is sent and its size, it says when the message arrives.
//
//   - Delay: each message gets the link's delay with netem's jitter (Sampler).
//   - Order: a message never arrives before the previous one on the same link, as with
//     netem with a rate, or TCP's in-order delivery.
//   - Bandwidth-delay product: the link carries at most window bytes per RTT
//     (RTT = twice the one-way delay), with a burst of one window, as a TCP connection
//     whose window never grows past window: a message that fits in the window leaves at
//     once on an idle link, a transfer of k windows needs k-1 extra round trips.
//   - Rate: with RateBytesPerSec, a message also takes size/rate to serialize.
//   - Queue: a drop-tail queue of Q bytes (QueueBytes, or QueuePackets full-size
//     packets) behind the rate: a TCP stream through it keeps at most rate·RTT + Q
//     bytes in flight (more overflows the queue and makes the sender back off), so
//     the window is capped there. The sawtooth of loss-based congestion control
//     around that cap is not modelled.
//   - Loss, as a TCP stream sees it (docs/links.md): a message is cut into segments
//     of MSS bytes; each is lost with the link's loss (random, or the Gilbert-Elliott
//     chain, one step per segment); a lost segment is retransmitted after one RTO,
//     max(200 ms, RTT + 4·jitter) (Linux's minimum RTO; RFC 6298 with the jitter as
//     the variance), doubling for each further loss of the same segment. The message,
//     and by in-order delivery everything after it, arrives that much later. Fast
//     retransmit (one RTT) is not modelled: the RTO is the cost of a lost tail
//     segment, which is what small request/response messages suffer.
//   - Schedule: with a schedule (Plan.Schedules), the link's state (all of the above)
//     is the step in force at the send time, counted from the line's start (SetStart).
//
// Duplication and reordering are refused (Link.UserSpaceSupports): a TCP stream hides
// them. Without loss, queue and schedule, a line behaves exactly as before they
// existed (the jitter draws are the same): loss draws from its own generator.
type DelayLine struct {
	sampler *Sampler
	rtt     int64 // ns
	window  float64
	rate    float64 // bytes/s, 0 for none

	// Loss.
	loss    float64 // random loss probability per segment
	ge      GEModel // or a Gilbert-Elliott chain
	geBad   bool
	rto     int64 // ns
	lossRng *prandom
	// Segments and Lost count the segments the loss model saw and lost.
	Segments, Lost int64

	// Schedule.
	base   Link    // the link before the first step
	maxWin float64 // the window without the queue's cap
	steps  []Step
	step   int   // steps[:step] are in force
	start  int64 // ScheduleNS instant of the schedule's time 0

	// Times in ns on the caller's clock (ScheduleNS), or Unix ns (Schedule).
	lastSent int64
	tat      int64 // the window bucket's theoretical arrival time (GCRA)
	busy     int64 // the serializer is busy until then
	last     int64 // the previous message's delivery
}

// MSS is the segment size of the user-space loss model (Ethernet's 1500-byte MTU less
// the IPv4, TCP and timestamp-option headers).
const MSS = 1448

// Linux's TCP_RTO_MIN and TCP_RTO_MAX, and tcp_retries2's default: a segment lost
// that often would reset the connection; the model delivers it after the last try.
const (
	minRTO     = 200 * time.Millisecond
	maxRTO     = 120 * time.Second
	maxRetries = 15
)

// NewDelayLine models l with a window of window bytes (<= 0: DefaultWindowBytes) and
// the jitter seed seed.
func NewDelayLine(l Link, window int, seed uint64) (*DelayLine, error) {
	return newDelayLine(l, nil, window, seed)
}

func newDelayLine(l Link, steps []Step, window int, seed uint64) (*DelayLine, error) {
	if err := l.UserSpaceSupports(); err != nil {
		return nil, fmt.Errorf("link p%d->p%d: %w", l.From, l.To, err)
	}
	s, err := NewSampler(l, seed)
	if err != nil {
		return nil, err
	}
	for _, st := range steps {
		if err := st.Link.Validate(); err != nil {
			return nil, fmt.Errorf("link p%d->p%d at %v: %w", l.From, l.To, st.At, err)
		}
		if err := st.Link.UserSpaceSupports(); err != nil {
			return nil, fmt.Errorf("link p%d->p%d at %v: %w", l.From, l.To, st.At, err)
		}
		if _, err := table(st.Link.Dist); err != nil {
			return nil, err
		}
	}
	if window <= 0 {
		window = DefaultWindowBytes
	}
	d := &DelayLine{sampler: s, maxWin: float64(window), base: l, steps: steps,
		lossRng: newPrandom(splitmix64(seed ^ 0x6c6f7373))} // "loss"
	d.set(l)
	return d, nil
}

// set puts the line in the state of l (the jitter generator carries on).
func (d *DelayLine) set(l Link) {
	d.rtt = int64(2 * l.Delay)
	d.rate = float64(l.RateBytesPerSec)
	d.window = d.maxWin
	if q := l.queueBytes(); q > 0 && d.rate > 0 {
		d.window = min(d.window, d.rate*float64(d.rtt)/float64(time.Second)+float64(q))
	}
	d.loss, d.ge = l.LossPct/100, l.LossGE
	d.rto = max(int64(minRTO), d.rtt+4*int64(l.Jitter))
	tab, _ := table(l.Dist) // checked in newDelayLine
	d.sampler.mu, d.sampler.sigma, d.sampler.table = int64(l.Delay), int32(l.Jitter), tab
}

// queueBytes is the link's queue in bytes, 0 for none.
func (l Link) queueBytes() uint64 {
	if l.QueuePackets > 0 {
		return uint64(l.QueuePackets) * limitPacket
	}
	return l.QueueBytes
}

// SetStart sets the instant (ScheduleNS's clock) at which the schedule's time 0 is:
// the run's start. It is 0 by default, the simulator's origin.
// Setting another start puts the line back in its state before the first step.
func (d *DelayLine) SetStart(ns int64) {
	if ns == d.start {
		return
	}
	d.start = ns
	if d.step > 0 {
		d.step = 0
		d.set(d.base)
	}
}

// DelayLine returns the model of the link from one server to another under p, seeded
// with LinkSeed(p.Seed, from, to), with the link's schedule.
func (p Plan) DelayLine(from, to int) (*DelayLine, error) {
	l, ok := p.Link(from, to)
	if !ok {
		return nil, fmt.Errorf("no link p%d->p%d in the plan", from, to)
	}
	return newDelayLine(l, p.Schedule(from, to), p.Window(), LinkSeed(p.Seed, from, to))
}

func seconds(s float64) int64 { return int64(math.Round(s * float64(time.Second))) }

// Deliver returns when a message of size bytes sent at sent arrives. Calls must come
// in sending order; a send time earlier than the previous one counts as equal to it.
func (d *DelayLine) Deliver(sent time.Time, size int) time.Time {
	_, at := d.Schedule(sent, size)
	return at
}

// Schedule returns when a message of size bytes sent at sent leaves the sender (the
// window, or the rate, lets it onto the wire: until then it is the sender's, and dies
// with it) and when it arrives. Both are non-decreasing over calls.
func (d *DelayLine) Schedule(sent time.Time, size int) (depart, arrive time.Time) {
	dep, at := d.ScheduleNS(sent.UnixNano(), size)
	return time.Unix(0, dep), time.Unix(0, at)
}

// ScheduleNS is Schedule on a clock of int64 nanoseconds (any origin, the same for
// every call), for callers that keep time that way: the simulator, the links' own
// monotonic clock.
func (d *DelayLine) ScheduleNS(sent int64, size int) (depart, arrive int64) {
	size = max(size, 0)
	t := max(sent, d.lastSent)
	d.lastSent = t
	if d.step < len(d.steps) {
		n := d.step
		for n < len(d.steps) && d.start+int64(d.steps[n].At) <= t {
			n++
		}
		if n != d.step {
			d.step = n
			d.set(d.steps[n-1].Link)
		}
	}
	depart = t
	if d.rtt > 0 {
		// GCRA with rate window/RTT and tolerance RTT: a window of burst.
		cost := seconds(float64(size) / d.window * float64(d.rtt) / float64(time.Second))
		d.tat = max(d.tat, t) + cost
		depart = max(t, d.tat-d.rtt)
	}
	if d.rate > 0 {
		depart = max(depart, d.busy) + seconds(float64(size)/d.rate)
		d.busy = depart
	}
	at := depart + max(int64(d.sampler.Next()), 0)
	if d.loss > 0 || !d.ge.IsZero() {
		at += d.retransmissions(size)
	}
	d.last = max(at, d.last)
	return depart, d.last
}

// retransmissions is the delay loss adds to a message of size bytes: for each of its
// segments, one RTO for its first loss, doubling for each further one; the message
// waits for its slowest segment.
func (d *DelayLine) retransmissions(size int) int64 {
	var worst int64
	for range max(1, (size+MSS-1)/MSS) {
		var wait int64
		rto := d.rto
		for retry := 0; retry < maxRetries && d.lost(); retry++ {
			wait += rto
			rto = min(2*rto, int64(maxRTO))
		}
		worst = max(worst, wait)
	}
	return worst
}

// lost draws one segment through the loss model.
func (d *DelayLine) lost() bool {
	d.Segments++
	u := func() float64 { return float64(d.lossRng.Uint32()) / (1 << 32) }
	var l bool
	if d.ge.IsZero() {
		l = u() < d.loss
	} else {
		// One step of the chain, then a loss draw in the new state (netem's order).
		if d.geBad {
			d.geBad = u() >= d.ge.R/100
		} else {
			d.geBad = u() < d.ge.P/100
		}
		if d.geBad {
			l = u() < d.ge.OneMinusH/100
		} else {
			l = u() < d.ge.OneMinusK/100
		}
	}
	if l {
		d.Lost++
	}
	return l
}

// LastNS is when the latest message scheduled on the line arrives (ScheduleNS's
// clock): a stream's close is noticed after it.
func (d *DelayLine) LastNS() int64 { return d.last }
