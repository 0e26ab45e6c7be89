package sim

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/topology"
)

// The generators both checkers draw a seed's schedule from (--schedule).
const (
	// ScheduleDense is DenseFaults: a fault every one to three seconds, overlapping,
	// in shapes aimed at the protocol. The checkers' default.
	ScheduleDense = "dense"
	// ScheduleClassic is RandomFaults: one to four kills, at most one outage, one cut
	// and one pause (what the checkers drew before DenseFaults; the seeds of the
	// simulator's regression tests are its).
	ScheduleClassic = "classic"
)

// Schedules lists the generators by name.
var Schedules = []string{ScheduleDense, ScheduleClassic}

// Schedule draws seed's schedule over a run of duration d from the generator named.
func Schedule(name string, topo *topology.Topology, seed uint64, d time.Duration) ([]nemesis.Fault, error) {
	switch name {
	case ScheduleDense, "":
		return DenseFaults(topo, seed, d), nil
	case ScheduleClassic:
		return RandomFaults(topo, seed, d), nil
	}
	return nil, fmt.Errorf("--schedule %q: want %s or %s", name, ScheduleDense, ScheduleClassic)
}

// DenseFaults draws a schedule with Jepsen's density and intent: from 1 s, a new fault
// every 1 to 3 s, each lasting up to several seconds, so that they overlap, each in a
// shape chosen against the protocol:
//   - behind: a minority (half the time a data center that is one) cut off for 2 to
//     5 s falls behind; the majority side (the newest quorum) crashes at one instant
//     shortly before the heal, and after it restarts either one member first, alone
//     with the behind minority for 1 to 3 s, or all in a quick random order;
//   - majority: a random majority crashes at one instant and restarts in a random
//     order, 0.1 to 1 s apart;
//   - leader: whoever leads at the instant is cut off for 1 to 4 s (the nemesis
//     resolves the leader when it plays the fault);
//   - dc: one data center cut off (the leader's quorum, where it leads from its own
//     data center) or crashed, losing unsynced writes;
//   - pause: a server frozen for 0.5 to 3 s (a follower that was in the last quorum
//     stops answering; its peers' streams stay open);
//   - kill: one server killed (plainly, losing unsynced writes, or tearing its log's
//     tail), back after 0.2 to 3 s;
//   - cut: a partition in one of Jepsen's shapes (halves, one, majority, ring,
//     bridge) or a one-way cut, for 0.5 to 3 s;
//   - slow: a server's log writes 5 to 50 ms slower for up to 5 s.
//
// A server is never killed or paused while it is down or paused already, and one cut
// is healed before the next begins. Every server runs again, every link is restored
// and every disk is back to speed by d - 2 s. The same seed and duration always give
// the same schedule.
func DenseFaults(topo *topology.Topology, seed uint64, d time.Duration) []nemesis.Fault {
	g := &dense{topo: topo, ids: topo.Servers(), rng: rand.New(rand.NewPCG(seed, 0xde45e)), last: d - 2*time.Second,
		busy: map[int][][2]time.Duration{}}
	shapes := []func(at time.Duration){g.behind, g.majority, g.leader, g.dc, g.pause, g.kill, g.cut, g.slow}
	for at := time.Second; at < g.last-500*time.Millisecond; at += g.span(time.Second, 3*time.Second) {
		shapes[g.rng.IntN(len(shapes))](at)
	}
	slices.SortStableFunc(g.faults, func(x, y nemesis.Fault) int { return cmp.Compare(x.At, y.At) })
	return g.faults
}

// dense is DenseFaults's state while it draws.
type dense struct {
	topo     *topology.Topology
	ids      []int
	rng      *rand.Rand
	last     time.Duration
	faults   []nemesis.Fault
	busy     map[int][][2]time.Duration // server -> when it is down or paused
	cutUntil time.Duration              // the current cut's heal
}

func (g *dense) span(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(g.rng.Int64N(int64(hi-lo)+1))
}

