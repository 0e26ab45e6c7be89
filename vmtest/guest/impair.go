package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/topology"
)

// The impairments phase: the links' tolerances on kernel netem, measured with UDP
// datagrams between the lab's namespaces (udp.go), one-way, with the guest's one
// clock.
//
//   - One-way delays: a pair with different delays each way and the default jitter
//     (2 % Pareto); ≥10^4 datagrams each way; each direction's delivered delays
//     against the plan's distribution, Kolmogorov-Smirnov p > 0.01 (see owdCheck for
//     how the VM's own path is accounted for).
//   - Loss: random loss on one direction; the count lost within its 99 % binomial
//     interval.
//   - Rate: a rate with a queue; a saturating stream's throughput within 5 %.
//   - Schedule: netem.RunSchedule changes a link's delay twice during a stream; each
//     change seen within 2 % of the new delay and within one heartbeat of its
//     instant.
//
// Each check has a negative control computed from the same data (the check against
// a wrong plan must fail), and the guest's -delay-scale and -dist flags apply a wrong
// delay or distribution to the delay and schedule links, which must fail the run.
//
// The statistical checks report their verdict at the tolerances' level (KS p > 0.01,
// the 99 % interval), which a correct kernel misses one run in a hundred each; the run
// fails only beyond a level it misses one run in ten thousand (ksFailAlpha,
// lossFailConf), which the negative controls, and any delay off by 2 %, still miss by
// tens of orders of magnitude. A run is never repeated to pass.

// impairSpec sizes the phase.
type impairSpec struct {
	OWDSamples  int // datagrams each way, after the warm-up
	BaseSamples int // datagrams each way through the baseline's leaf (owdCheck)
	LossSamples int
	RateSamples int
}

// The tolerances, the levels at which a check fails the run, and the phase's settings.
const (
	ksAlpha        = 0.01
	ksFailAlpha    = 1e-4
	lossConf       = 0.99
	lossFailConf   = 0.9999
	rateTolerance  = 0.05
	schedTolerance = 0.02
	// heartbeat is the replicas' default heartbeat (replica.Config): a schedule's
	// change must be seen within one of its instant.
	heartbeat = time.Second
	// maxRelease bounds what netem's release (its timer, softirq and draw) may add to the
	// path: more would be a delay error the baseline must not hide.
	maxRelease = 50 * time.Microsecond
	// baseJitter is the jitter of the baseline's leaves: netem takes its jitter path
	// (a random draw, the table) but the draws stay within ±4 ns.
	baseJitter = time.Nanosecond
	// basePoints is how many quantiles of the baseline the KS expectation convolves.
	basePoints = 200
	// controlPoints is the same for the negative controls, which fail by far.
	controlPoints = 50
	warmup        = 20 // datagrams dropped at the start of a stream (ARP, cold caches)
	owdSize       = 64
	rateSize      = 1400
	// frameOverhead is what netem's rate counts beyond a UDP payload: the length of
	// the skb at the qdisc, Ethernet (14), IPv4 (20) and UDP (8) headers.
	frameOverhead = 14 + 20 + 8
)

// impairLinks is the phase's plan: every link of the lab without delay or
// impairment, but for the pairs under test.
type impairLinks struct {
	a, b, lossFrom, lossTo, rateFrom, rateTo, schedFrom, schedTo int
	owdAB, owdBA, loss, rate                                     netem.Link
	sched                                                        netem.LinkSchedule
}

func newImpairLinks(ids []int) impairLinks {
	jit := func(d time.Duration) time.Duration {
		return time.Duration(math.Round(float64(d) * netem.DefaultJitterPct / 100))
	}
	delay := func(from, to int, d time.Duration) netem.Link {
		return netem.Link{From: from, To: to, Delay: d, Jitter: jit(d), Dist: netem.DefaultDist}
	}
	k := impairLinks{
		a: ids[0], b: ids[1], lossFrom: ids[2], lossTo: ids[3], rateFrom: ids[3], rateTo: ids[4],
		schedFrom: ids[4], schedTo: ids[0],
	}
	k.owdAB = delay(k.a, k.b, 5*time.Millisecond)
	k.owdBA = delay(k.b, k.a, 15*time.Millisecond)
	k.loss = netem.Link{From: k.lossFrom, To: k.lossTo, Dist: netem.DefaultDist, LossPct: 10}
	k.rate = netem.Link{From: k.rateFrom, To: k.rateTo, Dist: netem.DefaultDist, RateBytesPerSec: 20e6 / 8, QueuePackets: 100}
	k.sched = netem.LinkSchedule{From: k.schedFrom, To: k.schedTo, Steps: []netem.Step{
		{At: 300 * time.Millisecond, Link: delay(k.schedFrom, k.schedTo, 30*time.Millisecond)},
		{At: 600 * time.Millisecond, Link: delay(k.schedFrom, k.schedTo, 5*time.Millisecond)},
	}}
	return k
}

