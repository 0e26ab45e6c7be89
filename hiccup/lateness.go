package hiccup

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Lateness counts how late scheduled deliveries happened against their schedule (a
// user-space link's messages against the instant its delay line gave them), for a
// sampler that takes the period's count, mean, p99 and maximum and starts the next
// period afresh. Record is on a link's per-message path, so it takes no lock and
// allocates nothing: two atomic adds (a log-linear bucket, 16 per power of two so a
// percentile is good to 1/16, and the sum for the mean) and an atomic maximum that
// writes only when it grows.
// The zero value is ready for use; safe for concurrent use.
type Lateness struct {
	counts [lateBuckets]atomic.Uint64
	max    atomic.Int64
	sum    atomic.Int64 // ns, for the mean
}

const (
	lateSubBits = 4
	lateSub     = 1 << lateSubBits
	lateBuckets = (64-lateSubBits)*lateSub + lateSub // every int64 value has a bucket
)

// lateBucket is the bucket of ns >= 0: exact below 2*lateSub, then lateSub buckets per
// power of two.
func lateBucket(ns uint64) int {
	if ns < 2*lateSub {
		return int(ns)
	}
	shift := bits.Len64(ns) - lateSubBits - 1
	return (shift+1)*lateSub + int(ns>>shift) - lateSub
}

// lateUpper is the highest value of bucket i.
func lateUpper(i int) int64 {
	if i < 2*lateSub {
		return int64(i)
	}
	shift := i/lateSub - 1
	m := uint64(i%lateSub + lateSub)
	return int64((m+1)<<shift - 1)
}

// Record counts one delivery that happened late after its scheduled instant (early
// counts as on time).
func (l *Lateness) Record(late time.Duration) {
	ns := max(int64(late), 0)
	l.counts[lateBucket(uint64(ns))].Add(1)
	l.sum.Add(ns)
	for {
		m := l.max.Load()
		if ns <= m || l.max.CompareAndSwap(m, ns) {
			return
		}
	}
}

// LateSummary is what a Lateness counted over one period.
type LateSummary struct {
	N    int64
	Mean time.Duration
	P99  time.Duration // the bucket's highest value, at most Max
	Max  time.Duration
}

// Take returns what was recorded since the previous Take and starts over. A Record
// racing with it is counted in this period or the next, never lost.
func (l *Lateness) Take() LateSummary {
	var c [lateBuckets]uint64
	var s LateSummary
	for i := range l.counts {
		if l.counts[i].Load() == 0 {
			continue // most buckets stay empty: a load is cheaper than a swap
		}
		c[i] = l.counts[i].Swap(0)
		s.N += int64(c[i])
	}
	s.Max = time.Duration(l.max.Swap(0))
	sum := l.sum.Swap(0) // a racing Record's lateness may fall in the next period's mean
	if s.N == 0 {
		return s
	}
	s.Mean = time.Duration(sum / s.N)
	rank := (99*s.N + 99) / 100 // ceil(0.99 N)
	var seen int64
	for i, n := range c {
		if seen += int64(n); seen >= rank {
			s.P99 = time.Duration(lateUpper(i))
			break
		}
	}
	// A Record that came after the max was taken may have left its count only;
	// the maximum is then at least the bucket's.
	s.Max = max(s.Max, time.Duration(lateFloorOfTop(c)))
	s.P99 = min(s.P99, s.Max)
	return s
}

// lateFloorOfTop is the lowest value of the highest non-empty bucket: a floor under
// the maximum whatever raced.
func lateFloorOfTop(c [lateBuckets]uint64) int64 {
	for i := len(c) - 1; i >= 0; i-- {
		if c[i] > 0 {
			if i == 0 {
				return 0
			}
			return lateUpper(i-1) + 1
		}
	}
	return 0
}
