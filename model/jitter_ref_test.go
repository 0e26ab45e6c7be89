package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/topology"
)

// refJitter is the term as Jitter computed it before it went lazy: every live
// leader's links at once, on time.Time clocks. It is kept to check that the lazy
// term gives the same numbers, bit for bit.
type refJitter struct {
	oneWay map[[3]int]float64 // (leader, from, to)
	quorum map[int]float64
}

func jitterReference(t *topology.Topology, live []int, p netem.Plan, samples int) (*refJitter, error) {
	plain, err := Analyze(t, live)
	if err != nil {
		return nil, err
	}
	j := &refJitter{oneWay: map[[3]int]float64{}, quorum: map[int]float64{}}
	lambda := t.LambdaT()
	rates := t.ServerRates(plain.Live)
	k := score.Quorum(t.N())
	for _, l := range plain.Live {
		var trips [][]float64
		for _, f := range plain.Live {
			if f == l {
				continue
			}
			out, err := refLinkDelays(p, l, f, 2*lambda, samples)
			if err != nil {
				return nil, err
			}
			back, err := refLinkDelays(p, f, l, lambda+rates[f], samples)
			if err != nil {
				return nil, err
			}
			j.oneWay[[3]int{l, l, f}], j.oneWay[[3]int{l, f, l}] = mean(out), mean(back)
			rt := make([]float64, samples)
			for i := range rt {
				rt[i] = out[i] + back[(i+samples/2)%samples]
			}
			trips = append(trips, rt)
		}
		if k < 2 || len(trips) < k-1 {
			continue
		}
		sum := 0.0
		row := make([]float64, len(trips))
		for i := range samples {
			for f, rt := range trips {
				row[f] = rt[i]
			}
			slices.Sort(row)
			sum += row[k-2]
		}
		j.quorum[l] = sum / float64(samples)
	}
	return j, nil
}

func refLinkDelays(p netem.Plan, from, to int, rate float64, samples int) ([]float64, error) {
	line, err := p.DelayLine(from, to)
	if err != nil {
		return nil, fmt.Errorf("jitter term: %w", err)
	}
	rate = max(rate, 1)
	rng := rand.New(rand.NewPCG(uint64(from)<<32|uint64(to), 0x6a09e667f3bcc908))
	sent := time.Unix(0, 0)
	out := make([]float64, samples)
	for i := range out {
		sent = sent.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		_, at := line.Schedule(sent, messageBytes)
		out[i] = float64(at.Sub(sent)) / float64(time.Millisecond)
	}
	return out, nil
}

// TestJitterLazyMatchesEager: the term computed leader by leader on first use, from
// several goroutines at once, gives exactly what computing every leader up front gave,
// for every server and leader, a leader that is not live included.
func TestJitterLazyMatchesEager(t *testing.T) {
	for _, tc := range []struct {
		name string
		pct  float64
		rate float64
		live []int
	}{
		{"all live, 2 %", 2, 1000, []int{1, 2, 3, 4, 5}},
		{"p5 down, 20 %", 20, 1000, []int{1, 2, 3, 4}},
		{"slow, 20 %", 20, 10, []int{1, 2, 4, 5}},
		{"no jitter", 0, 1000, []int{1, 2, 3, 4, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := jitterTopo(t, tc.rate)
			plan := netem.NewPlan(topo, netem.Options{JitterPct: tc.pct, Seed: 7})
			ref, err := jitterReference(topo, tc.live, plan, 3000)
			if err != nil {
				t.Fatal(err)
			}
			lazy, err := Jitter(topo, tc.live, plan, 3000)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for l := 1; l <= topo.N(); l++ {
				for s := 1; s <= topo.N(); s++ {
					wg.Go(func() {
						f, q, b := lazy.Split(s, l)
						var wf, wb float64
						if s != l {
							wf, wb = ref.oneWay[[3]int{l, s, l}], ref.oneWay[[3]int{l, l, s}]
						}
						if f != wf || q != ref.quorum[l] || b != wb {
							t.Errorf("p%d with leader p%d: split %v %v %v, want %v %v %v", s, l, f, q, b, wf, ref.quorum[l], wb)
						}
					})
				}
			}
			wg.Wait()
		})
	}
}

// TestJitterChecksLinks: a missing link is an error up front, as when every leader's
// links were run at once, not when a leader is first asked about.
func TestJitterChecksLinks(t *testing.T) {
	topo := jitterTopo(t, 1000)
	plan := netem.NewPlan(topo, netem.Options{JitterPct: 2, Seed: 1})
	plan.Links = slices.DeleteFunc(plan.Links, func(l netem.Link) bool { return l.From == 3 && l.To == 1 })
	if _, err := Jitter(topo, []int{1, 2, 3, 4}, plan, 100); err == nil {
		t.Error("no error for a plan without the link p3->p1")
	}
	if _, err := Jitter(topo, []int{1, 2, 4, 5}, plan, 100); err != nil {
		t.Errorf("p3 down, its missing link does not matter: %v", err)
	}
}
