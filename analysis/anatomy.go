package analysis

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/polebench/polebench/csvfile"
	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/workload"
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

// JoinStats says how much of a run the join covered.
type JoinStats struct {
	OK     int `json:"ok"`     // acknowledged requests
	Joined int `json:"joined"` // with every step found
	// Missing counts the requests without a step, by the step (the first missing).
	Missing map[string]int `json:"missing,omitempty"`
}

// Join builds each acknowledged request's path from the records and every server's
// marks (server id -> marks). start is the run's start in the servers' clock: a
// record's offsets plus start are instants of that clock.
func Join(recs []workload.Record, marks map[int][]trace.Mark, start int64) ([]Path, JoinStats) {
	// Per server and zxid, the instant of each trace.Kind: a write leaves about four
	// marks on each server. Zxids are dense within an epoch, so the index is a slice
	// per epoch, not a map of a million keys (a 120 s run's join took 0.37 s by map).
	at := map[int]*zxidIndex{}
	leader, peer := &zxidIndex{}, &zxidIndex{} // [0]: the proposing leader, the deciding follower
	for s, ms := range marks {
		idx := &zxidIndex{}
		at[s] = idx
		for _, m := range ms {
			idx.slot(m.Zxid)[m.Kind] = m.At
			switch m.Kind {
			case trace.Proposed:
				leader.slot(m.Zxid)[0] = int64(s)
			case trace.Quorum:
				peer.slot(m.Zxid)[0] = int64(m.Peer)
			}
		}
	}
	marksOf := func(server int, z uint64) *[trace.NumKinds]int64 {
		if idx := at[server]; idx != nil {
			return idx.get(z)
		}
		return nil
	}
	first := func(idx *zxidIndex, z uint64) int {
		if a := idx.get(z); a != nil {
			return int(a[0])
		}
		return 0
	}
	st := JoinStats{Missing: map[string]int{}}
	out := make([]Path, 0, len(recs))
	for _, r := range recs {
		if r.Outcome != workload.OK {
			continue
		}
		st.OK++
		z := uint64(r.Zxid)
		p := Path{ID: r.ID, DC: r.DC, Server: r.Server, Leader: first(leader, z)}
		p.At[StepIntended], p.At[StepSent], p.At[StepDone] = r.Intended, r.Sent, r.Done
		s, l := marksOf(r.Server, z), marksOf(p.Leader, z)
		if s == nil || l == nil {
			st.Missing[map[bool]string{true: "server", false: "leader"}[s == nil]]++
			continue
		}
		from := func(a *[trace.NumKinds]int64, k trace.Kind, step Step) bool {
			if a[k] == 0 {
				return false
			}
			p.At[step] = time.Duration(a[k] - start)
			return true
		}
		ok := true
		need := func(a *[trace.NumKinds]int64, k trace.Kind, step Step) {
			if ok && !from(a, k, step) {
				ok = false
				st.Missing[stepNames[step]]++
			}
		}
		need(s, trace.Recv, StepRecv)
		need(s, trace.Submit, StepSubmit)
		need(l, trace.Arrived, StepArrived)
		need(l, trace.Proposed, StepProposed)
		need(l, trace.Quorum, StepQuorum)
		need(l, trace.Committed, StepCommitted)
		if p.Server == p.Leader {
			p.At[StepCommitArrived] = p.At[StepCommitted]
		} else {
			need(s, trace.CommitArrived, StepCommitArrived)
		}
		need(s, trace.Applied, StepApplied)
		need(s, trace.Reply, StepReply)
		if !ok {
			continue
		}
		if f := first(peer, z); f != p.Leader {
			if a := marksOf(f, z); a != nil && from(a, trace.PropArrived, StepPropArrived) && from(a, trace.Acked, StepAcked) {
				p.Follower = f
			} else {
				p.At[StepPropArrived], p.At[StepAcked] = 0, 0
			}
		}
		st.Joined++
		out = append(out, p)
	}
	if len(st.Missing) == 0 {
		st.Missing = nil
	}
	return out, st
}

// zxidIndex holds an array per zxid: per epoch, a slice indexed by the zxid's counter
// from the lowest seen (a run's counters are contiguous, whatever they start at);
// arrays come from slabs, not one allocation each.
type zxidIndex struct {
	epochs map[uint32]*epochSlots
	far    map[uint64]*[trace.NumKinds]int64 // counters too far from an epoch's others
	slab   [][trace.NumKinds]int64
}

// maxSlots bounds an epoch's slice: a zxid further from the epoch's others than that
// (a spec's hand-set zxids) goes in a map.
const maxSlots = 1 << 22

type epochSlots struct {
	base  int64
	slots []*[trace.NumKinds]int64
}

