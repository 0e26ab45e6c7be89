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

// RandomFaults draws a fault schedule for one seed over a run of duration d, from
// every fault the nemesis knows: with even odds an outage (every server of a random
// data center killed at one instant, each restarted 0.2 to 3 s later), kills of random
// servers, each restarted after 0.2 to 3 s, each kill a plain one, one that loses the
// server's unsynced writes, or one that also tears its log's tail; with even odds a
// cut of links healed after 0.5 to 3 s, in one of the shapes (two random groups,
// halves, one server, a majority, a majorities ring, a bridge, one data center, the
// leader at that instant, or a one-way cut); with even odds a pause of a running
// server for 0.2 to 3 s; and with odds of one in three a slow disk (5 to 50 ms more per
// log write) on a server for a while. Every server runs again, every link is restored
// and every disk is back to speed by d - 2 s, so that the cluster can converge before
// the checks. The same seed always gives the same schedule (kills, restarts and the
// cut's instants as before the other faults were added: those come from a second
// stream).
func RandomFaults(topo *topology.Topology, seed uint64, d time.Duration) []nemesis.Fault {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	more := rand.New(rand.NewPCG(seed, 0xfa17)) // the kinds and faults added since
	ids := topo.Servers()
	last := d - 2*time.Second
	span := func(r *rand.Rand, lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
	}
	var faults []nemesis.Fault
	busy := map[int][][2]time.Duration{} // server -> when it is down or paused
	free := func(id int, from, to time.Duration) bool {
		for _, b := range busy[id] {
			if from < b[1]+100*time.Millisecond && b[0] < to+100*time.Millisecond {
				return false
			}
		}
		return true
	}
	kills := []nemesis.Kind{nemesis.Kill, nemesis.LoseUnsynced, nemesis.TornTail}
	down := func(id int, kill, restart time.Duration, kind nemesis.Kind) {
		busy[id] = append(busy[id], [2]time.Duration{kill, restart})
		faults = append(faults,
			nemesis.Fault{At: kill, Kind: kind, Server: id, Source: "random"},
			nemesis.Fault{At: restart, Kind: nemesis.Restart, Server: id, Source: "random"})
	}
	if rng.IntN(2) == 0 {
		dcs := topo.DCs()
		dc := dcs[rng.IntN(len(dcs))]
		kill := span(rng, time.Second, last-time.Second)
		kind := kills[more.IntN(len(kills))]
		for _, id := range dc.Servers {
			down(id, kill, min(kill+span(rng, 200*time.Millisecond, 3*time.Second), last), kind)
		}
	}
	for range 1 + rng.IntN(4) {
		id := ids[rng.IntN(len(ids))]
		kill := span(rng, time.Second, last-300*time.Millisecond)
		restart := min(kill+span(rng, 200*time.Millisecond, 3*time.Second), last)
		kind := kills[more.IntN(len(kills))]
		if kill < last-200*time.Millisecond && free(id, kill, restart) {
			down(id, kill, restart, kind)
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
		at := span(rng, time.Second, last-time.Second)
		cut := nemesis.Fault{At: at, Kind: nemesis.Partition, Pairs: nemesis.Pairs([][]int{a, b}), Source: "random"}
		switch shape := partitionShapes[more.IntN(len(partitionShapes))]; shape {
		case "groups":
		case nemesis.ShapeDC:
			dcs := topo.DCs()
			dc := dcs[more.IntN(len(dcs))]
			var rest []int
			for _, id := range ids {
				if topo.DC(id) != dc.Name {
					rest = append(rest, id)
				}
			}
			cut.Pairs, cut.Shape = nemesis.Pairs([][]int{dc.Servers, rest}), shape+":"+dc.Name
		case nemesis.ShapeLeader:
			cut = nemesis.Fault{At: at, Kind: nemesis.IsolateLeader, Source: "random"}
		case "one-way":
			cut = nemesis.Fault{At: at, Kind: nemesis.OneWay, Pairs: nemesis.OneWayPairs(ids, more), Source: "random"}
		default:
			pairs, err := nemesis.ShapePairs(shape, ids, more)
			if err == nil && len(pairs) > 0 {
				cut.Pairs, cut.Shape = pairs, shape
			}
		}
		faults = append(faults, cut,
			nemesis.Fault{At: min(at+span(rng, 500*time.Millisecond, 3*time.Second), last), Kind: nemesis.Heal, Source: "random"})
	}
	if more.IntN(2) == 0 {
		id := ids[more.IntN(len(ids))]
		at := span(more, time.Second, last-300*time.Millisecond)
		until := min(at+span(more, 200*time.Millisecond, 3*time.Second), last)
		if until > at && free(id, at, until) {
			busy[id] = append(busy[id], [2]time.Duration{at, until})
			faults = append(faults,
				nemesis.Fault{At: at, Kind: nemesis.Pause, Server: id, Source: "random"},
				nemesis.Fault{At: until, Kind: nemesis.Resume, Server: id, Source: "random"})
		}
	}
	if more.IntN(3) == 0 {
		id := ids[more.IntN(len(ids))]
		at := span(more, time.Second, last-time.Second)
		delay := span(more, 5*time.Millisecond, 50*time.Millisecond).Round(time.Millisecond)
		faults = append(faults,
			nemesis.Fault{At: at, Kind: nemesis.SlowDisk, Server: id, Delay: delay, Source: "random"},
			nemesis.Fault{At: min(at+span(more, 500*time.Millisecond, 5*time.Second), last), Kind: nemesis.SlowDisk, Server: id, Source: "random"})
	}
	slices.SortStableFunc(faults, func(x, y nemesis.Fault) int { return cmp.Compare(x.At, y.At) })
	return faults
}

// partitionShapes are the cuts RandomFaults draws from: "groups" is two random groups
// of any sizes, "one-way" a one-way cut.
var partitionShapes = []string{"groups", nemesis.ShapeHalves, nemesis.ShapeOne, nemesis.ShapeMajority, nemesis.ShapeRing,
	nemesis.ShapeBridge, nemesis.ShapeDC, nemesis.ShapeLeader, "one-way"}

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
// from the generator named (Schedule): CheckDuration long unless keepDuration, at
// CheckLoad unless keepRates.
func ForCheck(cfg Config, keepDuration, keepRates bool, schedule string) (Config, error) {
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
	var err error
	cfg.Faults, err = Schedule(schedule, cfg.Topology, cfg.Seed, cfg.Duration)
	return cfg, err
}
