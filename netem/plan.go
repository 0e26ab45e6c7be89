// Package netem emulates the wide area: one link plan (delay, jitter, distribution,
// rate, loss for every ordered pair of servers) and two ways to apply it, the kernel's
// netem qdisc configured through netlink (Apply, Clear, Show, Probe) and user-space
// delay lines (DelayLine, Conn) for when the kernel cannot.
package netem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/polebench/polebench/topology"
)

// Defaults of a plan.
const (
	DefaultJitterPct = 2.0 // jitter as a percentage of the one-way delay (the paper's)
	DefaultDist      = DistPareto
	// DefaultWindowBytes is the window of the user-space bandwidth model: a link
	// carries at most window/RTT bytes per second, like one TCP connection whose
	// window autotunes up to Linux's default tcp_wmem maximum (4 MiB). Large
	// transfers feel the bandwidth-delay product; small messages do not.
	DefaultWindowBytes = 4 << 20
)

// Link is the emulated path from server From to server To: one-way delay, jitter
// drawn from Dist (pareto, normal, paretonormal or uniform), and optional
// impairments (impair.go): rate with a queue, loss (random, or Gilbert-Elliott),
// duplication, reordering and correlations. The kernel's netem applies all of them;
// a DelayLine applies delay, rate, queue and loss as a TCP stream sees it and refuses
// the rest (UserSpaceSupports).
//
// Link stays comparable (no slices or pointers): a plan's time-varying links are in
// Plan.Schedules. Every new field is omitted from JSON when zero, so plans written
// before these fields existed read the same.
type Link struct {
	From            int           `json:"from"`
	To              int           `json:"to"`
	Delay           time.Duration `json:"delay_ns"`
	Jitter          time.Duration `json:"jitter_ns"`
	Dist            string        `json:"dist"`
	RateBytesPerSec uint64        `json:"rate_bytes_per_sec,omitempty"`
	LossPct         float64       `json:"loss_pct,omitempty"`

	DelayCorrPct     float64 `json:"delay_corr_pct,omitempty"`
	LossCorrPct      float64 `json:"loss_corr_pct,omitempty"`
	LossGE           GEModel `json:"loss_ge,omitzero"`
	DuplicatePct     float64 `json:"duplicate_pct,omitempty"`
	DuplicateCorrPct float64 `json:"duplicate_corr_pct,omitempty"`
	ReorderPct       float64 `json:"reorder_pct,omitempty"`
	ReorderCorrPct   float64 `json:"reorder_corr_pct,omitempty"`
	ReorderGap       uint32  `json:"reorder_gap,omitempty"`
	QueuePackets     uint32  `json:"queue_packets,omitempty"` // the link's queue; 0: sized by limitFor
	QueueBytes       uint64  `json:"queue_bytes,omitempty"`   // or in bytes (the kernel counts 1500-byte packets)
}

// Plan holds a Link for every ordered pair of distinct servers, the seed the jitter
// is drawn with, the window of the user-space bandwidth model, and the schedules of
// the links that change over time.
type Plan struct {
	Links       []Link         `json:"links"`
	Seed        int64          `json:"seed"`
	WindowBytes int            `json:"window_bytes"`
	Schedules   []LinkSchedule `json:"schedules,omitempty"`
}

// Options shape NewPlan. The zero value gives links without jitter, rate limit or
// loss; DefaultOptions gives the paper's emulation (2 % Pareto jitter).
type Options struct {
	JitterPct       float64 // % of the one-way delay; 0 means none (DefaultOptions has the paper's 2 %)
	Dist            string  // "" means DefaultDist
	RateBytesPerSec uint64  // 0: unlimited
	LossPct         float64
	Seed            int64
	WindowBytes     int // 0 means DefaultWindowBytes
}

// DefaultOptions are the paper's links (2 % Pareto jitter) with the default window.
func DefaultOptions(seed int64) Options {
	return Options{JitterPct: DefaultJitterPct, Dist: DefaultDist, WindowBytes: DefaultWindowBytes, Seed: seed}
}

// NewPlan builds the plan of t: for every ordered pair of distinct servers a one-way
// delay of RTT/2 (the intra-DC RTT within a data center) with o's jitter.
// Check the result with Validate when o comes from a user.
func NewPlan(t *topology.Topology, o Options) Plan {
	pct := max(o.JitterPct, 0)
	dist := o.Dist
	if dist == "" {
		dist = DefaultDist
	}
	window := o.WindowBytes
	if window == 0 {
		window = DefaultWindowBytes
	}
	p := Plan{Seed: o.Seed, WindowBytes: window}
	n := t.N()
	for a := 1; a <= n; a++ {
		for b := 1; b <= n; b++ {
			if a == b {
				continue
			}
			delay := time.Duration(math.Round(t.RTT(a, b) / 2 * float64(time.Millisecond)))
			p.Links = append(p.Links, Link{
				From: a, To: b,
				Delay:           delay,
				Jitter:          time.Duration(math.Round(float64(delay) * pct / 100)),
				Dist:            dist,
				RateBytesPerSec: o.RateBytesPerSec,
				LossPct:         o.LossPct,
			})
		}
	}
	return p
}

// Link returns the link from one server to another.
func (p Plan) Link(from, to int) (Link, bool) {
	for _, l := range p.Links {
		if l.From == from && l.To == to {
			return l, true
		}
	}
	return Link{}, false
}