// plan builds the phase's plan over ids. With base it has only the delays of a and
// b's links, with baseJitter (the baseline of owdCheck); otherwise the links under test, their delays
// scaled by scale and drawn from dist (negative controls; 1 and pareto expected).
func (k impairLinks) plan(ids []int, base bool, scale float64, dist string) netem.Plan {
	p := netem.Plan{Seed: 1, WindowBytes: netem.DefaultWindowBytes}
	bad := func(l netem.Link) netem.Link {
		l.Delay = time.Duration(float64(l.Delay) * scale)
		l.Jitter = time.Duration(float64(l.Jitter) * scale)
		l.Dist = dist
		return l
	}
	for _, from := range ids {
		for _, to := range ids {
			if from == to {
				continue
			}
			l := netem.Link{From: from, To: to, Dist: netem.DefaultDist}
			switch ft := [2]int{from, to}; {
			case base && ft == [2]int{k.a, k.b}:
				l.Delay, l.Jitter = k.owdAB.Delay, baseJitter
			case base && ft == [2]int{k.b, k.a}:
				l.Delay, l.Jitter = k.owdBA.Delay, baseJitter
			case base:
			case ft == [2]int{k.a, k.b}:
				l = bad(k.owdAB)
			case ft == [2]int{k.b, k.a}:
				l = bad(k.owdBA)
			case ft == [2]int{k.lossFrom, k.lossTo}:
				l = k.loss
			case ft == [2]int{k.rateFrom, k.rateTo}:
				l = k.rate
			case ft == [2]int{k.schedFrom, k.schedTo}:
				l = bad(k.owdAB) // 5 ms before the first step
				l.From, l.To = from, to
			}
			p.Links = append(p.Links, l)
		}
	}
	if !base {
		s := k.sched
		s.Steps = slices.Clone(s.Steps)
		for i := range s.Steps {
			s.Steps[i].Link = bad(s.Steps[i].Link)
		}
		p.Schedules = []netem.LinkSchedule{s}
	}
	return p
}

// schedBase is the scheduled link before its first step, as the checks expect it.
func (k impairLinks) schedBase() netem.Link {
	l := k.owdAB
	l.From, l.To = k.schedFrom, k.schedTo
	return l
}

