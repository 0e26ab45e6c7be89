package netem

import (
	"math"
	"slices"
	"testing"
	"time"
)

// seedVeryWeak and warmup are the kernel selftest's seeding (lib/random32.c), used
// only to check our taus113 against the kernel's published vectors.
func seedVeryWeak(seed uint32) *prandom {
	lcg := func(x uint32) uint32 { return x * 69069 }
	r := &prandom{}
	r.s1 = seedMin(lcg(seed), 2)
	r.s2 = seedMin(lcg(r.s1), 8)
	r.s3 = seedMin(lcg(r.s2), 16)
	r.s4 = seedMin(lcg(r.s3), 128)
	for range 10 {
		r.Uint32()
	}
	return r
}

func TestPrandomMatchesKernelSelftest(t *testing.T) {
	// A sample of the kernel's prandom_state_selftest vectors (taus113 against GSL).
	for _, v := range []struct{ seed, iter, want uint32 }{
		{931557656, 959, 2975593782},
		{1339693295, 876, 3887776532},
		{1545556285, 961, 1615538833},
		{601730776, 723, 1776162651},
		{1027516047, 687, 511983079},
		{1967883163, 508, 10734624},
		{1516232129, 557, 3173877},
		{407983964, 921, 728767059},
	} {
		r := seedVeryWeak(v.seed)
		for range v.iter - 1 {
			r.Uint32()
		}
		if got := r.Uint32(); got != v.want {
			t.Errorf("seed %d iteration %d: %d, kernel %d", v.seed, v.iter, got, v.want)
		}
	}
	// The seed-boundary vectors: seeding and the first draw after warmup.
	for seed, want := range map[uint32]uint32{1: 3484351685, 2: 2623130059, 3: 3125133893, 4: 984847254} {
		if got := seedVeryWeak(seed).Uint32(); got != want {
			t.Errorf("seed %d: %d, kernel %d", seed, got, want)
		}
	}
}

func TestPrandomSeedState(t *testing.T) {
	// prandom_seed_state folds 64 bits to 32 and lifts each component over its minimum.
	r := newPrandom(0)
	if *r != (prandom{2, 8, 16, 128}) {
		t.Errorf("seed 0 state %+v; want {2 8 16 128}", *r)
	}
	a, b := newPrandom(1<<40), newPrandom(1<<41)
	if *a == *b {
		t.Error("high seed bits are ignored")
	}
}

func TestTabledistArithmetic(t *testing.T) {
	tab := []int16{-5461, 0, 1, -1, 32767, -32768}
	for _, c := range []struct {
		mu    int64
		sigma int32
		rnd   uint32
		want  int64
	}{
		{1000, 0, 7, 1000},                       // no jitter: mu, whatever rnd
		{38530000, 770600, 0, 38530000 - 513702}, // (552*-5461-4096)/8192 = -368; 94*-5461 = -513334
		{38530000, 770600, 1, 38530000},
		{38530000, 770600, 2, 38530000 + 94},      // (552+4096)/8192 = 0, plus 94*1
		{38530000, 770600, 3, 38530000 - 94},      // (-552-4096)/8192 = 0 (truncation), minus 94
		{100, 8191, 2, 101},                       // (8191+4096)/8192 = 1: rounds half up
		{100, 4096, 2, 101},                       // exactly half: away from zero
		{100, 4096, 3, 99},                        // exactly half below zero: away from zero
		{0, 1 << 30, 4, (1 << 30) / 8192 * 32767}, // large sigma, no remainder
		{0, 8192, 5 + 6*1000, -32768},             // rnd wraps modulo the table size
	} {
		if got := tabledist(c.mu, c.sigma, c.rnd, tab); got != c.want {
			t.Errorf("tabledist(%d, %d, rnd %d) = %d; want %d", c.mu, c.sigma, c.rnd, got, c.want)
		}
	}
	// Uniform: rnd mod 2 sigma, shifted down by sigma.
	for _, c := range []struct {
		rnd  uint32
		want int64
	}{{0, 900}, {199, 1099}, {200, 900}, {4294967295, 900 + 4294967295%200}} {
		if got := tabledist(1000, 100, c.rnd, nil); got != c.want {
			t.Errorf("uniform rnd %d = %d; want %d", c.rnd, got, c.want)
		}
	}
}

