// Command guest is the program the VM test runs inside its VM (as root, on a kernel
// with sch_netem): it builds a shipped experiment's layout in network namespaces,
// applies the link plan in every namespace with netem.Apply, pings every ordered
// pair, checks the RTTs and the jitter against the plan, clears, and checks that
// nothing is left; then it runs a poled in every namespace that installs its own
// links (selfapply.go) and checks the same again; last, the impairments phase
// (impair.go) checks one-way delays per direction (Kolmogorov-Smirnov), loss, rate
// and a schedule against the links' tolerances with UDP datagrams. It exits 0 only
// if every check passed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/topology"
)

type config struct {
	spec        string
	seed        int64
	baseSamples int
	// Negative controls: apply something other than the plan the checks expect.
	dist       string
	delayScale float64
	ping       pingSpec
	timeout    time.Duration
	impairOn   bool
	onlyImpair bool
	impair     impairSpec
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "poled" { // a replica of the self-applied phase
		os.Exit(poledMain(os.Args[2:]))
	}
	var c config
	flag.StringVar(&c.spec, "spec", "three-dc-dep1", "shipped experiment whose layout and RTTs are emulated")
	flag.Int64Var(&c.seed, "seed", 1, "plan seed (the kernel's jitter PRNG)")
	flag.IntVar(&c.ping.Samples, "samples", 150, "RTT samples per ordered pair")
	flag.IntVar(&c.baseSamples, "base-samples", 30, "RTT samples per ordered pair before Apply (the VM's own path)")
	flag.IntVar(&c.ping.Warmup, "warmup", 5, "replies dropped at the start of each pair")
	flag.DurationVar(&c.ping.Interval, "interval", 100*time.Millisecond, "time between pings of one pair (all pairs run at once)")
	flag.StringVar(&c.dist, "dist", netem.DistPareto, "negative control: jitter distribution to apply; the checks expect pareto, so any other must FAIL")
	flag.Float64Var(&c.delayScale, "delay-scale", 1, "negative control: scale the applied delays; the checks expect 1, so e.g. 1.1 must FAIL")
	flag.DurationVar(&c.timeout, "timeout", 3*time.Minute, "give up after this long")
	flag.BoolVar(&c.impairOn, "impair", true, "run the impairments phase (impair.go): one-way delays, loss, rate, a schedule")
	flag.BoolVar(&c.onlyImpair, "only-impair", false, "run the impairments phase alone (to work on it)")
	flag.IntVar(&c.impair.OWDSamples, "owd-samples", 10000, "impairments: one-way delays measured each way (the tolerance wants >= 10^4)")
	flag.IntVar(&c.impair.BaseSamples, "owd-base-samples", 3000, "impairments: one-way delays each way through a leaf of the plan's delay and 1 ns of jitter (the VM's path)")
	flag.IntVar(&c.impair.LossSamples, "loss-samples", 5000, "impairments: datagrams sent over the lossy link")
	flag.IntVar(&c.impair.RateSamples, "rate-samples", 2000, "impairments: datagrams sent over the rate-limited link")
	flag.Parse()
	if c.ping.Samples < minSamples || c.baseSamples < 1 || c.ping.Warmup < 0 || c.ping.Interval <= 0 || !(c.delayScale > 0) ||
		c.impair.OWDSamples < 1 || c.impair.BaseSamples < 1 || c.impair.LossSamples < 1 || c.impair.RateSamples < 2 {
		fmt.Fprintf(os.Stdout, "vmtest guest: FAIL: want -samples >= %d (the jitter check needs them), -base-samples >= 1, -warmup >= 0, -interval > 0, -delay-scale > 0, impairment samples >= 1 (-rate-samples >= 2)\n", minSamples)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintf(os.Stdout, "vmtest guest: FAIL: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stdout, "vmtest guest: all checks passed")
}

func run(ctx context.Context, c config, out io.Writer) error {
	if err := netem.Probe(ctx); err != nil {
		return fmt.Errorf("netem.Probe on this kernel (which has sch_netem): %w", err)
	}
	fmt.Fprintln(out, "== netem.Probe: nil (this kernel runs netem)")

	data, err := spec.Shipped(c.spec)
	if err != nil {
		return err
	}
	spec, err := spec.Parse("experiments/"+c.spec+".yaml", data)
	if err != nil {
		return err
	}
	topo, err := spec.Topology()
	if err != nil {
		return err
	}
	plan := netem.NewPlan(topo, netem.DefaultOptions(c.seed)) // what the checks expect
	o := netem.DefaultOptions(c.seed)
	o.Dist = c.dist // "" keeps the default
	applied := netem.NewPlan(topo, o)
	for i := range applied.Links {
		applied.Links[i].Delay = time.Duration(float64(applied.Links[i].Delay) * c.delayScale)
	}
	if err := applied.Validate(); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if c.dist != netem.DistPareto || c.delayScale != 1 {
		fmt.Fprintf(out, "== NEGATIVE CONTROL: applying %s jitter and delays x%g; the checks expect the plain plan and must fail\n", c.dist, c.delayScale)
	}

	lab, err := newLab(topo.Servers())
	if err != nil {
		return err
	}
	defer lab.close()
	before := map[int]string{}
	for _, n := range lab.nodes {
		if before[n.id], err = n.tcState(); err != nil {
			return fmt.Errorf("p%d before Apply: %w", n.id, err)
		}
	}
	fmt.Fprintf(out, "== lab: %d namespaces on bridge %s; %s before Apply: %s\n",
		len(lab.nodes), bridge, dev, oneLine(before[lab.nodes[0].id]))

	if c.onlyImpair {
		if failures := impairments(ctx, out, lab, topo, c, before); len(failures) > 0 {
			return errors.New(strings.Join(failures, "\n  "))
		}
		return nil
	}

	// What the VM's own path costs, before any delay is installed.
	bs := c.ping
	bs.Samples = c.baseSamples
	base, err := measure(ctx, lab, bs)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "== VM path without netem: %s\n", pooled(base))

	if err := applyAll(ctx, out, lab, applied); err != nil {
		return err
	}
	results, err := measure(ctx, lab, c.ping)
	if err != nil {
		return err
	}
	failures := report(out, topo, plan, results, c.ping)
	failures = append(failures, partition(ctx, out, lab, topo, applied)...)

	if err := clearAll(ctx, lab, before); err != nil {
		failures = append(failures, err.Error())
	} else {
		fmt.Fprintf(out, "== netem.Clear (twice): every %s is back to: %s\n", dev, oneLine(before[lab.nodes[0].id]))
		// And the delays are gone.
		after, err := measure(ctx, lab, bs)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "== after Clear: %s\n", pooled(after))
		for _, r := range after {
			if m := summarize(r.rtts).Mean; m > 1 {
				failures = append(failures, fmt.Sprintf("%s: mean RTT %.3f ms after Clear", pairName(r.from, r.to), m))
			}
		}
	}
	failures = append(failures, selfApplied(ctx, out, lab, topo, plan, applied, c.ping, before)...)
	if c.impairOn {
		failures = append(failures, impairments(ctx, out, lab, topo, c, before)...)
	}
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "\n  "))
	}
	return nil
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
}