// RTT is the mean round trip of the two links between a and b (0 if either is missing).
func (p Plan) RTT(a, b int) time.Duration {
	ab, ok1 := p.Link(a, b)
	ba, ok2 := p.Link(b, a)
	if !ok1 || !ok2 {
		return 0
	}
	return ab.Delay + ba.Delay
}

// Servers returns the ids the plan mentions, sorted.
func (p Plan) Servers() []int {
	var ids []int
	for _, l := range p.Links {
		ids = append(ids, l.From, l.To)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// Among returns the plan restricted to the links between the given servers: what a
// server can install while it knows only some of its peers' addresses.
func (p Plan) Among(ids []int) Plan {
	q := p
	q.Links = nil
	for _, l := range p.Links {
		if slices.Contains(ids, l.From) && slices.Contains(ids, l.To) {
			q.Links = append(q.Links, l)
		}
	}
	return q
}

// Window is the plan's window in bytes, DefaultWindowBytes if unset.
func (p Plan) Window() int {
	if p.WindowBytes == 0 {
		return DefaultWindowBytes
	}
	return p.WindowBytes
}

// maxJitter is the largest jitter the kernel accepts: tabledist takes it as an s32 of
// nanoseconds and netem caps it there.
const maxJitter = time.Duration(math.MaxInt32)

// Validate checks one link.
func (l Link) Validate() error {
	switch {
	case l.From < 1 || l.To < 1:
		return fmt.Errorf("server ids must be >= 1")
	case l.From == l.To:
		return fmt.Errorf("link from p%d to itself", l.From)
	case l.Delay < 0:
		return fmt.Errorf("negative delay %v", l.Delay)
	case l.Jitter < 0:
		return fmt.Errorf("negative jitter %v", l.Jitter)
	case l.Jitter > maxJitter:
		return fmt.Errorf("jitter %v above the kernel's limit %v", l.Jitter, maxJitter)
	case !slices.Contains(Dists, l.Dist):
		return fmt.Errorf("unknown distribution %q (want one of %v)", l.Dist, Dists)
	case !(l.LossPct >= 0 && l.LossPct <= 100): // also rejects NaN
		return fmt.Errorf("loss %v%% outside [0, 100]", l.LossPct)
	}
	return l.validateImpairments()
}

// Validate checks every link and that the plan covers every ordered pair of the
// servers it mentions exactly once.
func (p Plan) Validate() error {
	if p.WindowBytes < 0 {
		return fmt.Errorf("window_bytes %d is negative", p.WindowBytes)
	}
	seen := map[[2]int]bool{}
	for i, l := range p.Links {
		if err := l.Validate(); err != nil {
			return fmt.Errorf("links[%d] (p%d->p%d): %w", i, l.From, l.To, err)
		}
		k := [2]int{l.From, l.To}
		if seen[k] {
			return fmt.Errorf("links[%d]: second link p%d->p%d", i, l.From, l.To)
		}
		seen[k] = true
	}
	ids := p.Servers()
	for _, a := range ids {
		for _, b := range ids {
			if a != b && !seen[[2]int{a, b}] {
				return fmt.Errorf("no link p%d->p%d (a plan covers every ordered pair)", a, b)
			}
		}
	}
	return p.validateSchedules()
}

// ParsePlan decodes a plan written by WritePlan (or by hand) and validates it; name
// is used in errors.
func ParsePlan(name string, data []byte) (Plan, error) {
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
			return Plan{}, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		return Plan{}, fmt.Errorf("%s: %w", name, err)
	}
	if err := p.Validate(); err != nil {
		return Plan{}, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// ReadPlan reads and validates a plan file.
func ReadPlan(path string) (Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Plan{}, err
	}
	return ParsePlan(path, data)
}

// WritePlan writes p as indented JSON.
func WritePlan(path string, p Plan) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Cut returns a copy of p whose links between the given pairs drop every packet,
// both ways: a partition as the kernel applies it (a netem leaf with 100 % loss,
// its own class since loss is part of what makes links share one). Healing is
// applying the plan without the cut.
func (p Plan) Cut(pairs [][2]int) Plan {
	var both [][2]int
	for _, pr := range pairs {
		both = append(both, pr, [2]int{pr[1], pr[0]})
	}
	return p.CutOneWay(both)
}

// CutOneWay is Cut in one direction: each pair's link from its first server to its
// second drops every packet, the other way stays as it was.
func (p Plan) CutOneWay(pairs [][2]int) Plan {
	cut := map[[2]int]bool{}
	for _, pr := range pairs {
		cut[pr] = true
	}
	cutLink := func(l *Link) {
		if cut[[2]int{l.From, l.To}] {
			l.LossPct, l.LossCorrPct, l.LossGE = 100, 0, GEModel{}
		}
	}
	q := p
	q.Links = slices.Clone(p.Links)
	for i := range q.Links {
		cutLink(&q.Links[i])
	}
	// A cut link stays cut through its schedule's steps.
	q.Schedules = slices.Clone(p.Schedules)
	for i, s := range q.Schedules {
		q.Schedules[i].Steps = slices.Clone(s.Steps)
		for j := range q.Schedules[i].Steps {
			cutLink(&q.Schedules[i].Steps[j].Link)
		}
	}
	return q
}
