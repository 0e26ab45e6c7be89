package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// reach is who each server still reaches once pairs are cut.
func reach(ids []int, pairs [][2]int) map[int]int {
	cut := map[[2]int]bool{}
	for _, p := range pairs {
		cut[p] = true
	}
	out := map[int]int{}
	for _, a := range ids {
		for _, b := range ids {
			if !cut[[2]int{min(a, b), max(a, b)}] {
				out[a]++ // itself included
			}
		}
	}
	return out
}

func TestShapes(t *testing.T) {
	ids := []int{1, 2, 3, 4, 5}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		ring, err := ShapePairs(ShapeRing, ids, rng)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for id, n := range reach(ids, ring) {
			if n != 3 {
				t.Fatalf("ring %v: p%d reaches %d, want a bare majority (3)", ring, id, n)
			}
			var group []int
			for _, o := range ids {
				if !slices.Contains(ring, [2]int{min(id, o), max(id, o)}) {
					group = append(group, o)
				}
			}
			if k := fmt.Sprint(group); seen[k] {
				t.Fatalf("ring %v: two servers see the same majority %s", ring, k)
			} else {
				seen[k] = true
			}
		}
		one, _ := ShapePairs(ShapeOne, ids, rng)
		if len(one) != 4 {
			t.Fatalf("one: %v", one)
		}
		maj, _ := ShapePairs(ShapeMajority, []int{1, 2, 3, 4}, rng)
		if len(maj) != 3 { // 3|1
			t.Fatalf("majority of 4: %v", maj)
		}
		bridge, _ := ShapePairs(ShapeBridge, ids, rng)
		counts := reach(ids, bridge)
		full := 0
		for _, n := range counts {
			if n == 5 {
				full++
			}
		}
		if len(bridge) != 4 || full != 1 {
			t.Fatalf("bridge %v: reach %v, want one server that reaches all", bridge, counts)
		}
		ow := OneWayPairs(ids, rng)
		if len(ow) == 0 {
			t.Fatal("an empty one-way cut")
		}
	}
	if _, err := ShapePairs("star", ids, rng); err == nil {
		t.Error("an unknown shape drew")
	}
}

// A target with only Kill and Restart refuses the new kinds with Unsupported, and
// keeps playing.
func TestPlayUnsupported(t *testing.T) {
	clock := &fakeClock{}
	done := Play(t.Context(), clock, &recorder{clock: clock}, []Fault{
		{At: time.Second, Kind: Pause, Server: 1},
		{At: 2 * time.Second, Kind: OneWay, Pairs: [][2]int{{1, 2}}},
		{At: 3 * time.Second, Kind: TornTail, Server: 1},
		{At: 4 * time.Second, Kind: IsolateLeader},
		{At: 5 * time.Second, Kind: Kill, Server: 2},
	}, Observer{})
	for _, e := range done[:4] {
		if !errors.As(e.Err, new(Unsupported)) {
			t.Errorf("%v: %v, want Unsupported", e.Fault, e.Err)
		}
	}
	if done[4].Err != nil {
		t.Errorf("kill after them: %v", done[4].Err)
	}
}

// full carries every fault; it logs them.
type full struct {
	recorder
	leader int
}

func (f *full) log(format string, a ...any) {
	f.recorder.log = append(f.recorder.log, fmt.Sprintf(format, a...))
}
func (f *full) Pause(_ context.Context, id int) error  { f.log("pause p%d", id); return nil }
func (f *full) Resume(_ context.Context, id int) error { f.log("resume p%d", id); return nil }
func (f *full) KillLosing(_ context.Context, id int, tear bool) error {
	f.log("kill-losing p%d tear=%v", id, tear)
	return nil
}
func (f *full) SlowDisk(_ context.Context, id int, d time.Duration) error {
	f.log("slow p%d %v", id, d)
	return nil
}
func (f *full) CutOneWay(_ context.Context, pairs [][2]int, cut bool) error {
	f.log("one-way %v %v", pairs, cut)
	return nil
}
func (f *full) SetLinks(_ context.Context, pairs [][2]int, cut, _ bool) error {
	f.log("links %v %v", pairs, cut)
	return nil
}
func (f *full) Leader(context.Context) (int, error) { return f.leader, nil }
func (f *full) ServerIDs() []int                    { return []int{1, 2, 3} }

func TestPlayEveryKind(t *testing.T) {
	clock := &fakeClock{}
	tg := &full{recorder: recorder{clock: clock}, leader: 2}
	done := Play(t.Context(), clock, tg, []Fault{
		{At: 1, Kind: Pause, Server: 1},
		{At: 2, Kind: Resume, Server: 1},
		{At: 3, Kind: LoseUnsynced, Server: 3},
		{At: 4, Kind: TornTail, Server: 3},
		{At: 5, Kind: SlowDisk, Server: 1, Delay: time.Millisecond},
		{At: 6, Kind: IsolateLeader},
		{At: 7, Kind: OneWay, Pairs: [][2]int{{3, 1}}},
		{At: 8, Kind: Heal},
	}, Observer{})
	want := []string{"pause p1", "resume p1", "kill-losing p3 tear=false", "kill-losing p3 tear=true", "slow p1 1ms",
		"links [[1 2] [2 3]] true", "one-way [[3 1]] true", "links [[1 2] [2 3]] false", "one-way [[3 1]] false"}
	if !slices.Equal(tg.recorder.log, want) {
		t.Errorf("target saw\n%q\nwant\n%q", tg.recorder.log, want)
	}
	if done[5].Server != 2 {
		t.Errorf("isolate-leader executed as %v", done[5].Fault)
	}
	for _, e := range done {
		if e.Err != nil {
			t.Errorf("%v: %v", e.Fault, e.Err)
		}
	}
}

// failingCut cuts, but reports an error (an end that did not answer).
type failingCut struct{ full }

func (f *failingCut) SetLinks(ctx context.Context, pairs [][2]int, cut, b bool) error {
	f.full.SetLinks(ctx, pairs, cut, b)
	if cut {
		return errors.New("p1: no answer")
	}
	return nil
}

// A cut that failed at some end is healed all the same: the other ends are cut.
func TestHealAfterFailedCut(t *testing.T) {
	clock := &fakeClock{}
	tg := &failingCut{full{recorder: recorder{clock: clock}}}
	done := Play(t.Context(), clock, tg, []Fault{
		{At: 1, Kind: Partition, Pairs: [][2]int{{1, 2}}},
		{At: 2, Kind: Heal},
	}, Observer{})
	if done[0].Err == nil || done[1].Err != nil {
		t.Fatalf("executed %+v", done)
	}
	if want := []string{"links [[1 2]] true", "links [[1 2]] false"}; !slices.Equal(tg.recorder.log, want) {
		t.Errorf("target saw %q, want %q", tg.recorder.log, want)
	}
}