// impairments runs the phase and returns its failures.
func impairments(ctx context.Context, out io.Writer, l *lab, topo *topology.Topology, c config, before map[int]string) (failures []string) {
	ids := topo.Servers()
	if len(ids) < 5 {
		return []string{fmt.Sprintf("impairments: the lab has %d servers, the phase needs 5", len(ids))}
	}
	s := c.impair
	k := newImpairLinks(ids)
	a, b := l.node(k.a), l.node(k.b)
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	defer func() {
		if err := clearAll(ctx, l, before); err != nil {
			fail("impairments: clear: %v", err)
		} else if len(failures) == 0 {
			fmt.Fprintf(out, "== impairments: cleared, every %s is back to: %s\n", dev, oneLine(before[l.nodes[0].id]))
		}
	}()
	apply := func(p netem.Plan) error {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("plan: %w", err)
		}
		for _, n := range l.nodes {
			if err := netem.Apply(ctx, target(l, n), p); err != nil {
				return fmt.Errorf("p%d: %w", n.id, err)
			}
		}
		return nil
	}
	// both streams a->b and b->a at once and returns the delays (ms) after the
	// warm-up: Poisson sends, 250 µs apart on average each way (see owdCheck).
	both := func(port, samples int) (ab, ba []float64, err error) {
		rs, err := poissonStreams(ctx, [][2]*node{{a, b}, {b, a}}, port, warmup+samples, owdSize, 250*time.Microsecond, 100*time.Millisecond, 1)
		if err != nil {
			return nil, nil, err
		}
		for i, r := range rs {
			var ds []float64
			for _, x := range r.Arrivals {
				if x.Seq >= warmup {
					ds = append(ds, x.OWD())
				}
			}
			if len(ds) < samples {
				from, to := k.a, k.b
				if i == 1 {
					from, to = to, from
				}
				return nil, nil, fmt.Errorf("%s: %d of %d datagrams arrived (socket drops %d)", pairName(from, to), len(ds), samples, r.RcvDrops)
			}
			if i == 0 {
				ab = ds
			} else {
				ba = ds
			}
		}
		return ab, ba, nil
	}
	t0 := time.Now()
	var laps []string
	lapT := t0
	lap := func(what string) {
		laps = append(laps, fmt.Sprintf("%s %v", what, time.Since(lapT).Round(time.Millisecond)))
		lapT = time.Now()
	}

	// The VM's path, one way: without netem, and through a leaf of the plan's delay
	// with baseJitter.
	rawAB, rawBA, err := both(9100, min(300, s.BaseSamples))
	if err != nil {
		return []string{"impairments: path without netem: " + err.Error()}
	}
	if err := apply(k.plan(ids, true, 1, "")); err != nil {
		return []string{"impairments: " + err.Error()}
	}
	baseAB, baseBA, err := both(9110, s.BaseSamples)
	if err != nil {
		return []string{"impairments: path through netem: " + err.Error()}
	}
	lap("paths")
	var pathMean float64
	for _, d := range []struct {
		link      netem.Link
		raw, base []float64
	}{{k.owdAB, rawAB, baseAB}, {k.owdBA, rawBA, baseBA}} {
		for i := range d.base {
			d.base[i] -= ms(d.link.Delay)
		}
		rs, bs := summarize(d.raw), summarize(d.base)
		pathMean += bs.Mean / 2
		release := bs.Median - rs.Median
		fmt.Fprintf(out, "== impairments: VM path %s, µs: without netem median %.1f (p5 %.1f, p95 %.1f, %d datagrams); through a leaf of %v with %v jitter, minus %v: median %.1f (p5 %.1f, p95 %.1f, %d); netem's release adds %.1f\n",
			pairName(d.link.From, d.link.To), 1e3*rs.Median, 1e3*rs.P5, 1e3*rs.P95, rs.N, d.link.Delay, baseJitter, d.link.Delay, 1e3*bs.Median, 1e3*bs.P5, 1e3*bs.P95, bs.N, 1e3*release)
		if math.Abs(release) > ms(maxRelease) {
			fail("%s: a leaf of %v with %v jitter delivers %.1f µs off %v plus the path without netem (allowed %v)", pairName(d.link.From, d.link.To), d.link.Delay, baseJitter, 1e3*release, d.link.Delay, maxRelease)
		}
	}

	if err := apply(k.plan(ids, false, c.delayScale, c.dist)); err != nil {
		return append(failures, "impairments: "+err.Error())
	}
	if sh, err := netem.Show(ctx, target(l, a)); err == nil {
		fmt.Fprintf(out, "== impairments: netem.Show p%d:\n%s", k.a, sh)
	}

	// 1. One-way delays, each direction against the plan.
	ab, ba, err := both(9120, s.OWDSamples)
	if err != nil {
		return append(failures, "impairments: one-way delays: "+err.Error())
	}
	lap("one-way delays")
	for _, d := range []struct {
		link     netem.Link
		got, bas []float64
	}{{k.owdAB, ab, baseAB}, {k.owdBA, ba, baseBA}} {
		failures = append(failures, owdCheck(out, d.link, d.got, d.bas)...)
	}
	lap("KS")

	// 2. Loss.
	failures = append(failures, lossCheck(ctx, out, l.node(k.lossFrom), l.node(k.lossTo), k.loss, s.LossSamples)...)
	lap("loss")
	// 3. Rate.
	failures = append(failures, rateCheck(ctx, out, l.node(k.rateFrom), l.node(k.rateTo), k.rate, s.RateSamples)...)
	lap("rate")
	// 4. Schedule.
	failures = append(failures, schedCheck(ctx, out, l, k, k.plan(ids, false, c.delayScale, c.dist), pathMean)...)
	lap("schedule")
	fmt.Fprintf(out, "== impairments: %d failures; guest time %v (%s)\n", len(failures), time.Since(t0).Round(time.Millisecond), joinNotes(laps))
	return failures
}

