package main

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/polebench/polebench/netem"
)

// planDelays is the set the kernel draws from: every delay netem's Sampler (the
// kernel's arithmetic) gives is one of its points, and its draws pass the KS test.
func TestPlanDelaysMatchesSampler(t *testing.T) {
	for _, l := range []netem.Link{
		link(1, 2, 5*time.Millisecond, 100*time.Microsecond, netem.DistPareto),
		link(1, 2, 15*time.Millisecond, 300*time.Microsecond, netem.DistPareto),
		link(1, 2, 15*time.Millisecond, 300*time.Microsecond, netem.DistNormal),
		link(1, 2, 15*time.Millisecond, 300*time.Microsecond, netem.DistParetoNormal),
	} {
		pts, err := planDelays(l)
		if err != nil {
			t.Fatal(err)
		}
		if len(pts) != netem.TableSize || !slices.IsSorted(pts) {
			t.Fatalf("%s: %d points, sorted %v", l.Dist, len(pts), slices.IsSorted(pts))
		}
		s, err := netem.NewSampler(l, 7)
		if err != nil {
			t.Fatal(err)
		}
		xs := make([]float64, 20000)
		for i := range xs {
			xs[i] = float64(s.Next()) / 1e6
			if _, ok := slices.BinarySearch(pts, xs[i]); !ok {
				t.Fatalf("%s: sampler drew %v ms, not a point of planDelays", l.Dist, xs[i])
			}
		}
		d := ksConv(xs, pts, []float64{0})
		if p := ksPValue(d, float64(len(xs))); p <= ksAlpha {
			t.Errorf("%s: sampler draws fail KS against planDelays: D %.4f p %v", l.Dist, d, p)
		}
	}
	one, err := planDelays(link(1, 2, 5*time.Millisecond, 0, netem.DistPareto))
	if err != nil || !slices.Equal(one, []float64{5}) {
		t.Errorf("no jitter: %v, %v", one, err)
	}
	uni, err := planDelays(link(1, 2, 5*time.Millisecond, 100*time.Microsecond, netem.DistUniform))
	if err != nil || uni[0] < 4.9 || uni[len(uni)-1] >= 5.1 || math.Abs(mean(uni)-5) > 1e-4 {
		t.Errorf("uniform: [%v, %v] mean %v, %v", uni[0], uni[len(uni)-1], mean(uni), err)
	}
	if _, err := planDelays(link(1, 2, 5, 1, "cauchy")); err == nil {
		t.Error("an unknown distribution was accepted")
	}
}

func TestKolmogorovQ(t *testing.T) {
	for _, c := range []struct{ lambda, want float64 }{
		{0.1, 1}, {0.5, 0.9639}, {1.0, 0.2700}, {1.36, 0.0494}, {1.63, 0.0098}, {3, 3.05e-8},
	} {
		if got := kolmogorovQ(c.lambda); math.Abs(got-c.want) > 1e-3*max(c.want, 1e-5) && math.Abs(got-c.want) > 1e-4 {
			t.Errorf("kolmogorovQ(%v) = %.6g, want %.6g", c.lambda, got, c.want)
		}
	}
}

// synth draws n delays of l plus a path with a 20 µs median and a tail, as the VM
// delivers them, and m samples of the path alone.
func synth(t *testing.T, r *rand.Rand, l netem.Link, n, m int) (xs, base []float64) {
	t.Helper()
	pts, err := planDelays(l)
	if err != nil {
		t.Fatal(err)
	}
	path := func() float64 { return 0.018 + 0.004*r.Float64() + 0.02*r.ExpFloat64()*float64(r.IntN(20)/19) }
	for range n {
		xs = append(xs, pts[r.IntN(len(pts))]+path())
	}
	for range m {
		base = append(base, path())
	}
	slices.Sort(base)
	return xs, base
}

