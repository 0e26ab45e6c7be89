package analysis

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/polebench/polebench/model"
)

// The anatomy of a write's latency: the instants it passed on its way, from the
// harness's records (intended, sent, done) and the servers' trace marks, joined by
// zxid. Consecutive instants bound its phases, so the phases add up to its latency.

// Step indexes the instants of a Path, in the order a write passes them.
type Step int

// Steps. S is the server the write was sent to, L the leader, F the follower whose ACK
// completed the quorum.
const (
	StepIntended      Step = iota // the schedule's send time
	StepSent                      // handed to the client library
	StepRecv                      // S's client port read it
	StepSubmit                    // S's loop took it
	StepArrived                   // it reached L (S = L: Submit)
	StepProposed                  // L's PROPOSALs left
	StepPropArrived               // F: the PROPOSAL arrived (0 when unknown)
	StepAcked                     // F: its ACK left (0 when unknown)
	StepQuorum                    // L: the ACK completing a quorum arrived
	StepCommitted                 // L: committed
	StepCommitArrived             // S: the COMMIT arrived (S = L: Committed)
	StepApplied                   // S: applied
	StepReply                     // S: the reply queued
	StepDone                      // the client had the reply
	numSteps
)

var stepNames = [numSteps]string{"intended", "sent", "recv", "submit", "arrived", "proposed", "prop_arrived",
	"acked", "quorum", "committed", "commit_arrived", "applied", "reply", "done"}

// String is the step's column name in phases.csv.gz.
func (s Step) String() string { return stepNames[s] }

// Phases, in order: each runs from one step to the next one measured (the quorum
// wait from Proposed to Quorum, whether or not F's steps are known).
var Phases = []struct {
	Name     string
	From, To Step
	What     string
}{
	{"send_lag", StepIntended, StepSent, "the pacer's lag behind its schedule (harness)"},
	{"to_server", StepSent, StepRecv, "client library and socket to the serving server (harness)"},
	{"intake", StepRecv, StepSubmit, "serving server: client port to its loop"},
	{"forward", StepSubmit, StepArrived, "link to the leader (0 on the leader)"},
	{"leader", StepArrived, StepProposed, "leader: queueing and proposing"},
	{"quorum", StepProposed, StepQuorum, "leader: proposal to the ACK that completes a quorum"},
	{"commit", StepQuorum, StepCommitted, "leader: queueing and committing"},
	{"commit_back", StepCommitted, StepCommitArrived, "link back to the serving server (0 on the leader)"},
	{"apply", StepCommitArrived, StepApplied, "serving server: queueing and applying"},
	{"reply", StepApplied, StepReply, "serving server: result to the client port"},
	{"to_client", StepReply, StepDone, "socket and client library back to the harness (harness)"},
}

// Path is one acknowledged write's way: server, leader and deciding follower, and the
// instants of its steps as offsets from the run's start.
type Path struct {
	ID                       uint64
	DC                       string
	Server, Leader, Follower int // Follower 0: its steps are unknown
	At                       [numSteps]time.Duration
}

// Phase is the duration of phase i (an index into Phases).
func (p *Path) Phase(i int) time.Duration { return p.At[Phases[i].To] - p.At[Phases[i].From] }

// FollowerHold is the deciding follower's own share of the quorum wait (PROPOSAL in,
// ACK out), 0 when unknown.
func (p *Path) FollowerHold() time.Duration {
	if p.Follower == 0 {
		return 0
	}
	return p.At[StepAcked] - p.At[StepPropArrived]
}

// Latency is done − intended: the sum of the phases.
func (p *Path) Latency() time.Duration { return p.At[StepDone] - p.At[StepIntended] }