// owdCheck tests the one-way delays got (ms) of link l against its plan.
//
// What is compared: a delivered delay is the delay netem draws plus the VM's own
// path (the send system call, the bridge, the receive stamp). Through a netem leaf
// the path also has netem's release (the leaf's timer, the softirq that sends the
// packet) and, with jitter, its random draw: under -icount about 4 µs more than the
// path without netem for a leaf without jitter, 17 µs with jitter (the draw's
// get_random_u32 on a 6.1 kernel), a difference the test detects against a 100 µs
// jitter (Pareto's lowest half lies within 35 µs here). So each direction's path is
// measured through a leaf of the plan's own delay and 1 ns of jitter (netem's jitter
// path, draws within ±4 ns), minus that delay: the same release, the same draw, the
// same traffic (both ways at once, Poisson sends at the same mean rate, so each
// release finds the CPU busy or idle with the same odds in both: PASTA). That
// baseline is checked against the path without netem (maxRelease: the leaf must
// deliver its delay to within 50 µs), so it cannot hide a delay error; what the KS
// test then checks is the jitter's distribution around the delay. The plan's
// prediction is the distribution of P + B, P from netem's table exactly as the
// kernel scales it (planDelays) and B independently from the baseline's samples: a
// convolution, not a shift by the baseline's median, since the path's spread (p5 to
// p95 about 20 µs) is not negligible beside the jitter's lower tail. The test is
// Kolmogorov-Smirnov of the samples against that convolution; since the baseline is
// itself a sample of m, the p-value uses the two-sample effective size nm/(n+m),
// which is conservative.
func owdCheck(out io.Writer, l netem.Link, got, baseSamples []float64) []string {
	name := pairName(l.From, l.To)
	plan, err := planDelays(l)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", name, err)}
	}
	base := slices.Clone(baseSamples)
	slices.Sort(base)
	path := summarize(base).Median
	bq := quantilePoints(base, basePoints)
	n, m := len(got), len(base)
	ne := float64(n) * float64(m) / float64(n+m)
	xs := slices.Clone(got)
	dist := ksConv(xs, plan, bq)
	p := ksPValue(dist, ne)
	sum := summarize(xs)
	ps := summarize(plan)
	var failures []string
	verdict := "ok"
	if !(p > ksAlpha) {
		verdict = fmt.Sprintf("outside the tolerance (p <= %v), within the failing level (p > %v)", ksAlpha, ksFailAlpha)
	}
	if !(p > ksFailAlpha) {
		verdict = "FAIL"
		failures = append(failures, fmt.Sprintf("%s: one-way delays (plan %v, jitter %v %s) fail Kolmogorov-Smirnov: D %.4f, p %s <= %v (n %d, baseline m %d); mean %+.1f µs, median %+.1f µs off the plan's",
			name, l.Delay, l.Jitter, l.Dist, dist, fmtP(p), ksFailAlpha, n, m, 1e3*(sum.Mean-path-ps.Mean), 1e3*(sum.Median-path-ps.Median)))
	}
	fmt.Fprintf(out, "== one-way delay %s, plan %v + %v %s jitter: %d datagrams, minus the path's median %.1f µs: mean %.4f ms (plan %.4f), median %.4f (%.4f), p5 %.4f (%.4f), p95 %.4f (%.4f); KS D %.4f, p %s (n %d, m %d): %s\n",
		name, l.Delay, l.Jitter, l.Dist, n, 1e3*path, sum.Mean-path, ps.Mean, sum.Median-path, ps.Median, sum.P5-path, ps.P5, sum.P95-path, ps.P95, dist, fmtP(p), n, m, verdict)

	// Negative controls: the same samples against a delay 2 % off, and against
	// normal jitter of the same size, must fail.
	var notes []string
	for _, w := range []struct {
		what string
		link netem.Link
	}{
		{"delay x1.02", func() netem.Link { x := l; x.Delay = x.Delay * 102 / 100; return x }()},
		{"normal jitter", func() netem.Link { x := l; x.Dist = netem.DistNormal; return x }()},
	} {
		wp, err := planDelays(w.link)
		if err != nil {
			return append(failures, err.Error())
		}
		d := ksConv(xs, wp, quantilePoints(base, controlPoints))
		q := ksPValue(d, ne)
		notes = append(notes, fmt.Sprintf("against %s D %.4f p %s", w.what, d, fmtP(q)))
		if q > ksAlpha {
			failures = append(failures, fmt.Sprintf("%s: negative control: the delays pass against %s too (D %.4f, p %s): the test cannot tell", name, w.what, d, fmtP(q)))
		}
	}
	fmt.Fprintf(out, "   negative controls (must fail): %s\n", joinNotes(notes))
	return failures
}