// The KS check at the guest's sizes: a correct link passes (false alarms at most
// about 1 %, fewer with the conservative effective size), and 2 % more delay, normal
// jitter, or the plan without the path all fail.
func TestKSConvSeparates(t *testing.T) {
	l := link(1, 2, 5*time.Millisecond, 100*time.Microsecond, netem.DistPareto)
	r := rand.New(rand.NewPCG(3, 4))
	const trials, n, m = 20, 10000, 5000
	ne := float64(n*m) / float64(n+m)
	alarms := 0
	for range trials {
		xs, base := synth(t, r, l, n, m)
		pts, _ := planDelays(l)
		bq := quantilePoints(base, basePoints)
		if p := ksPValue(ksConv(xs, pts, bq), ne); p <= ksAlpha {
			alarms++
		}
	}
	if alarms > 1 {
		t.Errorf("%d of %d correct samples failed KS", alarms, trials)
	}
	xs, base := synth(t, r, l, n, m)
	bq := quantilePoints(base, basePoints)
	for name, w := range map[string]netem.Link{
		"delay x1.02":   link(1, 2, 5100*time.Microsecond, 100*time.Microsecond, netem.DistPareto),
		"normal jitter": link(1, 2, 5*time.Millisecond, 100*time.Microsecond, netem.DistNormal),
		"delay -20µs":   link(1, 2, 4980*time.Microsecond, 100*time.Microsecond, netem.DistPareto),
	} {
		pts, _ := planDelays(w)
		if d := ksConv(slices.Clone(xs), pts, bq); ksPValue(d, ne) > ksAlpha {
			t.Errorf("%s: passed KS (D %.4f)", name, d)
		}
	}
	pts, _ := planDelays(l)
	if d := ksConv(slices.Clone(xs), pts, []float64{0}); ksPValue(d, ne) > ksAlpha {
		t.Errorf("without the path: passed KS (D %.4f)", d)
	}
}

func TestKSConvExact(t *testing.T) {
	// Samples equal to the convolution's own points: D = 0.
	plan, base := []float64{1, 2}, []float64{0, 10}
	if d := ksConv([]float64{11, 1, 12, 2}, plan, base); d != 0 {
		t.Errorf("D = %v, want 0", d)
	}
	// One point twice, another never: off by one step of four.
	if d := ksConv([]float64{11, 1, 12, 1}, plan, base); math.Abs(d-0.25) > 1e-12 {
		t.Errorf("D = %v, want 0.25", d)
	}
	// All samples far above: D = 1.
	if d := ksConv([]float64{100, 101}, plan, base); d != 1 {
		t.Errorf("D = %v, want 1", d)
	}
}

func TestQuantilePoints(t *testing.T) {
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(i)
	}
	q := quantilePoints(xs, 10)
	if !slices.Equal(q, []float64{50, 150, 250, 350, 450, 550, 650, 750, 850, 950}) {
		t.Errorf("quantilePoints = %v", q)
	}
	if got := quantilePoints(xs[:5], 10); !slices.Equal(got, xs[:5]) {
		t.Errorf("short input: %v", got)
	}
}

func TestBinomialInterval(t *testing.T) {
	for _, c := range []struct {
		n      int
		p      float64
		lo, hi int
	}{
		{10, 0.5, 1, 9}, // P(X=0) = 0.00098, P(X<=1) = 0.0107
		{100, 0, 0, 0},
		{100, 1, 100, 100},
	} {
		if lo, hi := binomialInterval(c.n, c.p, 0.99); lo != c.lo || hi != c.hi {
			t.Errorf("binomialInterval(%d, %v) = [%d, %d], want [%d, %d]", c.n, c.p, lo, hi, c.lo, c.hi)
		}
	}
	// n = 10^4, p = 0.1: mean 1000, sd 30, so about 1000 ± 2.576·30.
	lo, hi := binomialInterval(10000, 0.1, 0.99)
	if lo < 920 || lo > 925 || hi < 1075 || hi > 1080 {
		t.Errorf("binomialInterval(10000, 0.1) = [%d, %d], want about [923, 1078]", lo, hi)
	}
	// It covers 99 %: simulated counts fall outside about 1 % of the time.
	r := rand.New(rand.NewPCG(5, 6))
	out := 0
	for range 2000 {
		k := 0
		for range 1000 {
			if r.Float64() < 0.1 {
				k++
			}
		}
		if lo, hi := binomialInterval(1000, 0.1, 0.99); k < lo || k > hi {
			out++
		}
	}
	if out > 45 {
		t.Errorf("%d of 2000 binomial counts outside the 99%% interval", out)
	}
}

