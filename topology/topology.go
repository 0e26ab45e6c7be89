// Package topology describes where the replicas run: data centers, servers (ids 1..N,
// shown p1..pN), the RTT between every pair of servers and the request rate arriving
// at each data center. The score formulas are in package score, the analytic model in
// package model.
package topology

import (
	"fmt"
	"sort"
)

// DefaultIntraRTT is the RTT between two servers of one data center, in ms: what the
// paper's cluster measured with no emulated delay (Sec. 4.1).
const DefaultIntraRTT = 0.1

// DC is a data center: a name, an optional built-in endpoint of Table 2, and the ids of
// its servers.
type DC struct {
	Name, Endpoint string
	Servers        []int
}

// Link is an explicit RTT between two data centers, in ms. It takes precedence over
// the endpoints' Table 2 entry.
type Link struct {
	A, B    string
	RTT, SD float64
}

// Config is what New builds a Topology from.
type Config struct {
	DCs      []DC
	Links    []Link
	IntraRTT float64            // ms between servers of one DC (DefaultIntraRTT is the paper's)
	Rates    map[string]float64 // req/s arriving at each DC, by name; missing DCs get 0
}

// Topology is an immutable description of a deployment. Build it with New.
type Topology struct {
	// Rates is the request rate (req/s) arriving at each data center, by name.
	Rates    map[string]float64
	IntraRTT float64

	dcs     []DC
	dcOf    []int // dcOf[id] = index into dcs; dcOf[0] unused
	rtt, sd [][]float64
}

// New checks c and builds the topology: every server id in 1..N exactly once, unique
// DC names, an RTT for every pair of DCs (explicit, or from both endpoints' Table 2
// entry), non-negative RTTs and rates.
func New(c Config) (*Topology, error) {
	t := &Topology{IntraRTT: c.IntraRTT, Rates: map[string]float64{}}
	if c.IntraRTT < 0 {
		return nil, fmt.Errorf("intra-DC RTT %v ms is negative", c.IntraRTT)
	}
	if len(c.DCs) == 0 {
		return nil, fmt.Errorf("no data centers")
	}
	index := map[string]int{}
	owner := map[int]string{}
	n := 0
	for i, d := range c.DCs {
		if d.Name == "" {
			return nil, fmt.Errorf("data center %d has no name", i+1)
		}
		if _, dup := index[d.Name]; dup {
			return nil, fmt.Errorf("data center %q is defined twice", d.Name)
		}
		if d.Endpoint != "" && !KnownEndpoint(d.Endpoint) {
			return nil, fmt.Errorf("data center %q: unknown endpoint %q (known: %v)", d.Name, d.Endpoint, Endpoints())
		}
		if len(d.Servers) == 0 {
			return nil, fmt.Errorf("data center %q has no servers", d.Name)
		}
		index[d.Name] = i
		for _, id := range d.Servers {
			if o, dup := owner[id]; dup {
				return nil, fmt.Errorf("server %d is in data centers %q and %q", id, o, d.Name)
			}
			owner[id] = d.Name
			n++
		}
		t.dcs = append(t.dcs, DC{Name: d.Name, Endpoint: d.Endpoint, Servers: sortedCopy(d.Servers)})
	}
	t.dcOf = make([]int, n+1)
	for id := 1; id <= n; id++ {
		name, ok := owner[id]
		if !ok {
			return nil, fmt.Errorf("server ids must be exactly 1..%d: %d is missing", n, id)
		}
		t.dcOf[id] = index[name]
	}

	k := len(t.dcs)
	t.rtt, t.sd = square(k), square(k)
	set := square(k)
	for _, l := range c.Links {
		a, okA := index[l.A]
		b, okB := index[l.B]
		switch {
		case !okA:
			return nil, fmt.Errorf("RTT %s-%s: unknown data center %q", l.A, l.B, l.A)
		case !okB:
			return nil, fmt.Errorf("RTT %s-%s: unknown data center %q", l.A, l.B, l.B)
		case a == b:
			return nil, fmt.Errorf("RTT %s-%s: both ends are the same data center (use the intra-DC RTT)", l.A, l.B)
		case l.RTT < 0 || l.SD < 0:
			return nil, fmt.Errorf("RTT %s-%s: negative value", l.A, l.B)
		case set[a][b] != 0:
			return nil, fmt.Errorf("RTT %s-%s is given twice", l.A, l.B)
		}
		t.rtt[a][b], t.rtt[b][a] = l.RTT, l.RTT
		t.sd[a][b], t.sd[b][a] = l.SD, l.SD
		set[a][b], set[b][a] = 1, 1
	}
	for a := 0; a < k; a++ {
		for b := a + 1; b < k; b++ {
			if set[a][b] != 0 {
				continue
			}
			da, db := t.dcs[a], t.dcs[b]
			m, s, ok := EndpointRTT(da.Endpoint, db.Endpoint)
			if !ok {
				return nil, fmt.Errorf("no RTT between data centers %q and %q: give one explicitly, or endpoints that Table 2 pairs (%s)",
					da.Name, db.Name, PairHint(da.Endpoint, db.Endpoint))
			}
			t.rtt[a][b], t.rtt[b][a] = m, m
			t.sd[a][b], t.sd[b][a] = s, s
		}
	}

	for name, r := range c.Rates {
		if _, ok := index[name]; !ok {
			return nil, fmt.Errorf("rate for unknown data center %q", name)
		}
		if r < 0 {
			return nil, fmt.Errorf("rate %v for data center %q is negative", r, name)
		}
	}
	for _, d := range t.dcs {
		t.Rates[d.Name] = c.Rates[d.Name]
	}
	return t, nil
}

