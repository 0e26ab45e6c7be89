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
//
// Loss is not modelled (TCP would turn it into delay).
type DelayLine struct {
	sampler *Sampler
	rtt     int64 // ns
	window  float64
	rate    float64 // bytes/s, 0 for none

	// Times in ns on the caller's clock (ScheduleNS), or Unix ns (Schedule).
	lastSent int64
	tat      int64 // the window bucket's theoretical arrival time (GCRA)
	busy     int64 // the serializer is busy until then
	last     int64 // the previous message's delivery
}

// NewDelayLine models l with a window of window bytes (<= 0: DefaultWindowBytes) and
// the jitter seed seed.
func NewDelayLine(l Link, window int, seed uint64) (*DelayLine, error) {
	s, err := NewSampler(l, seed)
	if err != nil {
		return nil, err
	}
	if window <= 0 {
		window = DefaultWindowBytes
	}
	return &DelayLine{sampler: s, rtt: int64(2 * l.Delay), window: float64(window), rate: float64(l.RateBytesPerSec)}, nil
}

// DelayLine returns the model of the link from one server to another under p, seeded
// with LinkSeed(p.Seed, from, to).
func (p Plan) DelayLine(from, to int) (*DelayLine, error) {
	l, ok := p.Link(from, to)
	if !ok {
		return nil, fmt.Errorf("no link p%d->p%d in the plan", from, to)
	}
	return NewDelayLine(l, p.Window(), LinkSeed(p.Seed, from, to))
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
	d.last = max(at, d.last)
	return depart, d.last
}

// LastNS is when the latest message scheduled on the line arrives (ScheduleNS's
// clock): a stream's close is noticed after it.
func (d *DelayLine) LastNS() int64 { return d.last }
