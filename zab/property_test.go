package zab

import (
	"math/rand/v2"
	"testing"
)

// Random crash and restart schedules, random topologies, disks, windows and
// election choices. The sim checks on every apply that all servers apply the same
// sequence (committed prefixes identical) and that acknowledged writes hold the
// data the client sent; at the end every server must serve the same state holding
// every acknowledged write, and new writes must commit.
func TestRandomCrashRestart(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 8
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		randomFaults(t, seed, false)
	}
}

// The same with links between two servers cut and healed at random as well.
func TestRandomCrashRestartPartition(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 8
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		randomFaults(t, 1000+seed, true)
	}
}

func randomFaults(t *testing.T, seed uint64, partitions bool) {
	t.Helper()
	{
		r := rand.New(rand.NewPCG(seed, 42))
		cfg := defaultSimConfig()
		delays := map[[2]int]int64{}
		for a := 1; a <= cfg.n; a++ {
			for b := a + 1; b <= cfg.n; b++ {
				d := 50 + r.Int64N(15*ms)
				delays[[2]int{a, b}], delays[[2]int{b, a}] = d, d
			}
		}
		cfg.delayUS = func(a, b int) int64 { return delays[[2]int{a, b}] }
		cfg.jitter = 0.02
		cfg.diskUS = r.Int64N(3) * 500
		cfg.zab.Window = 1 + r.IntN(60)
		cfg.localSnap = 1 + r.IntN(150)
		cfg.chunk = 64 + r.IntN(4096)
		cfg.statePad = r.IntN(10_000)
		if r.IntN(2) == 0 {
			cfg.zab.FetchFrom = FetchHighestID
		}
		cfg.policy = []func(*sim) int{historyPolicy, rotatingPolicy, randomPolicy}[r.IntN(3)]
		s := newSim(t, seed, cfg)

		// Chaos: a fault every 20..200 ms for 2 s.
		for s.now < 2000*ms {
			s.runFor(20*ms + r.Int64N(180*ms))
			down := []int{}
			for _, nd := range s.nodes[1:] {
				if !nd.up {
					down = append(down, nd.id)
				}
			}
			switch {
			case partitions && r.IntN(4) == 0:
				a, b := 1+r.IntN(cfg.n), 1+r.IntN(cfg.n)
				if a != b {
					s.partition(a, b, !s.cut[[2]int{a, b}])
				}
			case len(down) > 0 && r.IntN(2) == 0:
				s.restart(down[r.IntN(len(down))])
			case len(down) < 3:
				victim := 1 + r.IntN(cfg.n)
				if l := s.leaderServing(); l != nil && r.IntN(2) == 0 {
					victim = l.id // the leader often, mid-broadcast
				}
				if s.nodes[victim].up {
					s.crash(victim)
				}
			}
		}
		for _, nd := range s.nodes[1:] {
			if !nd.up {
				s.restart(nd.id)
			}
		}
		clear(s.cut)
		s.converge(5000 * ms)
		s.checkFinal()
		acked := len(s.acked)
		for range 20 {
			s.clientWrite(0)
		}
		s.converge(2000 * ms)
		s.checkFinal()
		if len(s.acked) < acked+20 {
			t.Fatalf("seed %d: %d of 20 writes after recovery acknowledged", seed, len(s.acked)-acked)
		}
		t.Logf("seed %d: window %d, acked %d, unknown %d, applied %d, leader p%d, snaps %d, truncs %d, fetches %d",
			seed, cfg.zab.Window, len(s.acked), s.unknown, len(s.canon), s.leaderServing().id, s.sent[MsgSnap], s.sent[MsgTrunc], s.sent[MsgFetch])
	}
}