// PairHint says why two endpoints have no RTT in Table 2.
func PairHint(a, b string) string {
	switch {
	case a == "" || b == "":
		return "an endpoint is missing"
	case a == b:
		return "both are " + a
	default:
		return a + "-" + b + " is not in Table 2"
	}
}

func square(k int) [][]float64 {
	m := make([][]float64, k)
	for i := range m {
		m[i] = make([]float64, k)
	}
	return m
}

func sortedCopy(ids []int) []int {
	out := append([]int(nil), ids...)
	sort.Ints(out)
	return out
}

// N is the number of configured servers.
func (t *Topology) N() int { return len(t.dcOf) - 1 }

// Servers returns the ids 1..N.
func (t *Topology) Servers() []int {
	ids := make([]int, t.N())
	for i := range ids {
		ids[i] = i + 1
	}
	return ids
}

func (t *Topology) valid(id int) bool { return id >= 1 && id < len(t.dcOf) }

// RTT is the mean RTT in ms between servers a and b: 0 if a == b, the intra-DC RTT
// within a data center, the data centers' RTT otherwise. Unknown ids give 0.
func (t *Topology) RTT(a, b int) float64 {
	if a == b || !t.valid(a) || !t.valid(b) {
		return 0
	}
	da, db := t.dcOf[a], t.dcOf[b]
	if da == db {
		return t.IntraRTT
	}
	return t.rtt[da][db]
}

// RTTSD is the standard deviation in ms of RTT(a, b), 0 if unknown (always within a DC).
func (t *Topology) RTTSD(a, b int) float64 {
	if a == b || !t.valid(a) || !t.valid(b) {
		return 0
	}
	return t.sd[t.dcOf[a]][t.dcOf[b]]
}

// DC is the name of the data center of server id ("" for an unknown id).
func (t *Topology) DC(id int) string {
	if !t.valid(id) {
		return ""
	}
	return t.dcs[t.dcOf[id]].Name
}

// DCs returns the data centers in configuration order (a copy).
func (t *Topology) DCs() []DC {
	out := make([]DC, len(t.dcs))
	for i, d := range t.dcs {
		out[i] = DC{Name: d.Name, Endpoint: d.Endpoint, Servers: sortedCopy(d.Servers)}
	}
	return out
}

// LambdaT is the total request rate, in req/s.
func (t *Topology) LambdaT() float64 {
	sum := 0.0
	for _, r := range t.Rates {
		sum += r
	}
	return sum
}

// ServerRates spreads each DC's rate uniformly over its servers in live. A DC with no
// live server contributes nothing: its clients have nowhere to send requests.
// Ids in live that are not servers are ignored.
func (t *Topology) ServerRates(live []int) map[int]float64 {
	liveIn := map[int][]int{}
	seen := map[int]bool{}
	for _, id := range live {
		if t.valid(id) && !seen[id] {
			seen[id] = true
			liveIn[t.dcOf[id]] = append(liveIn[t.dcOf[id]], id)
		}
	}
	out := map[int]float64{}
	for i, ids := range liveIn {
		r := t.Rates[t.dcs[i].Name] / float64(len(ids))
		for _, id := range ids {
			out[id] = r
		}
	}
	return out
}

// Name is how servers are shown: p1..pN.
func Name(id int) string { return fmt.Sprintf("p%d", id) }
