// Package proxyset is a flavor's user-space links as one set (the etcd and ZooKeeper
// flavors share it): the netem.Proxy of every way one server dials another (per
// ordered pair, per port), the cuts the nemesis makes on them, and the RTTs they
// measured. A connection carries both ways whichever end dialed it, so a cut of what
// server a sends to server b holds the Out direction of a's proxies to b and the Back
// direction of b's proxies to a.
package proxyset

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/polebench/polebench/netem"
)

// Set is the proxies between a cluster's servers.
type Set struct {
	mu    sync.Mutex
	links []link
	cut   map[[2]int]bool // (a, b): what a sends to b is held
}

// link is a proxy through which From dials To.
type link struct {
	From, To int
	p        *netem.Proxy
}

// Add puts p, through which server from dials server to, in the set, cut as the set's
// cuts say.
func (s *Set) Add(from, to int, p *netem.Proxy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.links = append(s.links, link{from, to, p})
	p.Cut(netem.Out, s.cut[[2]int{from, to}])
	p.Cut(netem.Back, s.cut[[2]int{to, from}])
}

// Cut holds (cut) or lets flow again what each pair's first server sends its second,
// and with both the other way too (bridge.Kernel.Cut's signature: it never fails).
func (s *Set) Cut(_ context.Context, pairs [][2]int, both, cut bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut == nil {
		s.cut = map[[2]int]bool{}
	}
	set := func(k [2]int) {
		if cut {
			s.cut[k] = true
		} else {
			delete(s.cut, k)
		}
	}
	for _, p := range pairs {
		set(p)
		if both {
			set([2]int{p[1], p[0]})
		}
	}
	for _, l := range s.links {
		l.p.Cut(netem.Out, s.cut[[2]int{l.From, l.To}])
		l.p.Cut(netem.Back, s.cut[[2]int{l.To, l.From}])
	}
	return nil
}

// RTTs are the RTTs the proxies measured between every two servers of ids, in ms, as
// cluster.RTTMeter gives them: the mean realized one-way delay of heartbeat-sized
// chunks (netem.SmallChunk bytes at most) each way, summed. Pairs without traffic
// both ways are left out.
func (s *Set) RTTs(ids []int) map[string]any {
	type dir struct {
		sum time.Duration
		n   int64
	}
	oneWay := map[[2]int]*dir{}
	add := func(from, to int, mean time.Duration, n int64) {
		d := oneWay[[2]int{from, to}]
		if d == nil {
			d = &dir{}
			oneWay[[2]int{from, to}] = d
		}
		d.sum += mean * time.Duration(n)
		d.n += n
	}
	s.mu.Lock()
	for _, l := range s.links {
		out, back, nOut, nBack := l.p.Measured()
		add(l.From, l.To, out, nOut)
		add(l.To, l.From, back, nBack)
	}
	s.mu.Unlock()
	res := map[string]any{}
	for _, i := range ids {
		peers := map[string]float64{}
		for _, j := range ids {
			a, b := oneWay[[2]int{i, j}], oneWay[[2]int{j, i}]
			if i == j || a == nil || b == nil || a.n == 0 || b.n == 0 {
				continue
			}
			rtt := a.sum/time.Duration(a.n) + b.sum/time.Duration(b.n)
			peers[fmt.Sprintf("p%d", j)] = float64(rtt) / float64(time.Millisecond)
		}
		res[fmt.Sprintf("p%d", i)] = peers
	}
	return res
}

// Close closes every proxy, in the order of their pairs.
func (s *Set) Close() {
	s.mu.Lock()
	links := slices.Clone(s.links)
	s.mu.Unlock()
	slices.SortStableFunc(links, func(a, b link) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
	for _, l := range links {
		l.p.Close()
	}
}
