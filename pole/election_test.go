package pole

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/polebench/polebench/zxid"
)

const tick = 10 * time.Millisecond

// electionConfig is the default configuration without heartbeats (the history oracle
// needs none), T = 200 ms.
func electionConfig(ids []int, o Oracle) func(id int) Config {
	return func(id int) Config {
		c := DefaultConfig(id, ids, o, tick)
		c.HeartbeatTicks = 0
		return c
	}
}

func servers(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i + 1
	}
	return ids
}

// randomDelays gives every ordered pair its own one-way delay in [lo, hi].
func randomDelays(rng *rand.Rand, ids []int, lo, hi time.Duration) func(a, b int) time.Duration {
	d := map[[2]int]time.Duration{}
	for _, a := range ids {
		for _, b := range ids {
			d[[2]int{a, b}] = lo + time.Duration(rng.Int63n(int64(hi-lo)+1))
		}
	}
	return func(a, b int) time.Duration { return d[[2]int{a, b}] }
}

// In timely runs (delays well under T, starts close together) every live process
// elects the highest proposal, exactly once.
func TestTimelyRunsElectHighestProposal(t *testing.T) {
	for seed := int64(1); seed <= 100; seed++ {
		rng := rand.New(rand.NewSource(seed))
		n := []int{3, 5, 7}[rng.Intn(3)]
		ids := servers(n)
		s := newSim(t, seed, ids, electionConfig(ids, History{}))
		s.delay = randomDelays(rng, ids, time.Millisecond, 40*time.Millisecond)
		down := rng.Perm(n)[:rng.Intn(n-len(ids)/2)] // at most f never start
		want := 0
		for _, id := range ids {
			s.zxid[id] = zxid.Zxid(rng.Intn(3)) << 32 // ties are common: the id decides
			if slices.Contains(down, id-1) {
				continue
			}
			if want == 0 || s.zxid[id] > s.zxid[want] || s.zxid[id] == s.zxid[want] && id > want {
				want = id
			}
			s.at(time.Duration(rng.Int63n(int64(50*time.Millisecond))), func() { s.start(id) })
		}
		s.run(2 * time.Second)
		for _, id := range s.live() {
			evs := s.leaderEvents[id]
			if len(evs) != 1 || evs[0].Leader != want {
				t.Fatalf("seed %d: p%d's leader events %v, want one for p%d: %s", seed, id, evs, want, s.describe())
			}
		}
	}
}

// Under heavy message loss the retry timer (lines 19-25) still gets every process to a
// leader. The control run without retries shows it is the retries that do it.
func TestRetryTimerReachesLeaderUnderLoss(t *testing.T) {
	stuck := func(retry bool) (runs int) {
		for seed := int64(1); seed <= 30; seed++ {
			rng := rand.New(rand.NewSource(seed))
			ids := servers(5)
			cfg := electionConfig(ids, History{})
			if !retry {
				cfg = func(id int) Config {
					c := electionConfig(ids, History{})(id)
					c.RetryTicks = 1 << 40
					return c
				}
			}
			s := newSim(t, seed, ids, cfg)
			s.delay = randomDelays(rng, ids, 5*time.Millisecond, 30*time.Millisecond)
			s.loss = 0.4
			for _, id := range ids {
				s.zxid[id] = zxid.Zxid(rng.Intn(100))
				s.start(id)
			}
			s.run(2 * time.Minute)
			for _, id := range ids {
				if s.leaderOf(id) == 0 {
					if retry {
						t.Errorf("seed %d: p%d has no leader after 2 min at 40%% loss: %s", seed, id, s.describe())
					}
					runs++
					break
				}
			}
		}
		return runs
	}
	if n := stuck(true); n > 0 {
		t.Fatalf("%d runs left a process without a leader", n)
	}
	if n := stuck(false); n == 0 {
		t.Fatalf("control: without retries every run still found a leader; the test proves nothing")
	}
}

// A process that starts late joins the existing leader through votes (lines 34-36,
// 54-63), even though its own proposal is higher: leader stability.
func TestLateProcessAdoptsLeaderThroughVotes(t *testing.T) {
	for seed := int64(1); seed <= 10; seed++ {
		rng := rand.New(rand.NewSource(seed))
		ids := servers(5)
		s := newSim(t, seed, ids, electionConfig(ids, History{}))
		s.delay = randomDelays(rng, ids, time.Millisecond, 40*time.Millisecond)
		for _, id := range ids[:4] {
			s.start(id)
		}
		s.run(5 * time.Second)
		if l, ok := s.agreed(); !ok || l != 4 {
			t.Fatalf("seed %d: p1-p4 should elect p4: %s", seed, s.describe())
		}
		s.start(5)
		s.run(10 * time.Second)
		st := s.nodes[5].Status()
		if st.Leader != 4 || st.Proposal.ID != 5 {
			t.Fatalf("seed %d: late p5 should follow p4 with its own higher proposal unused: %v", seed, st)
		}
		for _, id := range ids[:4] {
			if len(s.leaderEvents[id]) != 1 {
				t.Fatalf("seed %d: p%d changed leader: %v", seed, id, s.leaderEvents[id])
			}
		}
	}
}

