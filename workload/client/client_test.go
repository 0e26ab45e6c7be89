package client

import (
	"testing"
	"time"
)

// Picks go only to usable servers, uniformly: 3000 requests over two usable servers of
// three land about half on each (binomial sd 27; the bounds are 7 sd wide).
func TestPickUniformAmongUsable(t *testing.T) {
	for _, tc := range []struct {
		servers states
		usable  []int
	}{
		{states("uiu"), []int{0, 2}},
		{states("dud"), []int{1}},
		{states("uuuu"), []int{0, 1, 2, 3}},
	} {
		dc := NewDC(Config{Seed: 1}, "D1", tc.servers, 42)
		n := 3000
		count := make([]int, len(tc.servers))
		for id := range n {
			r := dc.Issue(uint64(id), 0)
			step := dc.Next(&r, 0)
			if step.Action != Send {
				t.Fatalf("%s: request %d: step %+v, want a send", tc.servers, id, step)
			}
			count[step.Server]++
		}
		want := n / len(tc.usable)
		for i, c := range count {
			if !tc.servers.Usable(i) {
				if c != 0 {
					t.Errorf("%s: %d requests went to s%d, which is not usable", tc.servers, c, i)
				}
				continue
			}
			if c < want-200 || c > want+200 {
				t.Errorf("%s: s%d got %d of %d requests, want about %d", tc.servers, i, c, n, want)
			}
		}
	}
}

// The same seeds give the same picks: a simulated run and a real one choose alike.
func TestPicksAreAFunctionOfTheSeeds(t *testing.T) {
	picks := func(seed, pick uint64) []int {
		srv := states("uuuuu")
		dc := NewDC(Config{Seed: seed}, "D1", srv, pick)
		var out []int
		for id := range uint64(20) {
			r := dc.Issue(id, 0)
			first := r.next
			srv[first] = 'i' // the first choice is gone: the re-pick draws from (seed, id)
			out = append(out, first, dc.Next(&r, 0).Server)
			srv[first] = 'u'
		}
		return out
	}
	a, b := picks(1, 2), picks(1, 2)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("pick %d: %d then %d with the same seeds", i, a[i], b[i])
		}
	}
	for _, other := range [][2]uint64{{1, 3}, {9, 2}} {
		c := picks(other[0], other[1])
		same := true
		for i := range a {
			same = same && a[i] == c[i]
		}
		if same {
			t.Errorf("seeds %v pick exactly as seeds (1, 2) do", other)
		}
	}
}

func TestRedial(t *testing.T) {
	for _, tc := range []struct {
		fails  int
		gone   bool
		wait   time.Duration
		giveUp bool
	}{
		{1, false, 0, false},
		{1, true, 0, false}, // the first redial is at once, even to a server marked gone
		{2, false, ReconnectEvery, false},
		{7, false, ReconnectEvery, false},
		{2, true, 0, true},
	} {
		wait, giveUp := Redial(tc.fails, tc.gone)
		if wait != tc.wait || giveUp != tc.giveUp {
			t.Errorf("Redial(%d, %v) = %v, %v; want %v, %v", tc.fails, tc.gone, wait, giveUp, tc.wait, tc.giveUp)
		}
	}
}

func TestRedialed(t *testing.T) {
	for _, tc := range []struct{ serving, want time.Duration }{
		{0, ReconnectEvery}, // the redial at the loss found it not serving
		{time.Nanosecond, ReconnectEvery},
		{ReconnectEvery, ReconnectEvery},
		{ReconnectEvery + 1, 2 * ReconnectEvery},
		{55 * time.Millisecond, 60 * time.Millisecond},
	} {
		if got := Redialed(tc.serving); got != tc.want {
			t.Errorf("Redialed(%v) = %v, want %v", tc.serving, got, tc.want)
		}
	}
}

func TestOutcomeText(t *testing.T) {
	for _, o := range []Outcome{OK, Failed, Unknown} {
		back, err := ParseOutcome(o.String())
		if err != nil || back != o {
			t.Errorf("ParseOutcome(%q) = %v, %v", o.String(), back, err)
		}
	}
	if _, err := ParseOutcome("maybe"); err == nil {
		t.Error(`ParseOutcome("maybe") succeeded`)
	}
}