func target(l *lab, n *node) netem.Target {
	return netem.Target{NS: n.ns, Dev: dev, Self: n.id, Addrs: l.addrs()}
}

// applyAll applies p in every namespace, then once more in the first one, which must
// leave the tree as it was (Apply is idempotent), and prints that tree.
func applyAll(ctx context.Context, out io.Writer, l *lab, p netem.Plan) error {
	start := time.Now()
	for _, n := range l.nodes {
		if err := netem.Apply(ctx, target(l, n), p); err != nil {
			return fmt.Errorf("p%d: %w", n.id, err)
		}
	}
	fmt.Fprintf(out, "== netem.Apply in %d namespaces: %v\n", len(l.nodes), time.Since(start).Round(time.Millisecond))
	first := l.nodes[0]
	shown, err := netem.Show(ctx, target(l, first))
	if err != nil {
		return err
	}
	if err := netem.Apply(ctx, target(l, first), p); err != nil {
		return fmt.Errorf("p%d: second Apply: %w", first.id, err)
	}
	again, err := netem.Show(ctx, target(l, first))
	if err != nil {
		return err
	}
	if again != shown {
		return fmt.Errorf("p%d: second Apply changed the tree:\n%s\nto:\n%s", first.id, shown, again)
	}
	fmt.Fprintf(out, "== netem.Show p%d (unchanged by a second Apply):\n%s", first.id, shown)
	return nil
}

// clearAll clears every namespace twice (the second must be a no-op) and checks
// that each interface's qdiscs, classes and filters are what they were before.
func clearAll(ctx context.Context, l *lab, before map[int]string) error {
	var errs []error
	for _, n := range l.nodes {
		for range 2 {
			if err := netem.Clear(ctx, target(l, n)); err != nil {
				return fmt.Errorf("p%d: %w", n.id, err)
			}
		}
		after, err := n.tcState()
		if err != nil {
			return fmt.Errorf("p%d after Clear: %w", n.id, err)
		}
		if after != before[n.id] {
			errs = append(errs, fmt.Errorf("p%d: after Clear %q, before Apply %q", n.id, oneLine(after), oneLine(before[n.id])))
		}
	}
	return errors.Join(errs...)
}