func joinNotes(ns []string) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += "; "
		}
		s += n
	}
	return s
}

// lossCheck streams samples datagrams over the lossy link and checks the count lost.
func lossCheck(ctx context.Context, out io.Writer, from, to *node, l netem.Link, samples int) []string {
	name := pairName(l.From, l.To)
	drops0 := netemDrops(from)
	r, err := udpStream(ctx, from, to, udpSpec{Port: 9130, Count: warmup + samples, Size: owdSize, Burst: 50, Gap: time.Millisecond, Grace: 200 * time.Millisecond})
	if err != nil {
		return []string{fmt.Sprintf("%s: loss stream: %v", name, err)}
	}
	got := 0
	for _, x := range r.Arrivals {
		if x.Seq >= warmup {
			got++
		}
	}
	sent := r.Sent - warmup
	fmt.Fprintf(out, "   the netem leaves of p%d counted %d drops during the stream (%d datagrams sent with the warm-up, %d received)\n",
		from.id, netemDrops(from)-drops0, r.Sent, len(r.Arrivals))
	return checkLoss(out, name, l.LossPct, sent, sent-got, r.RcvDrops, r.Dups)
}

// netemDrops sums the drop counters of the netem qdiscs on n's eth0 (-1 if unknown).
func netemDrops(n *node) int64 {
	link, err := n.h.LinkByName(dev)
	if err != nil {
		return -1
	}
	qs, err := n.h.QdiscList(link)
	if err != nil {
		return -1
	}
	var d int64
	for _, q := range qs {
		if st := q.Attrs().Statistics; q.Type() == "netem" && st != nil && st.Queue != nil {
			d += int64(st.Queue.Drops)
		}
	}
	return d
}

// checkLoss checks lost of sent against a loss of pct percent.
func checkLoss(out io.Writer, name string, pct float64, sent, lost int, rcvDrops uint32, dups int) []string {
	var failures []string
	lo, hi := binomialInterval(sent, pct/100, lossConf)
	flo, fhi := binomialInterval(sent, pct/100, lossFailConf)
	verdict := "ok"
	if lost < lo || lost > hi {
		verdict = fmt.Sprintf("outside the tolerance, within the 99.99%% interval [%d, %d]", flo, fhi)
	}
	if lost < flo || lost > fhi {
		verdict = "FAIL"
		failures = append(failures, fmt.Sprintf("%s: %d of %d datagrams lost (%.2f%%), outside the 99.99%% binomial interval [%d, %d] of %v%% loss (%+d from its nearer end)",
			name, lost, sent, 100*float64(lost)/float64(sent), flo, fhi, pct, lost-min(max(lost, flo), fhi)))
	}
	if rcvDrops > 0 || dups > 0 {
		verdict = "FAIL"
		failures = append(failures, fmt.Sprintf("%s: the receiving socket dropped %d and saw %d duplicates: not the link's loss", name, rcvDrops, dups))
	}
	wrong := pct * 1.3
	wlo, whi := binomialInterval(sent, wrong/100, lossFailConf)
	control := "fails, as it must"
	if lost >= wlo && lost <= whi {
		control = "PASSES: the check cannot tell"
		failures = append(failures, fmt.Sprintf("%s: negative control: %d lost is inside %v%%'s interval [%d, %d] too", name, lost, wrong, wlo, whi))
	}
	fmt.Fprintf(out, "== loss %s, plan %v%%: %d sent, %d lost (%.2f%%), 99%% binomial interval [%d, %d]: %s; against %v%% [%d, %d]: %s\n",
		name, pct, sent, lost, 100*float64(lost)/float64(sent), lo, hi, verdict, wrong, wlo, whi, control)
	return failures
}