func (g *dense) add(f nemesis.Fault) {
	f.Source = "dense"
	g.faults = append(g.faults, f)
}

// free says whether every server of ids runs unpaused from from to to (with 100 ms
// to spare).
func (g *dense) free(from, to time.Duration, ids ...int) bool {
	for _, id := range ids {
		for _, b := range g.busy[id] {
			if from < b[1]+100*time.Millisecond && b[0] < to+100*time.Millisecond {
				return false
			}
		}
	}
	return true
}

func (g *dense) killKind() nemesis.Kind {
	return []nemesis.Kind{nemesis.Kill, nemesis.LoseUnsynced, nemesis.TornTail}[g.rng.IntN(3)]
}

// down kills ids at at and restarts them one by one from their restarts' instants.
func (g *dense) down(at time.Duration, kind nemesis.Kind, ids []int, restarts []time.Duration) {
	for i, id := range ids {
		g.busy[id] = append(g.busy[id], [2]time.Duration{at, restarts[i]})
		g.add(nemesis.Fault{At: at, Kind: kind, Server: id})
		g.add(nemesis.Fault{At: restarts[i], Kind: nemesis.Restart, Server: id})
	}
}

// staggered is when each of k servers killed at at restarts: one by one, gap apart
// (drawn between lo and hi), the first after first; all by g.last.
func (g *dense) staggered(at, first time.Duration, k int, lo, hi time.Duration) []time.Duration {
	out := make([]time.Duration, k)
	t := at + first
	for i := range out {
		out[i] = min(t, g.last)
		t += g.span(lo, hi)
	}
	return out
}

func (g *dense) perm() []int {
	out := make([]int, len(g.ids))
	for i, p := range g.rng.Perm(len(g.ids)) {
		out[i] = g.ids[p]
	}
	return out
}

// cutFor cuts pairs (or the fault f, if given) from at for a while; false if a cut
// is on then or it would not heal in time.
func (g *dense) cutFor(at, lo, hi time.Duration, f nemesis.Fault) (heal time.Duration, ok bool) {
	if at < g.cutUntil+100*time.Millisecond || at >= g.last-lo {
		return 0, false
	}
	heal = min(at+g.span(lo, hi), g.last)
	f.At = at
	g.add(f)
	g.add(nemesis.Fault{At: heal, Kind: nemesis.Heal})
	g.cutUntil = heal
	return heal, true
}

func (g *dense) behind(at time.Duration) {
	p := g.perm()
	minority := p[:1+g.rng.IntN((len(p)-1)/2)]
	if dcs := g.topo.DCs(); g.rng.IntN(2) == 0 {
		// The data center that falls behind by itself, far from the leader's quorum.
		if dc := dcs[g.rng.IntN(len(dcs))]; 2*len(dc.Servers) < len(p) {
			minority = dc.Servers
		}
	}
	var majority []int
	for _, id := range p {
		if !slices.Contains(minority, id) {
			majority = append(majority, id)
		}
	}
	heal, ok := g.cutFor(at, 2*time.Second, 5*time.Second,
		nemesis.Fault{Kind: nemesis.Partition, Pairs: nemesis.Pairs([][]int{minority, majority}), Shape: "behind"})
	if !ok {
		g.kill(at)
		return
	}
	// The majority side crashes while the minority is still behind; after the heal,
	// either one of it comes back first and alone with the behind minority (a quorum
	// that must not forget what the crashed side committed), or all come back
	// quickly in a random order.
	crash := max(at+time.Second, heal-g.span(0, 500*time.Millisecond))
	first := heal - crash + g.span(100*time.Millisecond, 500*time.Millisecond)
	gap := [2]time.Duration{time.Second, 3 * time.Second}
	if g.rng.IntN(2) == 0 {
		gap = [2]time.Duration{50 * time.Millisecond, 500 * time.Millisecond}
	}
	restarts := g.staggered(crash, first, len(majority), gap[0], gap[1])
	if crash < g.last-200*time.Millisecond && g.free(crash, restarts[len(restarts)-1], majority...) {
		g.down(crash, g.killKind(), majority, restarts)
	}
}