// AnatomyStats is the anatomy of one DC's writes in one window, in ms.
type AnatomyStats struct {
	Count int `json:"count"` // paths (acknowledged writes whose every step was found)
	// Coverage is Count over the window's acknowledged writes of the DC.
	Coverage float64 `json:"coverage"`
	// MeasuredMS is their mean latency, which the phases' means add up to.
	MeasuredMS float64 `json:"measured_ms"`
	// PhasesMS holds the mean of each phase (Phases), and quorum_follower: the
	// deciding follower's own share of the quorum wait. Where the run measured its host,
	// host_stall is the part of the writes' time in which a process on their path (the
	// harness, the serving server, the leader, the deciding follower) stalled, taken out
	// of the phases it fell in, so the phases still add up.
	PhasesMS map[string]float64 `json:"phases_ms"`
	// ModelMS is the plain model's mean over the same writes (each by its server and
	// leader), split as model.Split is.
	ModelMS *ModelParts `json:"model_ms,omitempty"`
	// ExcessMS splits MeasuredMS − ModelMS.Total into parts that add up.
	ExcessMS *Excess `json:"excess_ms,omitempty"`
	// Negative counts paths with a phase below zero: steps out of order, which the
	// shared clock should make impossible.
	Negative int `json:"negative"`
	// Tail splits the slowest writes the same way: "p99" the writes at or above the
	// 99th percentile of the traced writes' latency (with 100 or more traced), "p999"
	// at or above the 99.9th (with 1000 or more). A mean hides what the tail is made of.
	Tail map[string]*TailStats `json:"tail,omitempty"`
}

// TailStats is the anatomy of the writes at or above a percentile of latency.
type TailStats struct {
	AtMS       float64            `json:"at_ms"` // the percentile
	Count      int                `json:"count"`
	MeasuredMS float64            `json:"measured_ms"`
	PhasesMS   map[string]float64 `json:"phases_ms"`
}

// The tails Anatomize splits: the name, the quantile, and the fewest traced writes
// for which it is more than a handful of writes.
var tails = []struct {
	name string
	q    float64
	min  int
}{{"p99", 0.99, 100}, {"p999", 0.999, 1000}}

// ModelParts is the model's mean, split.
type ModelParts struct {
	Total   float64 `json:"total"`
	Forward float64 `json:"forward"`
	Quorum  float64 `json:"quorum"`
	Back    float64 `json:"back"`
}

// Excess is where the time above the model went, in ms: the parts add up to Total.
type Excess struct {
	Total float64 `json:"total"`
	// SendLag is the pacer's lag; Client the client library and sockets (harness).
	SendLag float64 `json:"send_lag"`
	Client  float64 `json:"client"`
	// Processing is poled's: the serving server's and the leader's queues and work,
	// and the deciding follower's own share of the quorum wait.
	Processing float64 `json:"processing"`
	// JitterInOrder is what the jitter-aware model expects the links' jitter (the
	// quorum waits for the slower of jittered round trips) and in-order delivery to add.
	JitterInOrder float64 `json:"jitter_in_order"`
	// Other is the links' remaining excess over the model.
	Other float64 `json:"other"`
	// HostStall is the time a process on the writes' path stalled (host_stall), where
	// the run measured it: the host's share, not the system's.
	HostStall float64 `json:"host_stall,omitempty"`
}

// Anatomize computes the anatomy per window and DC (All included) of the paths whose
// intended time falls in each window. acked gives the window's acknowledged writes per
// DC, for the coverage. Without a model (nil, or no split for some path) there is no
// model and no excess for that DC. stalls, where the run measured its host (nil where
// it did not), are the processes' stalls, named "harness" and "p<id>".
func Anatomize(paths []Path, windows []Window, pm model.PathModel, acked map[string]map[string]int, stalls []HostStall) map[string]map[string]AnatomyStats {
	an := &anatomist{paths: paths, pm: pm, host: newPathStalls(stalls)}
	out := map[string]map[string]AnatomyStats{}
	for _, w := range windows {
		wa := an.window(w)
		if len(wa.sums) == 0 {
			continue
		}
		wa.tails()
		out[w.Name] = wa.stats(acked[w.Name])
	}
	return out
}