// rateCheck saturates the rate-limited link and checks the throughput at the
// receiver, counted in the bytes netem's rate counts (the frame: payload plus
// frameOverhead), between the first and the last arrival after the warm-up.
func rateCheck(ctx context.Context, out io.Writer, from, to *node, l netem.Link, samples int) []string {
	name := pairName(l.From, l.To)
	// The sender paces itself at 1.25 times the rate, in bursts every 5 ms, so the
	// queue fills and never drains, and the excess is dropped at the queue (netem
	// orphans a delayed skb, so the socket's send buffer never holds the sender).
	const gap = 5 * time.Millisecond
	burst := int(math.Ceil(1.25 * float64(l.RateBytesPerSec) * gap.Seconds() / (rateSize + frameOverhead)))
	r, err := udpStream(ctx, from, to, udpSpec{Port: 9140, Count: warmup + samples, Size: rateSize, Burst: burst, Gap: gap, Grace: 500 * time.Millisecond})
	if err != nil {
		return []string{fmt.Sprintf("%s: rate stream: %v", name, err)}
	}
	var recv []int64
	for _, x := range r.Arrivals {
		if x.Seq >= warmup {
			recv = append(recv, x.Recv)
		}
	}
	slices.Sort(recv)
	if len(recv) < samples/2 { // 1/1.25 of them, and the queue's
		return []string{fmt.Sprintf("%s: %d of %d datagrams arrived at the rate's queue's far end", name, len(recv), samples)}
	}
	secs := float64(recv[len(recv)-1]-recv[0]) / 1e9
	bytesPerSec := float64(len(recv)-1) * (rateSize + frameOverhead) / secs
	return checkRate(out, name, float64(l.RateBytesPerSec), bytesPerSec, len(recv), r.Sent-warmup, l.QueuePackets)
}

func checkRate(out io.Writer, name string, want, got float64, delivered, sent int, queue uint32) []string {
	var failures []string
	e := (got - want) / want
	verdict := "ok"
	if math.Abs(e) > rateTolerance {
		verdict = "FAIL"
		failures = append(failures, fmt.Sprintf("%s: throughput %.3f Mbit/s is %+.2f%% off the rate %.3f Mbit/s (tolerance %.0f%%)",
			name, got*8/1e6, 100*e, want*8/1e6, 100*rateTolerance))
	}
	wrong := want * 1.1
	control := "fails, as it must"
	if math.Abs(got-wrong)/wrong <= rateTolerance {
		control = "PASSES: the check cannot tell"
		failures = append(failures, fmt.Sprintf("%s: negative control: %.3f Mbit/s is within %.0f%% of %.3f Mbit/s too", name, got*8/1e6, 100*rateTolerance, wrong*8/1e6))
	}
	fmt.Fprintf(out, "== rate %s, plan %.3f Mbit/s, queue %d packets: %d of %d datagrams of %d bytes delivered (the rest dropped at the queue), throughput %.3f Mbit/s (%+.2f%%): %s; against %.3f Mbit/s: %s\n",
		name, want*8/1e6, queue, delivered, sent, rateSize, got*8/1e6, 100*e, verdict, wrong*8/1e6, control)
	return failures
}

// schedCheck streams over the scheduled link while netem.RunSchedule plays its steps,
// and checks that each step's new delay is seen within one heartbeat of its instant
// and within 2 % of the plan. path is the VM's mean one-way path (through netem) in
// ms, subtracted from every delay.
func schedCheck(ctx context.Context, out io.Writer, l *lab, k impairLinks, applied netem.Plan, path float64) []string {
	from, to := l.node(k.schedFrom), l.node(k.schedTo)
	name := pairName(k.schedFrom, k.schedTo)
	const gap = 2 * time.Millisecond
	last := k.sched.Steps[len(k.sched.Steps)-1].At
	end := last + 300*time.Millisecond
	start := time.Now().Add(50 * time.Millisecond)
	var instants []netem.Instant
	var serr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		serr = netem.RunSchedule(ctx, target(l, from), applied, start, func(in netem.Instant) { instants = append(instants, in) })
	}()
	r, err := udpStream(ctx, from, to, udpSpec{Port: 9150, Count: int(end / gap), Size: owdSize, Burst: 1, Gap: gap, Start: start, Grace: 200 * time.Millisecond})
	<-done
	if err != nil {
		return []string{fmt.Sprintf("%s: schedule stream: %v", name, err)}
	}
	if serr != nil {
		return []string{fmt.Sprintf("%s: RunSchedule: %v", name, serr)}
	}
	var failures []string
	for _, in := range instants {
		if in.Err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", name, in.Err))
		}
	}
	arr := slices.Clone(r.Arrivals)
	slices.SortFunc(arr, func(x, y arrival) int { return int(x.Sent - y.Sent) })
	var applyLag []time.Duration
	for _, in := range instants {
		applyLag = append(applyLag, in.Applied.Sub(start.Add(in.At)))
	}
	return append(failures, checkSchedule(out, name, k.schedBase(), k.sched.Steps, arr, start.UnixNano(), end, path, applyLag)...)
}