// pooled summarizes the RTTs of all pairs together.
func pooled(rs []pairResult) string {
	var all []float64
	for _, r := range rs {
		all = append(all, r.rtts...)
	}
	s := summarize(all)
	return fmt.Sprintf("%d pings over %d pairs, mean %.3f ms, median %.3f, p5 %.3f, p95 %.3f, max %.3f",
		s.N, len(rs), s.Mean, s.Median, s.P5, s.P95, s.Max)
}

func oneLine(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return strings.ReplaceAll(s, "\n", "; ")
}

type pairResult struct {
	from, to int
	rtts     []float64 // ms
	sent     int
}

// measure pings every ordered pair, all pairs at once with their start times spread
// over one interval. Every pair has its own ICMP id.
func measure(ctx context.Context, l *lab, s pingSpec) ([]pairResult, error) {
	var pairs []pairResult
	for _, a := range l.nodes {
		for _, b := range l.nodes {
			if a != b {
				pairs = append(pairs, pairResult{from: a.id, to: b.id})
			}
		}
	}
	s.Grace = time.Second
	errs := make([]error, len(pairs))
	var wg sync.WaitGroup
	for i := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps := s
			ps.Offset = time.Duration(i) * s.Interval / time.Duration(len(pairs))
			p := &pairs[i]
			rtts, sent, err := ping(ctx, l.node(p.from), l.node(p.to), uint16(i+1), ps)
			for _, r := range rtts {
				p.rtts = append(p.rtts, ms(r))
			}
			p.sent, errs[i] = sent, err
		}()
	}
	wg.Wait()
	return pairs, errors.Join(errs...)
}