func (x *zxidIndex) get(z uint64) *[trace.NumKinds]int64 {
	if e := x.epochs[uint32(z>>32)]; e != nil {
		if i := int64(uint32(z)) - e.base; i >= 0 && i < int64(len(e.slots)) {
			return e.slots[i]
		}
	}
	return x.far[z]
}

// slot is z's array, made if it is not there yet.
func (x *zxidIndex) slot(z uint64) *[trace.NumKinds]int64 {
	if a := x.get(z); a != nil {
		return a
	}
	if x.epochs == nil {
		x.epochs = map[uint32]*epochSlots{}
	}
	c := int64(uint32(z))
	e := x.epochs[uint32(z>>32)]
	if e == nil {
		e = &epochSlots{base: c}
		x.epochs[uint32(z>>32)] = e
	}
	if len(x.slab) == cap(x.slab) {
		x.slab = make([][trace.NumKinds]int64, 0, 4096)
	}
	x.slab = x.slab[:len(x.slab)+1]
	a := &x.slab[len(x.slab)-1]
	if lo, hi := min(c, e.base), max(c+1, e.base+int64(len(e.slots))); hi-lo > maxSlots {
		if x.far == nil {
			x.far = map[uint64]*[trace.NumKinds]int64{}
		}
		x.far[z] = a
		return a
	}
	if c < e.base {
		e.slots = append(make([]*[trace.NumKinds]int64, e.base-c), e.slots...)
		e.base = c
	}
	i := c - e.base
	if i >= int64(len(e.slots)) {
		e.slots = slices.Grow(e.slots, int(i)+1-len(e.slots))[:i+1]
	}
	e.slots[i] = a
	return a
}

var pathHeader = append([]string{"id", "dc", "server", "leader", "follower"}, func() []string {
	var h []string
	for _, n := range stepNames {
		h = append(h, n+"_ns")
	}
	return h
}()...)

// WritePaths writes paths as CSV (gzip if path ends in .gz): the run's phases.csv.gz.
func WritePaths(path string, ps []Path) error {
	w, err := csvfile.Create(path)
	if err != nil {
		return fmt.Errorf("analysis: %w", err)
	}
	w.Write(pathHeader)
	var row csvfile.Row
	for _, p := range ps {
		row.Uint(p.ID)
		row.String(p.DC)
		row.Int(int64(p.Server))
		row.Int(int64(p.Leader))
		row.Int(int64(p.Follower))
		for _, t := range p.At {
			row.Int(int64(t))
		}
		w.WriteRow(&row)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("analysis: writing %s: %w", path, err)
	}
	return nil
}

// ReadPaths reads what WritePaths wrote. Errors name the file, line and field.
func ReadPaths(path string) ([]Path, error) {
	r, err := csvfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("analysis: %w", err)
	}
	defer r.Close()
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(pathHeader)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("analysis: %s: header: %w", path, err)
	}
	for i, h := range pathHeader {
		if head[i] != h {
			return nil, fmt.Errorf("analysis: %s:1: column %d is %q, want %q", path, i+1, head[i], h)
		}
	}
	var out []Path
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("analysis: %s: %w", path, err)
		}
		line, _ := cr.FieldPos(0)
		var p Path
		bad := func(col int, err error) error {
			return fmt.Errorf("analysis: %s:%d: field %s: %w", path, line, pathHeader[col], err)
		}
		if p.ID, err = strconv.ParseUint(row[0], 10, 64); err != nil {
			return nil, bad(0, err)
		}
		p.DC = row[1]
		for i, v := range []*int{&p.Server, &p.Leader, &p.Follower} {
			if *v, err = strconv.Atoi(row[2+i]); err != nil {
				return nil, bad(2+i, err)
			}
		}
		for i := range p.At {
			n, err := strconv.ParseInt(row[5+i], 10, 64)
			if err != nil {
				return nil, bad(5+i, err)
			}
			p.At[i] = time.Duration(n)
		}
		out = append(out, p)
	}
}

// ModelSplit is the analytic model's account of one write, in ms: the forward link
// RTT(S,L)/2, the quorum round trip theta_c(L) and the commit back RTT(S,L)/2 (their
// sum is the paper's RTT(S,L) + theta_c(L)), and Jitter, what the jitter-aware term
// expects jittered links and in-order delivery to add to the three.
type ModelSplit struct {
	Forward, Quorum, Back, Jitter float64
}

// PathModel gives the model's split for a write of window w sent to server s while l
// leads; ok is false when the model has nothing for it.
type PathModel func(w string, s, l int) (m ModelSplit, ok bool)