func (g *dense) majority(at time.Duration) {
	p := g.perm()[:len(g.ids)/2+1]
	restarts := g.staggered(at, g.span(200*time.Millisecond, 2*time.Second), len(p), 100*time.Millisecond, time.Second)
	if at < g.last-200*time.Millisecond && g.free(at, restarts[len(restarts)-1], p...) {
		g.down(at, g.killKind(), p, restarts)
	}
}

func (g *dense) leader(at time.Duration) {
	if _, ok := g.cutFor(at, time.Second, 4*time.Second, nemesis.Fault{Kind: nemesis.IsolateLeader}); !ok {
		g.pause(at)
	}
}

func (g *dense) dc(at time.Duration) {
	dcs := g.topo.DCs()
	dc := dcs[g.rng.IntN(len(dcs))]
	if g.rng.IntN(2) == 0 {
		var rest []int
		for _, id := range g.ids {
			if g.topo.DC(id) != dc.Name {
				rest = append(rest, id)
			}
		}
		if _, ok := g.cutFor(at, time.Second, 4*time.Second, nemesis.Fault{Kind: nemesis.Partition,
			Pairs: nemesis.Pairs([][]int{dc.Servers, rest}), Shape: nemesis.ShapeDC + ":" + dc.Name}); ok {
			return
		}
	}
	restarts := g.staggered(at, g.span(200*time.Millisecond, 2*time.Second), len(dc.Servers), 0, 500*time.Millisecond)
	if at < g.last-200*time.Millisecond && g.free(at, restarts[len(restarts)-1], dc.Servers...) {
		g.down(at, nemesis.LoseUnsynced, dc.Servers, restarts)
	}
}

func (g *dense) pause(at time.Duration) {
	id := g.ids[g.rng.IntN(len(g.ids))]
	until := min(at+g.span(500*time.Millisecond, 3*time.Second), g.last)
	if until > at && g.free(at, until, id) {
		g.busy[id] = append(g.busy[id], [2]time.Duration{at, until})
		g.add(nemesis.Fault{At: at, Kind: nemesis.Pause, Server: id})
		g.add(nemesis.Fault{At: until, Kind: nemesis.Resume, Server: id})
	}
}

func (g *dense) kill(at time.Duration) {
	id := g.ids[g.rng.IntN(len(g.ids))]
	restart := min(at+g.span(200*time.Millisecond, 3*time.Second), g.last)
	if at < g.last-200*time.Millisecond && g.free(at, restart, id) {
		g.down(at, g.killKind(), []int{id}, []time.Duration{restart})
	}
}

func (g *dense) cut(at time.Duration) {
	shape := []string{nemesis.ShapeHalves, nemesis.ShapeOne, nemesis.ShapeMajority, nemesis.ShapeRing, nemesis.ShapeBridge, "one-way"}[g.rng.IntN(6)]
	f := nemesis.Fault{Kind: nemesis.Partition, Shape: shape}
	if shape == "one-way" {
		f = nemesis.Fault{Kind: nemesis.OneWay, Pairs: nemesis.OneWayPairs(g.ids, g.rng)}
	} else if pairs, err := nemesis.ShapePairs(shape, g.ids, g.rng); err == nil && len(pairs) > 0 {
		f.Pairs = pairs
	} else {
		return
	}
	if _, ok := g.cutFor(at, 500*time.Millisecond, 3*time.Second, f); !ok {
		g.kill(at)
	}
}

func (g *dense) slow(at time.Duration) {
	id := g.ids[g.rng.IntN(len(g.ids))]
	delay := g.span(5*time.Millisecond, 50*time.Millisecond).Round(time.Millisecond)
	g.add(nemesis.Fault{At: at, Kind: nemesis.SlowDisk, Server: id, Delay: delay})
	g.add(nemesis.Fault{At: min(at+g.span(500*time.Millisecond, 5*time.Second), g.last), Kind: nemesis.SlowDisk, Server: id})
}
