package runner

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/spec"
)

// The protocol's timing claims, asserted in the simulator, where they are exact: the
// same spec and seed give the same run on any host. Real backends run the same specs
// for correctness (runner_test.go) and for fidelity in the nightly suite. Each test runs
// beside the others and beside the real-cluster tests (t.Parallel): the virtual clock
// does not care how busy the host is.

// claimRate is the rate the simulator's claims were measured at.
const claimRate = "300"

// simulate runs s (shortened by specFor, with longer's timing) on the sim backend and
// returns its summary and run directory. The claims' bounds were measured at claimRate,
// not the real runs' testRate: at 100 writes/s three-dc-dep1's after window at p = 1/3
// holds too few writes of the far DC for its mean to sit within the bound of the model.
func simulate(t *testing.T, name string, settings ...string) (*spec.Spec, *analysis.Summary, string) {
	t.Helper()
	s := specFor(t, name, slices.Concat(longer, []string{"rate=" + claimRate}, settings, []string{"backend=sim"})...)
	res, err := Run(context.Background(), Options{Spec: s, Out: t.TempDir(), Progress: progress.NewPlain(io.Discard)})
	if err != nil {
		t.Fatal(err)
	}
	sum := res.Summaries[0]
	if sum.LostAcknowledgedWrites != 0 {
		t.Errorf("%d acknowledged writes lost", sum.LostAcknowledgedWrites)
	}
	return s, sum, res.Dir
}

// modelElects is whom the model elects with the spec's oracle, and the servers it
// finds tied with that one.
func modelElects(t *testing.T, s *spec.Spec) (int, []int) {
	t.Helper()
	pred, err := s.Model()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range pred.Elections {
		if e.Oracle == s.Oracle.Name {
			return e.Leader, e.Tied
		}
	}
	t.Fatalf("the model elects no one with %s", s.Oracle.Name)
	return 0, nil
}

// TestSimWinners: who wins under each oracle, in the paper's layouts and skews. Where
// the model ties servers by the oracle's score alone (latency at p = 0: p2, p3 and p4
// within 0.03 ms, inside the jitter), any of them may win; elsewhere the model's
// winner must.
func TestSimWinners(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec   string
		set    []string
		anyOf  []int // nil: exactly the model's winner
		paper  int   // the paper's winner, where it names one (0: none)
		window string
	}{
		{"two-dc", []string{"oracle=history"}, nil, 4, "after"},
		{"two-dc", []string{"oracle=rotating"}, nil, 1, "after"},
		{"three-dc-dep1", []string{"oracle=history", "p=0"}, nil, 4, "after"},
		{"three-dc-dep1", []string{"oracle=history", "p=0.3333"}, nil, 4, "after"},
		{"three-dc-dep1", []string{"oracle=history", "p=1"}, nil, 4, "after"},
		{"three-dc-dep1", []string{"oracle=latency", "p=0"}, []int{2, 3, 4}, 0, "after"},
		{"three-dc-dep1", []string{"oracle=latency", "p=1"}, nil, 1, "after"},
		{"three-dc-dep1", []string{"oracle=worst-case", "p=1"}, []int{2, 3}, 0, "after"},
	} {
		t.Run(c.spec+" "+c.set[0]+" "+c.set[len(c.set)-1], func(t *testing.T) {
			s, sum, _ := simulate(t, c.spec, c.set...)
			model, tied := modelElects(t, s)
			if c.paper != 0 && model != c.paper {
				t.Errorf("the model elects p%d, the paper p%d", model, c.paper)
			}
			want := c.anyOf
			if want == nil {
				want = []int{model}
			}
			if !slices.Contains(want, sum.NewLeader) {
				t.Errorf("elected p%d, want one of %v (model p%d, tied %v)", sum.NewLeader, want, model, tied)
			}
			if sum.InitialLeader != s.InitialLeader {
				t.Errorf("initial leader p%d, want p%d", sum.InitialLeader, s.InitialLeader)
			}
		})
	}
}