// TestTabledistNearExact: the integer computation stays within one nanosecond of
// mu + sigma*t/DistScale for every entry of every table.
func TestTabledistNearExact(t *testing.T) {
	for _, name := range []string{DistPareto, DistNormal, DistParetoNormal} {
		tab, _ := Table(name)
		for _, sigma := range []int32{1, 999, 8192, 770600, 1 << 30, math.MaxInt32} {
			for i, e := range tab {
				got := tabledist(5e6, sigma, uint32(i), tab)
				exact := 5e6 + float64(sigma)*float64(e)/DistScale
				if math.Abs(float64(got)-exact) > 1 {
					t.Fatalf("%s sigma %d entry %d (%d): %d, exact %.2f", name, sigma, i, e, got, exact)
				}
			}
		}
	}
}

// TestParetoJitterShape: many draws with the Pareto table have the link's delay as
// their mean, most draws a little below it, and a long tail above (property of the
// distribution, not of our code's structure).
func TestParetoJitterShape(t *testing.T) {
	l := Link{From: 1, To: 2, Delay: 38530 * time.Microsecond, Jitter: 770600, Dist: DistPareto}
	s, err := NewSampler(l, 42)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200000
	draws := make([]float64, n)
	var sum float64
	for i := range draws {
		draws[i] = float64(s.Next())
		sum += draws[i]
	}
	mean, mu, sigma := sum/n, float64(l.Delay), float64(l.Jitter)
	below := 0
	for _, d := range draws {
		if d < mu {
			below++
		}
	}
	slices.Sort(draws)
	median := draws[n/2]
	t.Logf("mean %.4f ms (delay %.4f), median %.4f, min %.4f, max %.4f, %.1f%% below the delay",
		mean/1e6, mu/1e6, median/1e6, draws[0]/1e6, draws[n-1]/1e6, 100*float64(below)/n)
	if math.Abs(mean-mu) > 0.05*sigma {
		t.Errorf("mean %.0f ns, delay %.0f: off by more than 5%% of the jitter", mean, mu)
	}
	if f := float64(below) / n; f < 0.6 {
		t.Errorf("%.2f of draws below the delay; Pareto puts most just below the mean", f)
	}
	if median >= mu || median < mu-0.5*sigma {
		t.Errorf("median %.0f not slightly below the delay %.0f", median, mu)
	}
	if draws[n-1]-mu < 3*sigma {
		t.Errorf("longest draw only %.2f jitters above the delay; want a long tail", (draws[n-1]-mu)/sigma)
	}
	if mu-draws[0] > sigma {
		t.Errorf("shortest draw %.2f jitters below the delay; the Pareto lower tail is short", (mu-draws[0])/sigma)
	}
}