// anatomist is what Anatomize reads for every window.
type anatomist struct {
	paths []Path
	pm    model.PathModel
	host  *pathStalls
	pp    pathPhases // the path at hand's numbers
}

// phaseSums are a set of paths' numbers (pathPhases) summed, and the model's split
// summed over those of them it has one for.
type phaseSums struct {
	n, neg                   int
	phases                   []float64
	follower, latency, stall float64
	m                        model.Split
	modelled                 int
}

func newPhaseSums() *phaseSums { return &phaseSums{phases: make([]float64, len(Phases))} }

// add adds a path's numbers.
func (a *phaseSums) add(pp *pathPhases) {
	a.n++
	for j, v := range pp.phases {
		a.phases[j] += v
	}
	a.follower += pp.follower
	a.latency += pp.latency
	a.stall += pp.stall
}

// means are the phases' means, quorum_follower's, and host_stall's where the host was
// measured.
func (a *phaseSums) means(host bool) map[string]float64 {
	n := float64(a.n)
	ph := map[string]float64{"quorum_follower": a.follower / n}
	for j, p := range Phases {
		ph[p.Name] = a.phases[j] / n
	}
	if host {
		ph["host_stall"] = a.stall / n
	}
	return ph
}

// windowAnatomy is one window's sums: per DC (All included), of its paths and of each
// tail's.
type windowAnatomy struct {
	*anatomist
	w         Window
	splits    map[[2]int]split // the model asked once per server and leader, not per write
	sums      map[string]*phaseSums
	latencies map[string][]float64
	tailSums  map[string][]tailSums // DC -> one per tail
}

type split struct {
	m  model.Split
	ok bool
}

// tailSums are the sums of the paths at or above a tail's threshold at.
type tailSums struct {
	at float64
	*phaseSums
}

// window sums the paths whose intended time falls in w.
func (an *anatomist) window(w Window) *windowAnatomy {
	wa := &windowAnatomy{anatomist: an, w: w, splits: map[[2]int]split{}, sums: map[string]*phaseSums{}, latencies: map[string][]float64{}}
	pp := &an.pp
	for i := range an.paths {
		p := &an.paths[i]
		if !w.contains(p.At[StepIntended]) {
			continue
		}
		m, ok := wa.split(p)
		// The path's numbers once, then into its DC's sums and All's.
		pp.of(p, an.host, m, ok)
		wa.latencies[p.DC] = append(wa.latencies[p.DC], pp.latency)
		wa.latencies[All] = append(wa.latencies[All], pp.latency)
		for _, a := range [2]*phaseSums{wa.sumsOf(p.DC), wa.sumsOf(All)} {
			a.add(pp)
			if pp.neg {
				a.neg++
			}
			if ok {
				a.modelled++
				a.m.Forward += m.Forward
				a.m.Quorum += m.Quorum
				a.m.Back += m.Back
				a.m.Jitter += m.Jitter
			}
		}
	}
	return wa
}

func (wa *windowAnatomy) sumsOf(dc string) *phaseSums {
	a := wa.sums[dc]
	if a == nil {
		a = newPhaseSums()
		wa.sums[dc] = a
	}
	return a
}

// split is the model's split of p's latency, if it has one.
func (wa *windowAnatomy) split(p *Path) (model.Split, bool) {
	if wa.pm == nil {
		return model.Split{}, false
	}
	sp, seen := wa.splits[[2]int{p.Server, p.Leader}]
	if !seen {
		sp.m, sp.ok = wa.pm(wa.w.Name, p.Server, p.Leader)
		wa.splits[[2]int{p.Server, p.Leader}] = sp
	}
	return sp.m, sp.ok
}

