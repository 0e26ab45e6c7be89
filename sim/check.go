package sim

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/topology"
)

// RandomFaults draws a fault schedule for one seed over a run of duration d: with even
// odds an outage (every server of a random data center killed at one instant, each
// restarted 0.2 to 3 s later), kills of random servers, each restarted after 0.2 to
// 3 s, and with even odds a partition of the servers into two random groups, healed
// after 0.5 to 3 s. Every server runs again and every link is restored by d - 2 s, so
// that the cluster can converge before the checks. The same seed always gives the
// same schedule.
func RandomFaults(topo *topology.Topology, seed uint64, d time.Duration) []nemesis.Fault {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	ids := topo.Servers()
	last := d - 2*time.Second
	span := func(lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	var faults []nemesis.Fault
	busy := map[int][][2]time.Duration{} // server -> when it is down
	free := func(id int, from, to time.Duration) bool {
		for _, b := range busy[id] {
			if from < b[1]+100*time.Millisecond && b[0] < to+100*time.Millisecond {
				return false
			}
		}
		return true
	}
	down := func(id int, kill, restart time.Duration) {
		busy[id] = append(busy[id], [2]time.Duration{kill, restart})
		faults = append(faults,
			nemesis.Fault{At: kill, Kind: nemesis.Kill, Server: id, Source: "random"},
			nemesis.Fault{At: restart, Kind: nemesis.Restart, Server: id, Source: "random"})
	}
	if rng.IntN(2) == 0 {
		dcs := topo.DCs()
		dc := dcs[rng.IntN(len(dcs))]
		kill := span(time.Second, last-time.Second)
		for _, id := range dc.Servers {
			down(id, kill, min(kill+span(200*time.Millisecond, 3*time.Second), last))
		}
	}
	for range 1 + rng.IntN(4) {
		id := ids[rng.IntN(len(ids))]
		kill := span(time.Second, last-300*time.Millisecond)
		restart := min(kill+span(200*time.Millisecond, 3*time.Second), last)
		if kill < last-200*time.Millisecond && free(id, kill, restart) {
			down(id, kill, restart)
		}
	}
	if rng.IntN(2) == 0 {
		perm := rng.Perm(len(ids))
		k := 1 + rng.IntN(len(ids)-1)
		var a, b []int
		for i, p := range perm {
			if i < k {
				a = append(a, ids[p])
			} else {
				b = append(b, ids[p])
			}
		}
		at := span(time.Second, last-time.Second)
		faults = append(faults,
			nemesis.Fault{At: at, Kind: nemesis.Partition, Pairs: nemesis.Pairs([][]int{a, b}), Source: "random"},
			nemesis.Fault{At: min(at+span(500*time.Millisecond, 3*time.Second), last), Kind: nemesis.Heal, Source: "random"})
	}
	slices.SortStableFunc(faults, func(x, y nemesis.Fault) int { return cmp.Compare(x.At, y.At) })
	return faults
}

// Check runs cfg and checks what must hold whatever the faults (safety): no
// acknowledged write lost, every final value on a serving server explained, a
// linearizable history, and every server holding the same state once the cluster
// converged. Liveness is reported apart: whether every server ran, served and caught
// up within 10 s of the end. res is the run, for its directory.
func Check(ctx context.Context, cfg Config) (res *Result, safety, liveness error) {
	cfg.digests = true
	res, err := Run(ctx, cfg)
	if err != nil {
		return res, err, nil
	}
	var errs []error
	if err := res.Verification.Err(); err != nil {
		errs = append(errs, err)
	}
	ids := slices.Sorted(maps.Keys(res.Digests))
	for _, id := range ids {
		if res.Digests[id] != res.Digests[ids[0]] {
			errs = append(errs, fmt.Errorf("p%d's state differs from p%d's at the same zxid", id, ids[0]))
		}
	}
	switch {
	case !res.Converged:
		liveness = errors.New("the servers did not converge within 10 s of the end")
	case len(res.Digests) != cfg.Topology.N():
		liveness = fmt.Errorf("%d of %d servers run at the end", len(res.Digests), cfg.Topology.N())
	}
	return res, errors.Join(errs...), liveness
}

// digest is the hash of a server's state as its snapshot encodes it.
func digest(t *datatree.Tree) string {
	h := sha256.New()
	if err := t.WriteSnapshot(h); err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:8])
}

// A check's runs are short and lightly loaded unless chosen otherwise: the faults are
// the point, not the latency.
const (
	CheckDuration    = 10 * time.Second
	CheckLoad        = 200.0 // req/s in all, split over the DCs as the spec splits it
	MinCheckDuration = 5 * time.Second
)

// ForCheck makes cfg, a spec's run, a check's run with its seed's random schedule
// (RandomFaults): CheckDuration long unless keepDuration, at CheckLoad unless keepRates.
func ForCheck(cfg Config, keepDuration, keepRates bool) (Config, error) {
	if !keepDuration {
		cfg.Duration = CheckDuration
	}
	if !keepRates {
		total := 0.0
		for _, r := range cfg.Rates {
			total += r
		}
		rates := make(map[string]float64, len(cfg.Rates))
		for dc, r := range cfg.Rates {
			rates[dc] = r * CheckLoad / total
		}
		cfg.Rates = rates
	}
	if cfg.Duration < MinCheckDuration {
		return cfg, fmt.Errorf("--duration %v: random schedules need at least %v (faults from 1 s, everything back 2 s before the end)", cfg.Duration, MinCheckDuration)
	}
	cfg.Faults = RandomFaults(cfg.Topology, cfg.Seed, cfg.Duration)
	return cfg, nil
}
