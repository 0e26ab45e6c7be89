package pole

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/zxid"
)

// best returns the id whose score wins under o, ties to the highest id (≺p).
func best(o Oracle, scores map[int]Score) int {
	winner := 0
	for id, s := range scores {
		if winner == 0 || o.Less(scores[winner], s) || !o.Less(s, scores[winner]) && id > winner {
			winner = id
		}
	}
	return winner
}

func TestOracleOrders(t *testing.T) {
	v := View{Servers: servers(5), Ready: true}
	score := func(o Oracle, f func(v *View)) Score {
		w := v
		f(&w)
		s, ok := o.Score(w)
		if !ok {
			t.Fatalf("%s not ready", o.Name())
		}
		return s
	}
	// History: a later epoch beats any counter of an earlier one.
	h := map[int]Score{
		1: score(History{}, func(v *View) { v.Zxid = 0x1_ffffffff }),
		2: score(History{}, func(v *View) { v.Zxid = 0x2_00000001 }),
		3: score(History{}, func(v *View) { v.Zxid = 0x2_00000000 }),
	}
	if w := best(History{}, h); w != 2 {
		t.Errorf("history elects p%d, want p2", w)
	}
	if g := (History{}).Gain(h[1], h[2]); g != 2 {
		t.Errorf("history gain %v, want 2 transactions", g)
	}
	// Request: highest rate. Preference: earliest in the list, unlisted last.
	r := map[int]Score{}
	p := Preference{Order: []int{4, 2}}
	pr := map[int]Score{}
	for id, rate := range map[int]float64{1: 10, 2: 500, 3: 20, 5: 0} {
		r[id] = score(Request{}, func(v *View) { v.Rate = rate })
		pr[id] = score(p, func(v *View) { v.Self = id })
	}
	if w := best(Request{}, r); w != 2 {
		t.Errorf("request elects p%d, want p2", w)
	}
	if w := best(p, pr); w != 2 {
		t.Errorf("preference 4,2 without p4 elects p%d, want p2", w)
	}
	// Lower-is-better oracles: +Inf (no quorum) loses to anything.
	if !(Consensus{}).Less(Score{math.Inf(1)}, Score{500}) || (Consensus{}).Gain(Score{30}, Score{20}) != 10 {
		t.Error("consensus: 500 ms must beat +Inf, and 20 ms gains 10 over 30 ms")
	}
}

func TestRotatingRoundLeader(t *testing.T) {
	for _, c := range []struct {
		prev  int
		epoch Epoch
		want  int
	}{
		{prev: 5, epoch: 9, want: 1}, // p1 after p5, whatever the epoch
		{prev: 2, epoch: 1, want: 3},
		{prev: 0, epoch: 1, want: 1}, // no leader known: epoch e's round leader is the ((e-1) mod N)-th
		{prev: 0, epoch: 7, want: 2},
	} {
		scores := map[int]Score{}
		for _, id := range servers(5) {
			s, _ := Rotating{}.Score(View{Self: id, Servers: servers(5), PrevLeader: c.prev, Epoch: c.epoch})
			scores[id] = s
		}
		if s := scores[c.want]; s[0] != 1 {
			t.Errorf("prev %d epoch %d: p%d scores %v, want 1", c.prev, c.epoch, c.want, s)
		}
		if w := best(Rotating{}, scores); w != c.want {
			t.Errorf("prev %d epoch %d: rotating elects p%d, want p%d", c.prev, c.epoch, w, c.want)
		}
	}
}

