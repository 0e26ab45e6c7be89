// Package workload drives the open-loop write workload of a polebench run: per-DC pacers on
// an absolute schedule, 1 kB setData writes through go-zookeeper/zk sessions pinned to one
// server each, one record per request, and a read-back check that no acknowledged write
// was lost.
package workload

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"github.com/polebench/polebench/workload/arrival"
)

// Schedule yields the intended send offsets of one pacer. The i-th offset depends only on
// the arrival kind, the rate and the seed, never on how earlier requests went: a stall in
// the system under test shows as latency, not as missing requests.
type Schedule struct {
	arrival arrival.Kind
	rate    float64 // requests per second
	i       int64
	sum     float64 // seconds; summed in float64 so rounding never accumulates
	rng     *rand.Rand
}

// NewSchedule returns the schedule of a pacer sending rate requests per second.
func NewSchedule(a arrival.Kind, rate float64, seed uint64) (*Schedule, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("workload: schedule rate %v: must be a positive number", rate)
	}
	s := &Schedule{arrival: a, rate: rate}
	switch a {
	case arrival.Constant:
	case arrival.Poisson, "":
		s.arrival = arrival.Poisson
		s.rng = rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	default:
		return nil, fmt.Errorf("workload: arrival %q: want %q or %q", a, arrival.Poisson, arrival.Constant)
	}
	return s, nil
}

// Next returns the offset from the run's start at which the next request is due.
// arrival.Constant schedules start at 0; arrival.Poisson ones at the first exponential gap.
func (s *Schedule) Next() time.Duration {
	var at float64
	if s.arrival == arrival.Constant {
		at = float64(s.i) / s.rate
	} else {
		s.sum += s.rng.ExpFloat64() / s.rate
		at = s.sum
	}
	s.i++
	return time.Duration(math.Round(at * 1e9))
}

// Offsets returns every intended offset before end: the whole schedule of a run.
func Offsets(a arrival.Kind, rate float64, seed uint64, end time.Duration) ([]time.Duration, error) {
	s, err := NewSchedule(a, rate, seed)
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for t := s.Next(); t < end; t = s.Next() {
		out = append(out, t)
	}
	return out, nil
}

// Stream constants keep the random sources of one DC independent of each other, so that,
// e.g., which server a request goes to never changes when it is due.
const (
	streamArrival uint64 = iota + 1
	streamKey
	streamPick
)

// dcSeed derives a DC's seed from the run's seed and the DC's name (not its position in
// a map, which Go randomizes).
func dcSeed(seed uint64, dc string, stream uint64) uint64 {
	h := fnv.New64a()
	h.Write([]byte(dc))
	return seed ^ h.Sum64() ^ (stream * 0xbf58476d1ce4e5b9)
}
