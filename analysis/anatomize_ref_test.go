package analysis

import (
	"github.com/polebench/polebench/model"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// anatomizeReference is Anatomize as it was before it computed each path's numbers
// once and asked the model once per server and leader: kept to check that the sums
// come out bit for bit the same (floating-point sums depend on their order).
func anatomizeReference(paths []Path, windows []Window, pm model.PathModel, acked map[string]map[string]int) map[string]map[string]AnatomyStats {
	type acc struct {
		n, neg            int
		phases            []float64
		follower, latency float64
		m                 model.Split
		modelled          int
	}
	out := map[string]map[string]AnatomyStats{}
	for _, w := range windows {
		accs := map[string]*acc{}
		for i := range paths {
			p := &paths[i]
			if !w.contains(p.At[StepIntended]) {
				continue
			}
			m, ok := model.Split{}, false
			if pm != nil {
				m, ok = pm(w.Name, p.Server, p.Leader)
			}
			for _, k := range []string{p.DC, All} {
				a := accs[k]
				if a == nil {
					a = &acc{phases: make([]float64, len(Phases))}
					accs[k] = a
				}
				a.n++
				neg := false
				for j := range Phases {
					d := p.Phase(j)
					neg = neg || d < 0
					a.phases[j] += ms(d)
				}
				if p.Follower != 0 && (p.At[StepPropArrived] < p.At[StepProposed] || p.FollowerHold() < 0 || p.At[StepQuorum] < p.At[StepAcked]) {
					neg = true
				}
				if neg {
					a.neg++
				}
				a.follower += ms(p.FollowerHold())
				a.latency += ms(p.Latency())
				if ok {
					a.modelled++
					a.m.Forward += m.Forward
					a.m.Quorum += m.Quorum
					a.m.Back += m.Back
					a.m.Jitter += m.Jitter
				}
			}
		}
		if len(accs) == 0 {
			continue
		}
		out[w.Name] = map[string]AnatomyStats{}
		for dc, a := range accs {
			n := float64(a.n)
			st := AnatomyStats{Count: a.n, MeasuredMS: a.latency / n, Negative: a.neg, PhasesMS: map[string]float64{}}
			if k := acked[w.Name][dc]; k > 0 {
				st.Coverage = n / float64(k)
			}
			for j, ph := range Phases {
				st.PhasesMS[ph.Name] = a.phases[j] / n
			}
			st.PhasesMS["quorum_follower"] = a.follower / n
			if a.modelled == a.n {
				ph := st.PhasesMS
				mp := &ModelParts{Forward: a.m.Forward / n, Quorum: a.m.Quorum / n, Back: a.m.Back / n}
				mp.Total = mp.Forward + mp.Quorum + mp.Back
				links := ph["forward"] + quorumLinkMS(ph) + ph["commit_back"] - mp.Total
				e := &Excess{
					Total:         st.MeasuredMS - mp.Total,
					SendLag:       ph["send_lag"],
					Client:        ClientMS(ph),
					Processing:    ProcessingMS(ph),
					JitterInOrder: a.m.Jitter / n,
				}
				e.Other = links - e.JitterInOrder
				st.ModelMS, st.ExcessMS = mp, e
			}
			out[w.Name][dc] = st
		}
	}
	return out
}

// TestAnatomizeMatchesReference: on realistic paths in two windows, with a model
// that has nothing for some leaders, Anatomize gives exactly the reference's numbers.
func TestAnatomizeMatchesReference(t *testing.T) {
	recs, marks, start := joinHistory(11)
	paths, _ := join(recs, marks, start)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range paths {
		if rng.IntN(50) == 0 {
			paths[i].At[StepReply] = paths[i].At[StepApplied] - 1 // a negative phase
		}
	}
	windows := []Window{{"before", 0, 2 * time.Second}, {"after", 3 * time.Second, time.Hour}}
	pmodel := func(w string, s, l int) (model.Split, bool) {
		if w == "after" && s == 3 {
			return model.Split{}, false
		}
		return model.Split{Forward: 0.1 * float64(s), Quorum: 1.0 / float64(l), Back: 0.3 * float64(s), Jitter: 0.01 * float64(s*l)}, true
	}
	acked := map[string]map[string]int{"before": {"D1": 900, "D2": 800, All: 1700}}
	for _, m := range []model.PathModel{pmodel, nil} {
		got, want := Anatomize(paths, windows, m, acked, nil), anatomizeReference(paths, windows, m, acked)
		for _, byDC := range got {
			for dc, st := range byDC {
				st.Tail = nil // TestAnatomizeTail's; the reference has none
				byDC[dc] = st
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("model %v:\n%+v\nreference\n%+v", m != nil, got, want)
		}
		if len(got) != 2 || (got["before"][All].ModelMS != nil) != (m != nil) || got["after"][All].ModelMS != nil || got["before"][All].Negative == 0 {
			t.Errorf("model %v: want both windows, before modelled (with a model), after not (p3 has none), negative phases counted", m != nil)
		}
	}
}