// tails sums the tails: each DC's thresholds, then a second pass for the paths above
// them.
func (wa *windowAnatomy) tails() {
	wa.tailSums = map[string][]tailSums{}
	for dc, l := range wa.latencies {
		slices.Sort(l)
		for _, t := range tails {
			if len(l) >= t.min {
				wa.tailSums[dc] = append(wa.tailSums[dc], tailSums{l[int(math.Ceil(t.q*float64(len(l))))-1], newPhaseSums()})
			}
		}
	}
	if len(wa.tailSums) == 0 {
		return
	}
	pp := &wa.pp
	for i := range wa.paths {
		p := &wa.paths[i]
		if !wa.w.contains(p.At[StepIntended]) {
			continue
		}
		lat := ms(p.Latency())
		if lat < wa.tailSums[All][0].at && (len(wa.tailSums[p.DC]) == 0 || lat < wa.tailSums[p.DC][0].at) {
			continue // below every tail's threshold (All's p99 is there whenever any is)
		}
		m, ok := wa.split(p)
		pp.of(p, wa.host, m, ok)
		for _, dc := range [2]string{p.DC, All} {
			for _, t := range wa.tailSums[dc] {
				if pp.latency < t.at {
					continue
				}
				t.add(pp)
			}
		}
	}
}

// stats is the window's anatomy per DC; acked its acknowledged writes per DC.
func (wa *windowAnatomy) stats(acked map[string]int) map[string]AnatomyStats {
	out := map[string]AnatomyStats{}
	for dc, a := range wa.sums {
		n := float64(a.n)
		st := AnatomyStats{Count: a.n, MeasuredMS: a.latency / n, Negative: a.neg, PhasesMS: a.means(wa.host != nil)}
		if k := acked[dc]; k > 0 {
			st.Coverage = n / float64(k)
		}
		for i, t := range wa.tailSums[dc] {
			if st.Tail == nil {
				st.Tail = map[string]*TailStats{}
			}
			st.Tail[tails[i].name] = &TailStats{AtMS: t.at, Count: t.n, MeasuredMS: t.latency / float64(t.n), PhasesMS: t.means(wa.host != nil)}
		}
		if a.modelled == a.n {
			st.ModelMS, st.ExcessMS = excess(st.MeasuredMS, st.PhasesMS, a)
		}
		out[dc] = st
	}
	return out
}

// excess is the model's mean over a's paths, all of which it has a split for, and
// where the measured mean's time above it went.
func excess(measured float64, ph map[string]float64, a *phaseSums) (*ModelParts, *Excess) {
	n := float64(a.n)
	mp := &ModelParts{Forward: a.m.Forward / n, Quorum: a.m.Quorum / n, Back: a.m.Back / n}
	mp.Total = mp.Forward + mp.Quorum + mp.Back
	e := &Excess{
		Total:         measured - mp.Total,
		SendLag:       ph["send_lag"],
		Client:        ClientMS(ph),
		Processing:    ProcessingMS(ph),
		JitterInOrder: a.m.Jitter / n,
		HostStall:     ph["host_stall"],
	}
	e.Other = LinksMS(ph) - mp.Total - e.JitterInOrder
	return mp, e
}

// HarnessProcess names the harness's own process among the metered ones: it carries
// the workload and, on the local backend, the replicas too. The replicas in processes
// of their own are "p<id>".
const HarnessProcess = "harness"

// pathPhases is one path's numbers in ms: its phases (less the host's stalls in each,
// where the host was measured), the deciding follower's hold, the stalls, and whether
// a step was out of order.
type pathPhases struct {
	phases                   []float64
	follower, latency, stall float64
	neg                      bool
}

// linkPhase marks the phases that are a link's time; their model, from the path's split.
var linkPhase = map[string]func(model.Split) float64{
	"forward":     func(m model.Split) float64 { return m.Forward },
	"quorum":      func(m model.Split) float64 { return m.Quorum },
	"commit_back": func(m model.Split) float64 { return m.Back },
}