// TestSimLatencyNearModel: every window's per-DC mean lies at or just above the model:
// never below it (a link not emulated), at most 1.2 ms above (the simulator charges the
// jitter, the order of delivery and the servers' and clients' costs, nothing else). And
// the paper's orderings: after the crash, the DC without the new leader waits longer.
func TestSimLatencyNearModel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec        string
		set         []string
		slow, fast  string // after the crash: the DC away from the new leader, and its own
		windowsWant int
	}{
		{"two-dc", []string{"oracle=history"}, "D1", "D2", 2},
		{"two-dc", []string{"oracle=rotating"}, "D2", "D1", 2},
		{"three-dc-dep1", []string{"oracle=latency", "p=0.3333"}, "D3", "D2", 2},
	} {
		t.Run(c.spec+" "+c.set[len(c.set)-1], func(t *testing.T) {
			_, sum, dir := simulate(t, c.spec, c.set...)
			if len(sum.LatencyMS) != c.windowsWant {
				t.Fatalf("%d windows measured, want %d", len(sum.LatencyMS), c.windowsWant)
			}
			for w, byDC := range sum.LatencyMS {
				for dc, st := range byDC {
					if st.ModelMS == nil {
						t.Errorf("%s %s: no model", w, dc)
						continue
					}
					if d := st.Mean - *st.ModelMS; d < -0.1 || d > 1.2 {
						t.Errorf("%s %s: mean %.2f ms, model %.2f: %+.2f ms off", w, dc, st.Mean, *st.ModelMS, d)
					}
				}
			}
			after := sum.LatencyMS["after"]
			if after[c.slow].Mean <= after[c.fast].Mean {
				t.Errorf("after the crash %s %.2f ms, %s %.2f ms: want %s slower", c.slow, after[c.slow].Mean, c.fast, after[c.fast].Mean, c.slow)
			}
			checkAnatomy(t, dir, sum)
		})
	}
}

// TestSimElectionTime: from the crash to the new leader's LEADING takes at least T
// (POLE's election timer) and at most T, plus one RTT across the widest link (the
// crash is noticed one way, the far proposals arrive the other), plus one tick (the
// timer counts in ticks of the driver).
func TestSimElectionTime(t *testing.T) {
	t.Parallel()
	const (
		T    = 200 * time.Millisecond
		tick = 50 * time.Millisecond
	)
	for _, c := range []struct {
		spec string
		set  []string
	}{
		{"two-dc", []string{"oracle=history"}},
		{"two-dc", []string{"oracle=rotating"}},
		{"three-dc-dep1", []string{"oracle=history", "p=1"}},
		{"three-dc-dep1", []string{"oracle=latency", "p=1"}},
	} {
		t.Run(c.spec+" "+c.set[len(c.set)-1], func(t *testing.T) {
			s, sum, _ := simulate(t, c.spec, c.set...)
			topo, err := s.Topology()
			if err != nil {
				t.Fatal(err)
			}
			var widest float64
			for _, a := range topo.Servers() {
				for _, b := range topo.Servers() {
					widest = max(widest, topo.RTT(a, b))
				}
			}
			// The jitter is 2 % of a one-way delay, Pareto: a few percent covers its tail.
			hi := float64(T+tick)/1e6 + 1.05*widest
			if sum.ElectionMS == nil {
				t.Fatal("no election measured")
			}
			if e := *sum.ElectionMS; e < float64(T)/1e6 || e > hi {
				t.Errorf("election %.1f ms, want %.0f to %.1f ms", e, float64(T)/1e6, hi)
			}
		})
	}
}

// TestSimRecovery is Fig. 8a's claim: an outdated leader (rotating elects p1, killed at
// 3 s, back at 11 s) must fetch the state before it serves, so its recovery is above an
// up-to-date leader's (history's p4) and grows with the state.
func TestSimRecovery(t *testing.T) {
	t.Parallel()
	rec := map[string]float64{}
	for _, c := range []struct {
		oracle string
		mb     string
		want   int
	}{{"history", "20", 4}, {"rotating", "5", 1}, {"rotating", "20", 1}} {
		_, sum, _ := simulate(t, "two-dc-recovery", "oracle="+c.oracle, "preload-mb="+c.mb, "outdate=1:3s:11s", "window-kb=256")
		if sum.NewLeader != c.want {
			t.Fatalf("%s elected p%d, want p%d", c.oracle, sum.NewLeader, c.want)
		}
		if sum.RecoveryMS == nil {
			t.Fatalf("%s, %s MB: no recovery measured", c.oracle, c.mb)
		}
		if sum.BehindAtCrash[1].Transactions == 0 {
			t.Errorf("%s, %s MB: p1 not behind at the crash: %+v", c.oracle, c.mb, sum.BehindAtCrash)
		}
		rec[c.oracle+c.mb] = *sum.RecoveryMS
	}
	t.Logf("recovery: history 20 MB %.1f ms, rotating 5 MB %.1f ms, rotating 20 MB %.1f ms", rec["history20"], rec["rotating5"], rec["rotating20"])
	if !(rec["history20"] < rec["rotating5"] && rec["rotating5"] < rec["rotating20"]) {
		t.Errorf("want history's recovery below the outdated leader's, and that growing with the state: %v", rec)
	}
}
