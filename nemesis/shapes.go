package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Partition shapes, after Jepsen's nemesis (partition-random-halves, -random-node,
// partition-majorities-ring, bridge, and the primaries, here the leader): each gives
// the links to cut among ids, drawn with rng.
const (
	ShapeHalves   = "halves"   // a random ⌊n/2⌋ against the rest
	ShapeOne      = "one"      // one random server against the rest
	ShapeMajority = "majority" // a random majority against the rest (3|1 of 4, 3|2 of 5)
	ShapeRing     = "ring"     // majorities ring: each server sees a majority, no two the same
	ShapeBridge   = "bridge"   // two halves joined by one server that sees both
	ShapeDC       = "dc"       // one data center against the rest (Groups from the topology)
	ShapeLeader   = "leader"   // whoever leads at the instant (IsolateLeader)
)

// Shapes lists the shapes ShapePairs draws.
var Shapes = []string{ShapeHalves, ShapeOne, ShapeMajority, ShapeRing, ShapeBridge}

// Isolating is the pairs that cut id from every other of ids.
func Isolating(id int, ids []int) [][2]int {
	var out [][2]int
	for _, o := range ids {
		if o != id {
			out = append(out, [2]int{min(id, o), max(id, o)})
		}
	}
	return out
}

// ShapePairs draws shape over ids (at least 3) with rng: the links to cut, each once
// (a < b).
func ShapePairs(shape string, ids []int, rng *rand.Rand) ([][2]int, error) {
	n := len(ids)
	if n < 3 {
		return nil, fmt.Errorf("partition %s: needs at least 3 servers, have %d", shape, n)
	}
	perm := make([]int, n)
	for i, p := range rng.Perm(n) {
		perm[i] = ids[p]
	}
	switch shape {
	case ShapeHalves:
		return Pairs([][]int{perm[:n/2], perm[n/2:]}), nil
	case ShapeOne:
		return Isolating(perm[0], ids), nil
	case ShapeMajority:
		return Pairs([][]int{perm[:n/2+1], perm[n/2+1:]}), nil
	case ShapeBridge:
		// perm[0] is the bridge: it keeps its links to both sides.
		rest := perm[1:]
		h := len(rest) / 2
		return Pairs([][]int{rest[:h], rest[h:]}), nil
	case ShapeRing:
		return Ring(perm), nil
	}
	return nil, fmt.Errorf("unknown partition shape %q (known: %v, dc, leader)", shape, Shapes)
}

// Ring is the majorities ring over ids in ring order: each server keeps its links to
// the d nearest on either side, 2d+1 a majority, and loses the others.
func Ring(ring []int) [][2]int {
	n := len(ring)
	maj := n/2 + 1
	d := maj / 2 // 2d+1 >= maj
	var out [][2]int
	for i := range n {
		for j := i + 1; j < n; j++ {
			dist := min(j-i, n-(j-i))
			if dist > d {
				a, b := ring[i], ring[j]
				out = append(out, [2]int{min(a, b), max(a, b)})
			}
		}
	}
	slices.SortFunc(out, comparePairs)
	return out
}

// OneWayPairs draws a one-way cut: a random non-empty group whose messages to the
// rest are dropped (the rest's still reach it), as ordered pairs (from, to).
func OneWayPairs(ids []int, rng *rand.Rand) [][2]int {
	n := len(ids)
	perm := make([]int, n)
	for i, p := range rng.Perm(n) {
		perm[i] = ids[p]
	}
	k := 1 + rng.IntN(n-1)
	var out [][2]int
	for _, a := range perm[:k] {
		for _, b := range perm[k:] {
			out = append(out, [2]int{a, b})
		}
	}
	slices.SortFunc(out, comparePairs)
	return out
}