// checkSchedule checks arrivals (sorted by send time) against a schedule from old
// through steps, counted from start (unix ns).
func checkSchedule(out io.Writer, name string, old netem.Link, steps []netem.Step, arr []arrival, start int64, end time.Duration, path float64, applyLag []time.Duration) []string {
	var failures []string
	const slack = time.Millisecond // a send stamp may precede its enqueue by a little
	prev := start                  // since when the previous state was seen
	for i, st := range steps {
		next := end
		if i+1 < len(steps) {
			next = steps[i+1].At
		}
		from, until := start+int64(st.At-slack), start+int64(next-slack)
		oldMean, newMean := planMean(old), planMean(st.Link)
		changed := func(x arrival) bool {
			d := x.OWD() - path
			return math.Abs(d-newMean) < math.Abs(d-oldMean)
		}
		first, flaps, early := -1, 0, 0
		var after []float64
		for j, x := range arr {
			if x.Sent >= prev && x.Sent < from && changed(x) {
				early++
			}
			if x.Sent < from || x.Sent >= until {
				continue
			}
			if first < 0 {
				if changed(x) {
					first = j
				} else {
					continue
				}
			}
			if !changed(x) {
				flaps++
			}
			after = append(after, x.OWD()-path)
		}
		what := fmt.Sprintf("%s: step %d at %v (%v -> %v)", name, i+1, st.At, old.Delay, st.Link.Delay)
		if first < 0 {
			failures = append(failures, what+": no datagram saw the new delay")
			fmt.Fprintf(out, "== schedule %s: FAIL\n", what)
			old, prev = st.Link, from
			continue
		}
		lag := time.Duration(arr[first].Sent - start - int64(st.At))
		got := mean(after)
		e := (got - newMean) / newMean
		eOld := (got - oldMean) / oldMean
		verdict := "ok"
		if lag < -slack || lag > heartbeat {
			verdict = "FAIL"
			failures = append(failures, fmt.Sprintf("%s: first changed datagram sent %v after the instant (allowed [%v, %v])", what, lag, -slack, heartbeat))
		}
		if early > 0 {
			verdict = "FAIL"
			failures = append(failures, fmt.Sprintf("%s: %d datagrams sent before the instant already saw the new delay", what, early))
		}
		if math.Abs(e) > schedTolerance {
			verdict = "FAIL"
			failures = append(failures, fmt.Sprintf("%s: mean delay after the change %.4f ms is %+.2f%% off the plan's %.4f ms (tolerance %.0f%%)", what, got, 100*e, newMean, 100*schedTolerance))
		}
		if flaps > 0 {
			verdict = "FAIL"
			failures = append(failures, fmt.Sprintf("%s: %d datagrams after the first changed one still saw the old delay", what, flaps))
		}
		control := "fails, as it must"
		if math.Abs(eOld) <= schedTolerance {
			control = "PASSES: the check cannot tell"
			failures = append(failures, fmt.Sprintf("%s: negative control: the mean is within %.0f%% of the old delay too", what, 100*schedTolerance))
		}
		applied := ""
		if i < len(applyLag) {
			applied = fmt.Sprintf(", netlink change acknowledged %v after it", applyLag[i].Round(time.Microsecond))
		}
		fmt.Fprintf(out, "== schedule %s: first changed datagram sent %v after the instant (heartbeat %v)%s; %d datagrams after it, mean %.4f ms, plan %.4f (%+.2f%%): %s; against the old delay %+.1f%%: %s\n",
			what, lag.Round(time.Microsecond), heartbeat, applied, len(after), got, newMean, 100*e, verdict, 100*eOld, control)
		old, prev = st.Link, arr[first].Sent
	}
	return failures
}

// planMean is the mean delay of link l in ms, over netem's distribution.
func planMean(l netem.Link) float64 {
	d, err := planDelays(l)
	if err != nil {
		return ms(l.Delay)
	}
	return mean(d)
}