func TestUniformJitter(t *testing.T) {
	l := Link{From: 1, To: 2, Delay: 10 * time.Millisecond, Jitter: 200 * time.Microsecond, Dist: DistUniform}
	s, err := NewSampler(l, 1)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
	for range 100000 {
		d := s.Next()
		sum += float64(d)
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < l.Delay-l.Jitter || hi >= l.Delay+l.Jitter {
		t.Errorf("draws in [%v, %v]; want within [%v, %v)", lo, hi, l.Delay-l.Jitter, l.Delay+l.Jitter)
	}
	if mean := sum / 100000; math.Abs(mean-float64(l.Delay)) > 0.01*float64(l.Jitter) {
		t.Errorf("mean %.0f, delay %d", mean, l.Delay)
	}
}

// TestMinDelay: no draw is below MinDelay, and enough draws reach it (every table
// entry is hit; the uniform range's bottom to within 100 ns); a jitter larger than the delay floors it at 0, as the kernel sends at once.
func TestMinDelay(t *testing.T) {
	for _, dist := range Dists {
		for _, l := range []Link{
			{From: 1, To: 2, Delay: 10 * time.Millisecond, Jitter: 200 * time.Microsecond, Dist: dist},
			{From: 1, To: 2, Delay: 100 * time.Microsecond, Jitter: 80 * time.Microsecond, Dist: dist},
			{From: 1, To: 2, Delay: 10 * time.Millisecond, Dist: dist},
		} {
			low, err := l.MinDelay()
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewSampler(l, 3)
			if err != nil {
				t.Fatal(err)
			}
			least := time.Duration(math.MaxInt64)
			for range 200000 {
				least = min(least, max(s.Next(), 0))
			}
			if least < low || least > low && (dist != DistUniform || least-low > 100) {
				t.Errorf("%s, delay %v jitter %v: least of 200,000 draws %v, MinDelay %v", dist, l.Delay, l.Jitter, least, low)
			}
		}
	}
	if _, err := (Link{Dist: "gamma"}).MinDelay(); err == nil {
		t.Error("MinDelay accepted an unknown distribution")
	}
}

func TestSamplerDeterministic(t *testing.T) {
	l := Link{From: 1, To: 2, Delay: time.Millisecond, Jitter: 20 * time.Microsecond, Dist: DistNormal}
	a, _ := NewSampler(l, 7)
	b, _ := NewSampler(l, 7)
	c, _ := NewSampler(l, 8)
	same, differ := true, false
	for range 100 {
		x, y, z := a.Next(), b.Next(), c.Next()
		same = same && x == y
		differ = differ || x != z
	}
	if !same || !differ {
		t.Errorf("same seed same draws: %v; other seed other draws: %v", same, differ)
	}
	if _, err := NewSampler(Link{From: 1, To: 2, Dist: "gamma"}, 1); err == nil {
		t.Error("NewSampler accepted an unknown distribution")
	}
}

var t0 = time.Date(2011, 12, 12, 0, 0, 0, 0, time.UTC)

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

func TestDelayLine(t *testing.T) {
	fixed := Link{From: 1, To: 2, Delay: ms(10), Dist: DistPareto} // no jitter: exact times
	const w = 64 << 10
	cases := []struct {
		name  string
		link  Link
		sends []struct {
			at   time.Duration
			size int
		}
		want []time.Duration // arrival, relative to t0
	}{
		{"small message: the delay", fixed, []struct {
			at   time.Duration
			size int
		}{{0, 1000}, {ms(5), 1000}}, []time.Duration{ms(10), ms(15)}},
		{"one window leaves at once", fixed, []struct {
			at   time.Duration
			size int
		}{{0, w}}, []time.Duration{ms(10)}},
		{"ten windows need nine more round trips", fixed, []struct {
			at   time.Duration
			size int
		}{{0, 10 * w}}, []time.Duration{ms(10 + 9*20)}},
		{"queued behind a transfer", fixed, []struct {
			at   time.Duration
			size int
		}{{0, 3 * w}, {ms(1), 100}}, []time.Duration{ms(10 + 2*20), ms(10+2*20) + time.Duration(seconds(100.0/w*0.02))}},
		{"window refills with time", fixed, []struct {
			at   time.Duration
			size int
		}{{0, w}, {ms(20), w}, {ms(30), w}}, []time.Duration{ms(10), ms(30), ms(50)}},
		{"rate serializes", Link{From: 1, To: 2, Delay: ms(10), Dist: DistPareto, RateBytesPerSec: 1e6}, []struct {
			at   time.Duration
			size int
		}{{0, 1000}, {0, 1000}}, []time.Duration{ms(11), ms(12)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := NewDelayLine(c.link, w, 1)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range c.sends {
				got := d.Deliver(t0.Add(s.at), s.size).Sub(t0)
				if diff := got - c.want[i]; diff < -time.Microsecond || diff > time.Microsecond {
					t.Errorf("message %d: arrives at %v; want %v", i, got, c.want[i])
				}
			}
		})
	}
}

// TestDelayLineFIFOAndThroughput: with jitter, arrivals stay in order and never come
// before send+delay-jitter; a saturating stream gets window/RTT.
func TestDelayLineFIFOAndThroughput(t *testing.T) {
	l := Link{From: 1, To: 2, Delay: ms(38.53), Jitter: 770600, Dist: DistPareto}
	p := Plan{Links: []Link{l, {From: 2, To: 1, Delay: l.Delay, Dist: DistPareto}}, Seed: 3, WindowBytes: 64 << 10}
	d, err := p.DelayLine(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	var prev time.Time
	const size, n = 1024, 20000 // 20 MB offered at 100 MB/s
	for i := range n {
		sent := t0.Add(time.Duration(i) * 10 * time.Microsecond)
		at := d.Deliver(sent, size)
		if at.Before(prev) {
			t.Fatalf("message %d arrives at %v, before message %d", i, at, i-1)
		}
		if at.Sub(sent) < l.Delay-l.Jitter {
			t.Fatalf("message %d took %v, less than delay - jitter", i, at.Sub(sent))
		}
		prev = at
	}
	elapsed := prev.Sub(t0).Seconds()
	got, want := float64(size*n)/elapsed, float64(p.WindowBytes)/(2*l.Delay.Seconds())
	t.Logf("throughput %.0f B/s, window/RTT %.0f B/s", got, want)
	if math.Abs(got-want)/want > 0.02 {
		t.Errorf("throughput %.0f B/s; want window/RTT = %.0f", got, want)
	}
	if _, err := p.DelayLine(1, 3); err == nil {
		t.Error("DelayLine for a missing link")
	}
}