func TestCheckLoss(t *testing.T) {
	var b strings.Builder
	if f := checkLoss(&b, "p3->p4", 10, 10000, 1012, 0, 0); len(f) != 0 || !strings.Contains(b.String(), ": ok;") {
		t.Errorf("1012 of 10000 at 10%%: %q\n%s", f, b.String())
	}
	// Outside the 99 % interval but inside the 99.99 % one: reported, not failed.
	b.Reset()
	if f := checkLoss(&b, "p3->p4", 10, 10000, 920, 0, 0); len(f) != 0 || !strings.Contains(b.String(), "outside the tolerance") {
		t.Errorf("920 of 10000 at 10%%: %q\n%s", f, b.String())
	}
	for name, c := range map[string]struct {
		lost  int
		drops uint32
		want  string
	}{
		"too many":      {1200, 0, "outside the 99.99% binomial interval"},
		"too few":       {850, 0, "outside the 99.99% binomial interval"},
		"socket drops":  {1000, 3, "receiving socket dropped 3"},
		"control fails": {1300, 0, "negative control"},
	} {
		f := checkLoss(&b, "p3->p4", 10, 10000, c.lost, c.drops, 0)
		if !strings.Contains(strings.Join(f, "\n"), c.want) {
			t.Errorf("%s: failures %q, want %q", name, f, c.want)
		}
	}
}

func TestCheckRate(t *testing.T) {
	var b strings.Builder
	want := 20e6 / 8
	if f := checkRate(&b, "p4->p5", want, want*1.03, 2000, 2100, 100); len(f) != 0 {
		t.Errorf("+3%%: %q", f)
	}
	for name, got := range map[string]float64{"-6%": want * 0.94, "+6%": want * 1.06} {
		f := checkRate(&b, "p4->p5", want, got, 2000, 2100, 100)
		if len(f) == 0 || !strings.Contains(f[0], "off the rate 20.000 Mbit/s") {
			t.Errorf("%s: %q", name, f)
		}
	}
}

// schedArrivals makes a stream every 2 ms from start (0) that sees the delays of
// old and then of each step, switched lag after the step's instant, plus path ms.
func schedArrivals(old netem.Link, steps []netem.Step, lag time.Duration, scale float64, path float64) []arrival {
	var arr []arrival
	for i := 0; i < 450; i++ {
		sent := int64(i) * int64(2*time.Millisecond)
		d := old.Delay
		for _, st := range steps {
			if sent >= int64(st.At+lag) {
				d = st.Link.Delay
			}
		}
		owd := int64(float64(d)*scale) + int64(path*1e6)
		arr = append(arr, arrival{Seq: i, Sent: sent, Recv: sent + owd})
	}
	return arr
}

