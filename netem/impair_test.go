package netem

import (
	"math"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The user-space link against its plan, on virtual time (DelayLine.ScheduleNS takes
// the send instants): the one-way delay distribution (Kolmogorov-Smirnov), the rate,
// loss as a TCP stream sees it, the queue, and a schedule's change.

// ksP is the one-sample Kolmogorov-Smirnov test of sample against the discrete
// distribution ref (equally likely values): the statistic D = sup |F_n - F| over every
// value either holds, and its asymptotic p-value (Stephens' small-n correction).
func ksP(sample, ref []float64) (d, p float64) {
	sample, ref = slices.Sorted(slices.Values(sample)), slices.Sorted(slices.Values(ref))
	cdf := func(xs []float64, v float64) float64 {
		return float64(sort.Search(len(xs), func(i int) bool { return xs[i] > v })) / float64(len(xs))
	}
	for _, v := range append(slices.Clone(sample), ref...) {
		d = max(d, math.Abs(cdf(sample, v)-cdf(ref, v)))
	}
	n := math.Sqrt(float64(len(sample)))
	lambda := (n + 0.12 + 0.11/n) * d
	for k := 1; k <= 100; k++ {
		p += 2 * math.Pow(-1, float64(k-1)) * math.Exp(-2*float64(k*k)*lambda*lambda)
	}
	return d, min(max(p, 0), 1)
}

// planDelays is the plan's one-way delay distribution of l: netem's tabledist over
// every table entry (each equally likely), in ms.
func planDelays(t *testing.T, l Link) []float64 {
	tab, err := Table(l.Dist)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(tab))
	for i := range tab {
		out[i] = float64(max(tabledist(int64(l.Delay), int32(l.Jitter), uint32(i), tab), 0)) / 1e6
	}
	return out
}

const samples = 20000

// delays sends samples small messages a second apart (no queueing, no reordering
// clip) from t0 on and returns their one-way delays in ms.
func delays(d *DelayLine, t0 int64, size int) []float64 {
	out := make([]float64, 0, samples)
	for i := range samples {
		sent := t0 + int64(i)*int64(time.Second)
		_, at := d.ScheduleNS(sent, size)
		out = append(out, float64(at-sent)/1e6)
	}
	return out
}

func TestDelayLineDistributionKS(t *testing.T) {
	for _, l := range []Link{
		{From: 1, To: 2, Delay: 38530 * time.Microsecond, Jitter: 770600 * time.Nanosecond, Dist: DistPareto},
		{From: 2, To: 1, Delay: 12 * time.Millisecond, Jitter: 3 * time.Millisecond, Dist: DistNormal},
		{From: 1, To: 2, Delay: 5 * time.Millisecond, Jitter: time.Millisecond, Dist: DistParetoNormal},
		{From: 1, To: 2, Delay: 30 * time.Millisecond, Jitter: 600 * time.Microsecond, Dist: DistPareto,
			RateBytesPerSec: 100e6 / 8, QueuePackets: 100, LossPct: 0}, // rate: a constant serialization
	} {
		d, err := NewDelayLine(l, 0, LinkSeed(1, l.From, l.To)) // as Plan.DelayLine seeds it
		if err != nil {
			t.Fatal(err)
		}
		got := delays(d, 0, 100)
		ser := 100 / float64(max(l.RateBytesPerSec, 1)) * 1e3
		if l.RateBytesPerSec == 0 {
			ser = 0
		}
		ref := planDelays(t, l)
		for i := range ref {
			ref[i] += ser
		}
		if D, p := ksP(got, ref); p <= 0.01 {
			t.Errorf("%s %v/%v: KS D=%.4f p=%.4f over %d delays, want p > 0.01", l.Dist, l.Delay, l.Jitter, D, p, len(got))
		}
	}
	// The test can tell: a delay 2 % off the plan fails it.
	l := Link{From: 1, To: 2, Delay: 20 * time.Millisecond, Jitter: 400 * time.Microsecond, Dist: DistPareto}
	d, _ := NewDelayLine(l, 0, LinkSeed(1, l.From, l.To))
	got := delays(d, 0, 100)
	l.Delay = 20400 * time.Microsecond
	if _, p := ksP(got, planDelays(t, l)); p > 0.01 {
		t.Errorf("KS accepts a delay 2%% off: p=%.4f", p)
	}
}

// TestDelayLineRate: a bulk transfer through a rate-limited link runs at the rate
// (within 5 %), with or without a queue, and the queue caps the stream's window at
// rate·RTT + queue (what it keeps in flight when the socket's window is larger).
func TestDelayLineRate(t *testing.T) {
	for _, tc := range []struct {
		rate   uint64 // bits/s
		queue  uint32 // packets
		window int
		want   float64 // bytes/s
	}{
		{100e6, 0, 0, 100e6 / 8},
		{100e6, 200, 0, 100e6 / 8},
		{1e9, 0, 64 << 20, 1e9 / 8},
		{1e9, 1000, 64 << 20, 1e9 / 8},
		// 10 Gbit/s over a 40 ms RTT needs a 50 MB window: the default 4 MiB one
		// carries 4 MiB per RTT.
		{10e9, 1000, 0, DefaultWindowBytes / 0.040},
	} {
		l := Link{From: 1, To: 2, Delay: 20 * time.Millisecond, Dist: DistPareto,
			RateBytesPerSec: tc.rate / 8, QueuePackets: tc.queue}
		d, err := NewDelayLine(l, tc.window, 1)
		if err != nil {
			t.Fatal(err)
		}
		const msg, total = 64 << 10, 2 << 30
		var first, last int64 = -1, 0
		for range total / msg {
			dep, at := d.ScheduleNS(0, msg)
			if first < 0 {
				first = dep
			}
			last = at
		}
		// The transfer takes (total - what the first round trip carries)/throughput plus
		// one delay: measure the steady throughput over the whole transfer.
		got := float64(total) / (float64(last-int64(l.Delay)) / 1e9)
		if math.Abs(got/tc.want-1) > 0.05 {
			t.Errorf("rate %d bit/s queue %d: %.4g B/s, want %.4g (within 5%%)", tc.rate, tc.queue, got, tc.want)
		}
		if tc.queue > 0 {
			w := tc.window
			if w == 0 {
				w = DefaultWindowBytes
			}
			want := min(float64(w), float64(tc.rate)/8*0.040+float64(tc.queue)*1500)
			if d.window != want {
				t.Errorf("rate %d bit/s queue %d: window %.0f, want %.0f", tc.rate, tc.queue, d.window, want)
			}
		}
	}
}

// TestDelayLineLoss: the share of lost segments is within the 99 % binomial interval
// of the plan's loss, each lost segment costs its message one RTO, and a
// Gilbert-Elliott link loses its stationary share.
func TestDelayLineLoss(t *testing.T) {
	l := Link{From: 1, To: 2, Delay: 10 * time.Millisecond, Dist: DistPareto, LossPct: 2}
	d, err := NewDelayLine(l, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100000
	late := 0
	for i := range n {
		sent := int64(i) * int64(time.Second)
		_, at := d.ScheduleNS(sent, 1000) // one segment
		switch at - sent {
		case int64(l.Delay):
		case int64(l.Delay + minRTO), int64(l.Delay + 3*minRTO), int64(l.Delay + 7*minRTO):
			late++
		default:
			t.Fatalf("message %d: delay %v, want the delay plus 0, 1, 3 or 7 RTOs", i, time.Duration(at-sent))
		}
	}
	p := l.LossPct / 100
	half := 2.576 * math.Sqrt(p*(1-p)/float64(d.Segments))
	if got := float64(d.Lost) / float64(d.Segments); math.Abs(got-p) > half {
		t.Errorf("lost %d of %d segments (%.4f); want %.4f ± %.4f (99%%)", d.Lost, d.Segments, got, p, half)
	}
	// Messages late by a retransmission: lost first tries, one per message.
	if got := float64(late) / n; math.Abs(got-p) > 2.576*math.Sqrt(p*(1-p)/n) {
		t.Errorf("%d of %d messages retransmitted (%.4f), want %.4f", late, n, got, p)
	}

	ge := GEModel{P: 1, R: 20, OneMinusH: 80, OneMinusK: 0.1}
	g, err := NewDelayLine(Link{From: 1, To: 2, Delay: 10 * time.Millisecond, Dist: DistPareto, LossGE: ge}, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000000 {
		g.ScheduleNS(int64(i)*int64(time.Second), 1000)
	}
	// Losses come in bursts (mean 1/r segments), so the binomial interval is widened
	// by the burst length.
	want := ge.MeanLoss() / 100
	half = 2.576 * math.Sqrt(want*(1-want)/float64(g.Segments)*(100/ge.R))
	if got := float64(g.Lost) / float64(g.Segments); math.Abs(got-want) > half {
		t.Errorf("gemodel lost %.5f of segments, want %.5f ± %.5f", got, want, half)
	}
}

// TestDelayLineSchedule: a link whose RTT moves from 20 ms to 80 ms and back delivers
// each message with the delay in force when it was sent: the mean within 2 % of the
// plan, changed within one heartbeat (1 s) of the instant.
func TestDelayLineSchedule(t *testing.T) {
	base := Link{From: 1, To: 2, Delay: 10 * time.Millisecond, Jitter: 200 * time.Microsecond, Dist: DistPareto}
	up, down := base, base
	up.Delay, up.Jitter = 40*time.Millisecond, 800*time.Microsecond
	p := Plan{Links: []Link{base, {From: 2, To: 1, Delay: 10 * time.Millisecond, Dist: DistPareto}},
		Schedules: []LinkSchedule{{From: 1, To: 2, Steps: []Step{{At: 100 * time.Second, Link: up}, {At: 200 * time.Second, Link: down}}}}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := p.DelayLine(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	const start = int64(5 * time.Second) // the run starts 5 s into the line's clock
	d.SetStart(start)
	const every = 10 * time.Millisecond
	var sum [3]float64
	var cnt [3]int
	firstUp, firstDown := time.Duration(-1), time.Duration(-1)
	for i := range 30000 {
		at := time.Duration(i) * every
		sent := start + int64(at)
		_, arr := d.ScheduleNS(sent, 100)
		ms := float64(arr-sent) / 1e6
		phase := 0
		switch {
		case at >= 200*time.Second:
			phase = 2
		case at >= 100*time.Second:
			phase = 1
		}
		if at%time.Second > 0 && at/time.Second%100 == 0 {
			continue // the second after each instant: in-order delivery may still hold a message
		}
		sum[phase] += ms
		cnt[phase]++
		if firstUp < 0 && ms > 30 {
			firstUp = at
		}
		if firstUp >= 0 && firstDown < 0 && at > firstUp && ms < 20 {
			firstDown = at
		}
	}
	for i, want := range []float64{10, 40, 10} {
		if got := sum[i] / float64(cnt[i]); math.Abs(got/want-1) > 0.02 {
			t.Errorf("phase %d: mean delay %.3f ms, want %.1f within 2%%", i, got, want)
		}
	}
	for _, c := range []struct{ got, want time.Duration }{{firstUp, 100 * time.Second}, {firstDown, 200 * time.Second}} {
		if c.got < c.want || c.got > c.want+time.Second {
			t.Errorf("change seen at %v, want within one heartbeat (1s) after %v", c.got, c.want)
		}
	}
}

func TestUserSpaceRefuses(t *testing.T) {
	for _, l := range []Link{
		{From: 1, To: 2, Delay: time.Millisecond, Dist: DistPareto, DuplicatePct: 1},
		{From: 1, To: 2, Delay: time.Millisecond, Dist: DistPareto, ReorderPct: 1},
		{From: 1, To: 2, Delay: time.Millisecond, Dist: DistPareto, LossPct: 1, LossCorrPct: 25},
	} {
		if _, err := NewDelayLine(l, 0, 1); err == nil {
			t.Errorf("%+v: a user-space line accepted it", l)
		}
	}
}

func TestPlanSchedules(t *testing.T) {
	a := Link{From: 1, To: 2, Delay: time.Millisecond, Dist: DistPareto}
	b := Link{From: 2, To: 1, Delay: time.Millisecond, Dist: DistPareto}
	late := a
	late.Delay = 5 * time.Millisecond
	for _, tc := range []struct {
		s    []LinkSchedule
		want string
	}{
		{[]LinkSchedule{{From: 1, To: 3, Steps: []Step{{At: 1, Link: a}}}}, "no link p1->p3"},
		{[]LinkSchedule{{From: 1, To: 2, Steps: []Step{{At: 2, Link: a}, {At: 1, Link: late}}}}, "not after the previous step"},
		{[]LinkSchedule{{From: 1, To: 2, Steps: []Step{{At: 1, Link: b}}}}, "link p2->p1 in the schedule of p1->p2"},
		{[]LinkSchedule{{From: 1, To: 2}}, "no steps"},
	} {
		p := Plan{Links: []Link{a, b}, Schedules: tc.s}
		if err := p.Validate(); err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.want)
		}
	}
	p := Plan{Links: []Link{a, b}, Schedules: []LinkSchedule{{From: 1, To: 2, Steps: []Step{{At: time.Second, Link: late}}}}}
	if got := p.At(2 * time.Second).Links[0].Delay; got != 5*time.Millisecond {
		t.Errorf("At(2s): %v", got)
	}
	if got := p.At(0).Links[0].Delay; got != time.Millisecond {
		t.Errorf("At(0): %v", got)
	}
	if got := p.Instants(); len(got) != 1 || got[0] != time.Second {
		t.Errorf("instants %v", got)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestCutImpaired: a cut drops everything also on a link with a loss model or a
// schedule, and the cut plan stays valid.
func TestCutImpaired(t *testing.T) {
	a := Link{From: 1, To: 2, Delay: time.Millisecond, Dist: DistPareto, LossGE: GEModel{P: 1, R: 10, OneMinusH: 50}}
	b := Link{From: 2, To: 1, Delay: time.Millisecond, Dist: DistPareto, LossPct: 1, LossCorrPct: 20}
	later := a
	later.Delay = 9 * time.Millisecond
	p := Plan{Links: []Link{a, b}, Schedules: []LinkSchedule{{From: 1, To: 2, Steps: []Step{{At: time.Second, Link: later}}}}}
	q := p.Cut([][2]int{{1, 2}})
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{0, 2 * time.Second} {
		for _, l := range q.At(at).Links {
			if l.LossPct != 100 || !l.LossGE.IsZero() {
				t.Errorf("at %v: %+v not cut", at, l)
			}
		}
	}
	if p.Schedules[0].Steps[0].Link.LossPct != 0 {
		t.Error("Cut changed the plan it was given")
	}
}

// TestKernelLeavesCarryImpairments: on each sender's egress, links that differ in an
// impairment get their own netem leaf, with the link's one-way delay (not the reverse
// direction's), loss model, duplicate, reorder with tc's default gap, and queue.
func TestKernelLeavesCarryImpairments(t *testing.T) {
	base := Link{From: 1, Delay: 10 * time.Millisecond, Jitter: 200 * time.Microsecond, Dist: DistPareto}
	to2, to3, to4 := base, base, base
	to2.To, to3.To, to4.To = 2, 3, 4
	to3.LossGE = GEModel{P: 1, R: 10, OneMinusH: 70, OneMinusK: 0.1}
	to4.DuplicatePct, to4.ReorderPct, to4.QueuePackets = 1, 5, 300
	var links []Link
	for _, l := range []Link{to2, to3, to4} {
		links = append(links, l)
	}
	for _, a := range []int{2, 3, 4} {
		for _, b := range []int{1, 2, 3, 4} {
			if a != b {
				links = append(links, Link{From: a, To: b, Delay: 30 * time.Millisecond, Dist: DistPareto})
			}
		}
	}
	p := Plan{Links: links, Seed: 1}
	addrs := map[int]netip.Addr{}
	for i := 1; i <= 4; i++ {
		addrs[i] = netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})
	}
	s, err := spec(Target{Self: 1, Addrs: addrs}, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Leaves) != 3 {
		t.Fatalf("%d leaves, want 3 (one per distinct link)", len(s.Leaves))
	}
	byServer := map[int]netemParams{}
	for _, l := range s.Leaves {
		for _, id := range l.Servers {
			byServer[id] = l.Params
		}
	}
	if p2 := byServer[2]; p2.Latency != 10*time.Millisecond || p2.GE != nil || p2.Duplicate != 0 {
		t.Errorf("p1->p2 leaf %+v", p2)
	}
	if p3 := byServer[3]; p3.GE == nil || p3.GE[0] != scaled(1) || p3.GE[2] != math.MaxUint32-scaled(70) {
		t.Errorf("p1->p3 leaf %+v", p3)
	}
	if p4 := byServer[4]; p4.Duplicate != scaled(1) || p4.Reorder != scaled(5) || p4.Gap != 1 || p4.Limit != 300 {
		t.Errorf("p1->p4 leaf %+v", p4)
	}
}