// of computes p's numbers. A stall is taken whole out of the phases a process works in;
// out of a link's, only as far as the link took longer than the model's m (when ok): a
// message in flight is not delayed by its sender's or receiver's stall unless it
// arrives before the stall ends.
func (pp *pathPhases) of(p *Path, host *pathStalls, m model.Split, ok bool) {
	if pp.phases == nil {
		pp.phases = make([]float64, len(Phases))
	}
	pp.neg = false
	for j := range Phases {
		d := p.Phase(j)
		pp.neg = pp.neg || d < 0
		pp.phases[j] = ms(d)
	}
	if p.Follower != 0 && (p.At[StepPropArrived] < p.At[StepProposed] || p.FollowerHold() < 0 || p.At[StepQuorum] < p.At[StepAcked]) {
		pp.neg = true
	}
	pp.follower, pp.latency, pp.stall = ms(p.FollowerHold()), ms(p.Latency()), 0
	spans := host.of(p)
	if len(spans) == 0 || !overlaps(spans, p.At[StepIntended], p.At[StepDone]) {
		return
	}
	var hold float64 // the deciding follower's own stall, inside the quorum wait
	if p.Follower != 0 {
		hold = ms(overlap(spans, p.At[StepPropArrived], p.At[StepAcked]))
		pp.follower -= hold
	}
	for j, ph := range Phases {
		o := ms(overlap(spans, p.At[ph.From], p.At[ph.To]))
		if model, link := linkPhase[ph.Name]; link && ok {
			linkTime, linkStall := pp.phases[j], o
			if ph.Name == "quorum" {
				linkTime, linkStall = pp.phases[j]-pp.follower-hold, o-hold
			}
			o -= linkStall - max(0, min(linkStall, linkTime-model(m)))
		}
		pp.phases[j] -= o
		pp.stall += o
	}
}

// pathStalls gives the stalls of the processes on a write's path, merged: the
// harness's, and the serving server's, the leader's and the deciding follower's where
// they run in processes of their own. A nil *pathStalls has none.
type pathStalls struct {
	byProcess map[string][]HostStall
	merged    map[[3]int][]span
}

func newPathStalls(stalls []HostStall) *pathStalls {
	if stalls == nil {
		return nil
	}
	h := &pathStalls{byProcess: map[string][]HostStall{}, merged: map[[3]int][]span{}}
	for _, s := range stalls {
		h.byProcess[s.Process] = append(h.byProcess[s.Process], s)
	}
	return h
}

func (h *pathStalls) of(p *Path) []span { return h.on(p.Server, p.Leader, p.Follower) }

// on is the harness's stalls and servers' (0: none), merged.
func (h *pathStalls) on(servers ...int) []span {
	if h == nil {
		return nil
	}
	var k [3]int
	copy(k[:], servers)
	if s, ok := h.merged[k]; ok {
		return s
	}
	on := slices.Clone(h.byProcess[HarnessProcess])
	for _, id := range k {
		if id != 0 {
			on = append(on, h.byProcess[fmt.Sprintf("p%d", id)]...)
		}
	}
	s := union(on)
	h.merged[k] = s
	return s
}

// overlap is how much of [from, to] the disjoint, ordered spans cover.
func overlap(spans []span, from, to time.Duration) time.Duration {
	var d time.Duration
	for i := sort.Search(len(spans), func(i int) bool { return spans[i].to > from }); i < len(spans) && spans[i].from < to; i++ {
		d += min(spans[i].to, to) - max(spans[i].from, from)
	}
	return d
}

// The anatomy's groups of phases (PhasesMS), for the excess, the tail and the figure
// alike: the client library and sockets (the harness's), poled's processing (the
// deciding follower's own share of the quorum wait included), and the links' time.
func ClientMS(ph map[string]float64) float64 { return ph["to_server"] + ph["to_client"] }

func ProcessingMS(ph map[string]float64) float64 {
	return ph["intake"] + ph["leader"] + ph["commit"] + ph["apply"] + ph["reply"] + ph["quorum_follower"]
}

func quorumLinkMS(ph map[string]float64) float64 { return ph["quorum"] - ph["quorum_follower"] }

// LinksMS is the links' time: to the leader, the quorum's round trips, and back.
func LinksMS(ph map[string]float64) float64 {
	return ph["forward"] + quorumLinkMS(ph) + ph["commit_back"]
}