// AnatomyStats is the anatomy of one DC's writes in one window, in ms.
type AnatomyStats struct {
	Count int `json:"count"` // paths (acknowledged writes whose every step was found)
	// Coverage is Count over the window's acknowledged writes of the DC.
	Coverage float64 `json:"coverage"`
	// MeasuredMS is their mean latency, which the phases' means add up to.
	MeasuredMS float64 `json:"measured_ms"`
	// PhasesMS holds the mean of each phase (Phases), and quorum_follower: the
	// deciding follower's own share of the quorum wait.
	PhasesMS map[string]float64 `json:"phases_ms"`
	// ModelMS is the plain model's mean over the same writes (each by its server and
	// leader), split as ModelSplit is.
	ModelMS *ModelParts `json:"model_ms,omitempty"`
	// ExcessMS splits MeasuredMS − ModelMS.Total into parts that add up.
	ExcessMS *Excess `json:"excess_ms,omitempty"`
	// Negative counts paths with a phase below zero: steps out of order, which the
	// shared clock should make impossible.
	Negative int `json:"negative"`
}

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
}

// Anatomize computes the anatomy per window and DC (All included) of the paths whose
// intended time falls in each window. acked gives the window's acknowledged writes per
// DC, for the coverage. Without a model (nil, or no split for some path) there is no
// model and no excess for that DC.
func Anatomize(paths []Path, windows []Window, model PathModel, acked map[string]map[string]int) map[string]map[string]AnatomyStats {
	type acc struct {
		n, neg            int
		phases            []float64
		follower, latency float64
		m                 ModelSplit
		modelled          int
	}
	out := map[string]map[string]AnatomyStats{}
	for _, w := range windows {
		accs := map[string]*acc{}
		for i := range paths {
			p := &paths[i]
			if !w.contains(p.At[StepIntended]) {
				continue
			}
			m, ok := ModelSplit{}, false
			if model != nil {
				m, ok = model(w.Name, p.Server, p.Leader)
			}
			for _, k := range []string{p.DC, All} {
				a := accs[k]
				if a == nil {
					a = &acc{phases: make([]float64, len(Phases))}
					accs[k] = a
				}
				a.n++
				neg := false
				for j := range Phases {
					d := p.Phase(j)
					neg = neg || d < 0
					a.phases[j] += ms(d)
				}
				if p.Follower != 0 && (p.At[StepPropArrived] < p.At[StepProposed] || p.FollowerHold() < 0 || p.At[StepQuorum] < p.At[StepAcked]) {
					neg = true
				}
				if neg {
					a.neg++
				}
				a.follower += ms(p.FollowerHold())
				a.latency += ms(p.Latency())
				if ok {
					a.modelled++
					a.m.Forward += m.Forward
					a.m.Quorum += m.Quorum
					a.m.Back += m.Back
					a.m.Jitter += m.Jitter
				}
			}
		}
		if len(accs) == 0 {
			continue
		}
		out[w.Name] = map[string]AnatomyStats{}
		for dc, a := range accs {
			n := float64(a.n)
			st := AnatomyStats{Count: a.n, MeasuredMS: a.latency / n, Negative: a.neg, PhasesMS: map[string]float64{}}
			if k := acked[w.Name][dc]; k > 0 {
				st.Coverage = n / float64(k)
			}
			for j, ph := range Phases {
				st.PhasesMS[ph.Name] = a.phases[j] / n
			}
			st.PhasesMS["quorum_follower"] = a.follower / n
			if a.modelled == a.n {
				ph := st.PhasesMS
				mp := &ModelParts{Forward: a.m.Forward / n, Quorum: a.m.Quorum / n, Back: a.m.Back / n}
				mp.Total = mp.Forward + mp.Quorum + mp.Back
				links := ph["forward"] + quorumLinkMS(ph) + ph["commit_back"] - mp.Total
				e := &Excess{
					Total:         st.MeasuredMS - mp.Total,
					SendLag:       ph["send_lag"],
					Client:        clientMS(ph),
					Processing:    processingMS(ph),
					JitterInOrder: a.m.Jitter / n,
				}
				e.Other = links - e.JitterInOrder
				st.ModelMS, st.ExcessMS = mp, e
			}
			out[w.Name][dc] = st
		}
	}
	return out
}

// The anatomy's groups of phases (PhasesMS), for the excess and the figure alike:
// the client library and sockets (the harness's), poled's processing (the deciding
// follower's own share of the quorum wait included), and the quorum's link time.
func clientMS(ph map[string]float64) float64 { return ph["to_server"] + ph["to_client"] }

func processingMS(ph map[string]float64) float64 {
	return ph["intake"] + ph["leader"] + ph["commit"] + ph["apply"] + ph["reply"] + ph["quorum_follower"]
}

func quorumLinkMS(ph map[string]float64) float64 { return ph["quorum"] - ph["quorum_follower"] }