// A leader that crashed after the election is not adopted through votes: its own vote
// is missing (line 60). Nor does the late process elect itself with the votes for the
// crashed leader (line 65 counts only votes for its own proposal): it waits, and once
// the others notice the crash they all elect a live leader.
func TestCrashedLeaderIsNotAdoptedThroughVotes(t *testing.T) {
	ids := servers(5)
	s := newSim(t, 1, ids, electionConfig(ids, History{}))
	s.delay = randomDelays(rand.New(rand.NewSource(1)), ids, time.Millisecond, 40*time.Millisecond)
	for _, id := range []int{1, 2, 4, 5} {
		s.start(id)
	}
	s.run(5 * time.Second)
	if l, ok := s.agreed(); !ok || l != 5 {
		t.Fatalf("p1, p2, p4, p5 should elect p5: %s", s.describe())
	}
	s.crash(5) // no failure detector: the others keep believing in p5
	s.start(3)
	s.run(10 * time.Second)
	st := s.nodes[3].Status()
	votes := 0
	for _, v := range st.Votes {
		if v.Leader == 5 {
			votes++
		}
	}
	if votes < 3 {
		t.Fatalf("p3 should hold a quorum of votes for p5 (without p5's own): %v", st)
	}
	for _, e := range s.leaderEvents[3] {
		if e.Leader == 5 {
			t.Fatalf("p3 adopted the crashed p5: %v", s.leaderEvents[3])
		}
	}
	if st.Leader != 0 || !st.Electing {
		t.Fatalf("p3 should still be electing, without supporters: %v", st)
	}
	for _, id := range []int{1, 2, 4} { // the failure detector at last
		s.nodes[id].NewElection()
		s.flush(id)
	}
	s.run(15 * time.Second)
	if l, ok := s.agreed(); !ok || l == 5 {
		t.Fatalf("after the others looked too, all should follow one live leader: %s", s.describe())
	}
}

// The property: whatever happens while the network misbehaves (loss, wild delays,
// crashes and restarts, spurious elections), once it is timely again no two live
// processes believe in different leaders of one epoch, and all of them follow one live
// leader. The failure detector stands in for the broadcast layer; its leader timeout is
// random (as raft's election timeout) in one run and fixed (as poled's) in the other.
func TestPropertyOneLeaderOnceTimely(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		t.Run(fmt.Sprintf("fixed=%v", fixed), func(t *testing.T) { propertyOneLeader(t, fixed) })
	}
}

func propertyOneLeader(t *testing.T, fixedFD bool) {
	seeds := int64(120)
	if testing.Short() {
		seeds = 30
	}
	const heal, end = 20 * time.Second, 50 * time.Second
	oracles := []Oracle{History{}, Rotating{}, Latency{}, Consensus{}, Request{}}
	for seed := int64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewSource(seed))
		ids := servers([]int{3, 5}[rng.Intn(2)])
		o := oracles[rng.Intn(len(oracles))]
		s := newSim(t, seed, ids, func(id int) Config {
			c := DefaultConfig(id, ids, o, tick)
			c.MaxRetryTicks = 32 * c.ElectionTicks
			return c
		})
		s.delay = randomDelays(rng, ids, time.Millisecond, 60*time.Millisecond)
		s.loss, s.jitter, s.fdTicks, s.fixedFD = rng.Float64()*0.5, rng.Float64(), 50, fixedFD
		for _, id := range ids {
			s.zxid[id] = zxid.Zxid(rng.Intn(4))
			s.rate[id] = float64(rng.Intn(3) * 100)
			s.at(time.Duration(rng.Int63n(int64(2*time.Second))), func() { s.start(id) })
		}
		f := len(ids) / 2
		for _, victim := range rng.Perm(len(ids))[:rng.Intn(f+1)] {
			id := ids[victim]
			crashAt := 2*time.Second + time.Duration(rng.Int63n(int64(13*time.Second)))
			s.at(crashAt, func() { s.crash(id) })
			if rng.Intn(2) == 0 {
				s.at(crashAt+time.Duration(rng.Int63n(int64(3*time.Second))), func() { s.start(id) })
			}
		}
		for range rng.Intn(5) {
			id := ids[rng.Intn(len(ids))]
			s.at(time.Duration(rng.Int63n(int64(heal))), func() {
				if s.up[id] {
					s.nodes[id].NewElection()
					s.flush(id)
				}
			})
		}
		s.run(heal)
		s.loss, s.jitter = 0, 0.02
		for at := end - 10*time.Second; at <= end; at += time.Second {
			s.run(at)
			if a, b, bad := s.sameEpochConflict(); bad {
				t.Fatalf("seed %d (%s): p%d and p%d follow different leaders in one epoch: %s", seed, o.Name(), a, b, s.describe())
			}
			l, ok := s.agreed()
			if !ok || !s.up[l] || s.leaderOf(l) != l {
				t.Fatalf("seed %d (%s): no single live leader (got p%d) %v after the network healed: %s", seed, o.Name(), l, at-heal, s.describe())
			}
		}
	}
}