// The latency-type oracles compute topology's formulas over the live peers the monitor
// measured, and block while the monitor is not ready.
func TestLatencyOraclesUseTopologyFormulas(t *testing.T) {
	v := View{Self: 1, Servers: servers(5), Rate: 100, Ready: true, Peers: map[int]PeerView{
		2: {RTT: 9.88, Rate: 250}, 3: {RTT: 53.26, Rate: 0}, 4: {RTT: 77.06, Rate: 650},
	}}
	rtts, rates := []float64{9.88, 53.26, 77.06}, []float64{250, 0, 650}
	c, _ := score.ThetaC(rtts, 5)
	w, _ := score.ThetaW(rtts, 5)
	l, _ := score.ThetaL(rtts, rates, 100, 5)
	for _, tc := range []struct {
		o    Oracle
		want float64
	}{{Consensus{}, c}, {WorstCase{}, w}, {Latency{}, l}} {
		s, ok := tc.o.Score(v)
		if !ok || len(s) != 1 || s[0] != tc.want {
			t.Errorf("%s: %v %v, want %v", tc.o.Name(), s, ok, tc.want)
		}
		notReady := v
		notReady.Ready = false
		if _, ok := tc.o.Score(notReady); ok {
			t.Errorf("%s scored before the monitor was ready", tc.o.Name())
		}
	}
	// Too few live peers for a quorum: +Inf, the worst score.
	alone := View{Self: 1, Servers: servers(5), Ready: true, Peers: map[int]PeerView{2: {RTT: 1}}}
	if s, _ := (Consensus{}).Score(alone); !math.IsInf(s[0], 1) {
		t.Errorf("no quorum: consensus score %v, want +Inf", s)
	}
}

// Combined with classes: latency in 10 ms classes, then the longest history.
func TestCombinedClasses(t *testing.T) {
	o, err := ParseOracle("combined:latency/10,history")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(lat float64, zxid uint64) Score {
		return Score{1, lat, 2, float64(zxid >> 32), float64(uint32(zxid))}
	}
	fast, fat, slow := mk(11.5, 5), mk(19.9, 9), mk(20.0, 100)
	if !o.Less(fast, fat) {
		t.Error("11.5 and 19.9 ms share a class: the longer history should win")
	}
	if !o.Less(slow, fast) || !o.Less(slow, fat) {
		t.Error("20.0 ms is the next class: it loses whatever its history")
	}
	if g := o.Gain(slow, fast); g != 8.5 {
		t.Errorf("gain from the slow to the fast class: %v, want 8.5 ms", g)
	}
	// The model's classes agree: FromConfig builds the same order.
	c, err := FromConfig(score.Oracle{Name: score.Combined, Combined: []score.Criterion{{Score: score.Latency, Class: 10}, {Score: "zxid"}}})
	if err != nil || !c.Less(fast, fat) || !c.Less(slow, fast) {
		t.Errorf("FromConfig combined: %v", err)
	}
	// Zxid classes count transactions.
	z, _ := ParseOracle("combined:history/1000")
	if z.Less(mk(0, 1500)[2:], mk(0, 1999)[2:]) {
		t.Error("zxids 1500 and 1999 share a 1000-transaction class")
	}
}

func TestInitialWinsOnlyTheFirstElection(t *testing.T) {
	o := Initial{Leader: 5, Oracle: History{}}
	first := map[int]Score{}
	later := map[int]Score{}
	for _, id := range servers(5) {
		zx := zxid.Zxid(10 - id) // p1 has the longest history
		first[id], _ = o.Score(View{Self: id, Zxid: zx})
		later[id], _ = o.Score(View{Self: id, Zxid: zx, PrevLeader: 5})
	}
	if w := best(o, first); w != 5 {
		t.Errorf("first election: p%d, want p5", w)
	}
	if w := best(o, later); w != 1 {
		t.Errorf("after a leader is known: p%d, want history's p1", w)
	}
}