func TestCheckSchedule(t *testing.T) {
	k := newImpairLinks([]int{1, 2, 3, 4, 5})
	old, steps := k.schedBase(), k.sched.Steps
	// The jitter's mean is below the delay: compare with the plan's mean.
	nojit := func(l netem.Link) netem.Link { l.Jitter = 0; return l }
	old = nojit(old)
	steps = slices.Clone(steps)
	for i := range steps {
		steps[i].Link = nojit(steps[i].Link)
	}
	var b strings.Builder
	arr := schedArrivals(old, steps, 3*time.Millisecond, 1, 0.02)
	if f := checkSchedule(&b, "p5->p1", old, steps, arr, 0, 900*time.Millisecond, 0.02, nil); len(f) != 0 {
		t.Errorf("a good schedule: %q\n%s", f, b.String())
	}
	if !strings.Contains(b.String(), "first changed datagram sent 4ms after the instant") {
		t.Errorf("output:\n%s", b.String())
	}
	for name, c := range map[string]struct {
		arr  []arrival
		want string
	}{
		"delays 3% long": {schedArrivals(old, steps, 0, 1.03, 0.02), "off the plan's"},
		"late by 1.2 s":  {schedArrivals(old, steps, 1200*time.Millisecond, 1, 0.02), "no datagram saw the new delay"},
		"early":          {schedArrivals(old, steps, -10*time.Millisecond, 1, 0.02), "sent before the instant already saw the new delay"},
	} {
		f := checkSchedule(&b, "p5->p1", old, steps, c.arr, 0, 900*time.Millisecond, 0.02, nil)
		if !strings.Contains(strings.Join(f, "\n"), c.want) {
			t.Errorf("%s: failures %q, want %q", name, f, c.want)
		}
	}
}

func TestImpairPlan(t *testing.T) {
	ids := []int{1, 2, 3, 4, 5}
	k := newImpairLinks(ids)
	for _, base := range []bool{true, false} {
		p := k.plan(ids, base, 1, netem.DistPareto)
		if err := p.Validate(); err != nil {
			t.Fatalf("base %v: %v", base, err)
		}
	}
	p := k.plan(ids, false, 1, netem.DistPareto)
	if l, _ := p.Link(1, 2); l != k.owdAB || l.Jitter != 100*time.Microsecond {
		t.Errorf("p1->p2 = %+v", l)
	}
	if l, _ := p.Link(2, 1); l.Delay != 15*time.Millisecond || l.Jitter != 300*time.Microsecond {
		t.Errorf("p2->p1 = %+v", l)
	}
	if l, _ := p.LinkAt(5, 1, 400*time.Millisecond); l.Delay != 30*time.Millisecond {
		t.Errorf("p5->p1 at 400ms = %+v", l)
	}
	bad := k.plan(ids, false, 1.1, netem.DistNormal)
	if l, _ := bad.Link(1, 2); l.Delay != 5500*time.Microsecond || l.Dist != netem.DistNormal {
		t.Errorf("negative control p1->p2 = %+v", l)
	}
	if l, _ := p.Link(3, 5); l.Impaired() || l.Delay != 0 {
		t.Errorf("p3->p5 = %+v, want a bare link", l)
	}
}

func TestDatagram(t *testing.T) {
	b := make([]byte, owdSize)
	putDatagram(b, 12345, 1_700_000_000_123_456_789)
	seq, sent, ok := parseDatagram(b)
	if !ok || seq != 12345 || sent != 1_700_000_000_123_456_789 {
		t.Errorf("parseDatagram = %d, %d, %v", seq, sent, ok)
	}
	if _, _, ok := parseDatagram(b[:10]); ok {
		t.Error("a short datagram was accepted")
	}
	binary.BigEndian.PutUint64(b, 1<<40)
	if _, _, ok := parseDatagram(b); ok {
		t.Error("a huge sequence number was accepted")
	}
}

func TestRxDrops(t *testing.T) {
	oob := make([]byte, unix.CmsgSpace(4))
	binary.NativeEndian.PutUint64(oob, uint64(unix.CmsgLen(4)))
	binary.NativeEndian.PutUint32(oob[8:], unix.SOL_SOCKET)
	binary.NativeEndian.PutUint32(oob[12:], unix.SO_RXQ_OVFL)
	binary.NativeEndian.PutUint32(oob[unix.CmsgLen(0):], 17)
	if d, ok := rxDrops(oob); !ok || d != 17 {
		t.Errorf("rxDrops = %d, %v", d, ok)
	}
	if _, ok := rxDrops(nil); ok {
		t.Error("drops from nothing")
	}
}