// report prints every pair beside the plan and the RTT matrix, and returns the
// failed checks.
func report(out io.Writer, topo *topology.Topology, plan netem.Plan, results []pairResult, s pingSpec) []string {
	c := &checker{plan: plan, expected: map[[2]netem.Link]summary{}}
	measured := map[[2]int]summary{}
	fmt.Fprintf(out, "== RTT of every ordered pair, ms (%d samples each, one every %v)\n", s.Samples, s.Interval)
	fmt.Fprintf(out, "%-8s %-6s %8s %8s %7s %8s %8s %8s %7s  %s\n",
		"pair", "DCs", "plan", "mean", "err", "median", "p5", "p95", "sd", "checks")
	for _, r := range results {
		got := summarize(r.rtts)
		measured[[2]int{r.from, r.to}] = got
		planRTT := ms(plan.RTT(r.from, r.to))
		notes := c.pair(r, got, topo.DC(r.from) == topo.DC(r.to))
		fmt.Fprintf(out, "%-8s %-6s %8.3f %8.3f %+6.1f%% %8.3f %8.3f %8.3f %7.3f  %s\n",
			pairName(r.from, r.to), topo.DC(r.from)+"-"+topo.DC(r.to), planRTT, got.Mean, 100*(got.Mean-planRTT)/planRTT,
			got.Median, got.P5, got.P95, got.SD, strings.Join(notes, ", "))
	}
	if c.means == 0 || c.shapes == 0 {
		c.fail("nothing checked: %d means, %d jitter shapes", c.means, c.shapes)
	}

	ids := topo.Servers()
	fmt.Fprintf(out, "== RTT matrix, ms: measured mean (plan)\n%-4s", "")
	for _, b := range ids {
		fmt.Fprintf(out, " %17s", topology.Name(b)+" "+topo.DC(b))
	}
	fmt.Fprintln(out)
	for _, a := range ids {
		fmt.Fprintf(out, "%-4s", topology.Name(a))
		for _, b := range ids {
			cell := "-"
			if a != b {
				cell = fmt.Sprintf("%.2f (%.2f)", measured[[2]int{a, b}].Mean, ms(plan.RTT(a, b)))
			}
			fmt.Fprintf(out, " %17s", cell)
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "== checks: %d inter-DC means (tolerance %.0f%%), %d jitter shapes; %d failures\n",
		c.means, 100*meanTolerance, c.shapes, len(c.failures))
	return c.failures
}

func pairName(a, b int) string { return topology.Name(a) + "->" + topology.Name(b) }

// checker holds what the checks of the pairs share.
type checker struct {
	plan          netem.Plan
	expected      map[[2]netem.Link]summary // by the two links with ids zeroed
	means, shapes int
	failures      []string
}

func (c *checker) fail(format string, args ...any) {
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
}

// pair checks one pair: nothing lost, the mean within tolerance of the plan (not
// intra-DC), and the jitter's shape. It returns notes for the table.
func (c *checker) pair(r pairResult, got summary, intra bool) (notes []string) {
	name := pairName(r.from, r.to)
	if lost := r.sent - got.N; float64(lost) > 0.02*float64(r.sent) || got.N < 2 {
		c.fail("%s: %d of %d pings unanswered", name, lost, r.sent)
		return []string{fmt.Sprintf("LOST %d", lost)}
	}
	if intra {
		return []string{"intra-DC: reported only"}
	}
	c.means++
	if err := checkMean(got, ms(c.plan.RTT(r.from, r.to))); err != nil {
		c.fail("%s: %v", name, err)
		notes = append(notes, "MEAN OFF")
	} else {
		notes = append(notes, "mean ok")
	}
	ab, _ := c.plan.Link(r.from, r.to)
	ba, _ := c.plan.Link(r.to, r.from)
	if ab.Jitter+ba.Jitter < shapeMinJitter {
		return append(notes, "jitter below noise: not shape-checked")
	}
	c.shapes++
	key := [2]netem.Link{ab, ba}
	key[0].From, key[0].To, key[1].From, key[1].To = 0, 0, 0, 0
	want, ok := c.expected[key]
	if !ok {
		var err error
		if want, err = expectRTT(ab, ba); err != nil {
			c.fail("%s: %v", name, err)
			return append(notes, "NO EXPECTATION")
		}
		c.expected[key] = want
	}
	if err := checkShape(got, want); err != nil {
		c.fail("%s: %v", name, err)
		return append(notes, "SHAPE BAD")
	}
	return append(notes, fmt.Sprintf("%s shape ok (plan: median %+.3f, p5 %+.3f, p95 %+.3f from mean)",
		ab.Dist, want.Median-want.Mean, want.P5-want.Mean, want.P95-want.Mean))
}

// partition cuts the first data center off from the others with the plan's Cut (the
// kernel drops every packet between them), checks that no ping crosses the cut while
// pairs on one side still answer within the plan, then heals by applying the plan
// again and checks that the cut pairs answer once more.
func partition(ctx context.Context, out io.Writer, l *lab, topo *topology.Topology, p netem.Plan) []string {
	inside := topo.DCs()[0].Servers
	var pairs [][2]int
	for _, a := range inside {
		for _, b := range topo.Servers() {
			if !slices.Contains(inside, b) {
				pairs = append(pairs, [2]int{a, b})
			}
		}
	}
	crosses := func(r pairResult) bool { return slices.Contains(inside, r.from) != slices.Contains(inside, r.to) }
	s := pingSpec{Samples: 10, Warmup: 1, Interval: 20 * time.Millisecond}
	if err := applyAll(ctx, io.Discard, l, p.Cut(pairs)); err != nil {
		return []string{"partition: " + err.Error()}
	}
	cut, err := measure(ctx, l, s)
	if err != nil {
		return []string{"partition: " + err.Error()}
	}
	var failures []string
	var crossed, kept int
	for _, r := range cut {
		if crosses(r) {
			crossed += len(r.rtts)
			if len(r.rtts) > 0 {
				failures = append(failures, fmt.Sprintf("partition: %s answered %d of %d pings across the cut", pairName(r.from, r.to), len(r.rtts), r.sent))
			}
			continue
		}
		kept += len(r.rtts)
		if want := ms(p.RTT(r.from, r.to)); len(r.rtts) < r.sent || summarize(r.rtts).Mean > want*1.1+1 {
			failures = append(failures, fmt.Sprintf("partition: %s on one side: %d of %d replies, mean %.3f ms (plan %.3f)",
				pairName(r.from, r.to), len(r.rtts), r.sent, summarize(r.rtts).Mean, want))
		}
	}
	fmt.Fprintf(out, "== partition %v | rest (%d cut links at 100%% loss): %d replies across the cut, %d on either side\n",
		inside, 2*len(pairs), crossed, kept)
	if err := applyAll(ctx, io.Discard, l, p); err != nil {
		return append(failures, "heal: "+err.Error())
	}
	healed, err := measure(ctx, l, s)
	if err != nil {
		return append(failures, "heal: "+err.Error())
	}
	var back int
	for _, r := range healed {
		if crosses(r) {
			back += len(r.rtts)
			if len(r.rtts) < r.sent/2 {
				failures = append(failures, fmt.Sprintf("heal: %s answered %d of %d pings", pairName(r.from, r.to), len(r.rtts), r.sent))
			}
		}
	}
	fmt.Fprintf(out, "== healed (the plan applied again): %d replies across the former cut\n", back)
	return failures
}