// Every order must stay a strict weak order, even over malformed scores from the
// network, or proposals could fail to converge; and it must never panic.
func TestOrdersAreStrictOnArbitraryScores(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	oracles := []Oracle{History{}, Rotating{}, Request{}, Consensus{}, Latency{}, WorstCase{},
		Preference{Order: []int{2, 1}}, Initial{Leader: 1, Oracle: Latency{}},
		Combined{Parts: []Part{{Oracle: Latency{}, Class: 10}, {Oracle: History{}, Class: 1000}}}}
	vals := []float64{0, 1, 2, 10, 15, -1, math.Inf(1), math.Inf(-1), 1 << 33}
	random := func() Score {
		s := make(Score, rng.Intn(6))
		for i := range s {
			s[i] = vals[rng.Intn(len(vals))]
		}
		return s
	}
	for _, o := range oracles {
		for range 3000 {
			a, b, c := random(), random(), random()
			if o.Less(a, a) {
				t.Fatalf("%s: %v < itself", o.Name(), a)
			}
			if o.Less(a, b) && o.Less(b, a) {
				t.Fatalf("%s: %v and %v each less than the other", o.Name(), a, b)
			}
			if o.Less(a, b) && o.Less(b, c) && !o.Less(a, c) {
				t.Fatalf("%s: not transitive: %v < %v < %v", o.Name(), a, b, c)
			}
			_ = o.Gain(a, b)
		}
	}
}

func TestParseOracle(t *testing.T) {
	for in, want := range map[string]string{
		"history": "history", " latency ": "latency", "worst-case": "worst-case", "rotating": "rotating",
		"request": "request", "consensus": "consensus", "preference:5,3,1": "preference:5,3,1",
		"combined:latency/10,history": "combined:latency/10,history",
	} {
		o, err := ParseOracle(in)
		if err != nil || o.Name() != want {
			t.Errorf("ParseOracle(%q) = %v, %v; want %s", in, o, err, want)
		}
	}
	for in, want := range map[string]string{
		"fastest":             "unknown oracle",
		"preference":          "needs a list",
		"preference:1,x":      `"x" is not a server id`,
		"preference:1,1":      "listed twice",
		"combined:latency/-1": "not a positive number",
		"combined:lat":        "unknown oracle",
		"history:3":           "takes no argument",
	} {
		if _, err := ParseOracle(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseOracle(%q): %v, want an error containing %q", in, err, want)
		}
	}
	for _, c := range []score.Oracle{{Name: "fastest"}, {Name: score.Preference}, {Name: score.Combined},
		{Name: score.Combined, Combined: []score.Criterion{{Score: score.Rotating}}}} {
		if _, err := FromConfig(c); err == nil {
			t.Errorf("FromConfig(%+v) accepted", c)
		}
	}
	for _, name := range score.OracleNames() {
		c := score.Oracle{Name: name, Preference: []int{1}, Combined: []score.Criterion{{Score: "zxid"}}}
		if _, err := FromConfig(c); err != nil {
			t.Errorf("FromConfig(%s): %v", name, err)
		}
	}
}

// TestInitialWaitsForTheInitialLeader: in the first election a process other than the
// initial leader does not score itself until it has heard of the initial leader (or
// its monitor is done with every peer), so an early quorum cannot elect around it.
func TestInitialWaitsForTheInitialLeader(t *testing.T) {
	o := Initial{Leader: 5, Oracle: History{}}
	for _, c := range []struct {
		name string
		v    View
		want bool
	}{
		{"first election, p5 not heard", View{Self: 4, Peers: map[int]PeerView{1: {}, 2: {}}}, false},
		{"first election, p5 heard", View{Self: 4, Peers: map[int]PeerView{5: {RTT: 1}}}, true},
		{"first election, monitor done without p5, fresh", View{Self: 4, Ready: true}, false},
		{"first election, monitor done without p5, has committed", View{Self: 4, Ready: true, Zxid: 1<<32 | 7}, true},
		{"the initial leader itself", View{Self: 5}, true},
		{"a later election", View{Self: 4, PrevLeader: 5}, true},
	} {
		if _, ok := o.Score(c.v); ok != c.want {
			t.Errorf("%s: ready %v, want %v", c.name, ok, c.want)
		}
	}
}
