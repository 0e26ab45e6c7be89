package analysis

import (
	"encoding/csv"
	"fmt"
	"github.com/polebench/polebench/model"
	"io"
	"iter"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/polebench/polebench/csvfile"
	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/workload"
	"github.com/polebench/polebench/zxid"
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

// JoinStats says how much of a run the join covered.
type JoinStats struct {
	OK     int `json:"ok"`     // acknowledged requests
	Joined int `json:"joined"` // with every step found
	// Missing counts the requests without a step, by the step (the first missing).
	Missing map[string]int `json:"missing,omitempty"`
}

// Join builds each acknowledged request's path from the records and every server's
// marks (server id -> its marks in order, in pieces: the simulator gathers a run's
// millions in chunks, and copying them into one slice each is not worth its time). start
// is the run's start in the servers' clock: a record's offsets plus start are instants
// of that clock.
func Join(recs []workload.Record, marks map[int][][]trace.Mark, start int64) ([]Path, JoinStats) {
	// A path takes each kind of mark from one server: its own (S) from the server the
	// record names, the leader's (L) from the server that proposed it, the follower's
	// (F) from the one whose ACK completed the quorum. The three sets of kinds are
	// disjoint, so one array per acknowledged zxid holds them all, with S, L and F:
	// a pass over the marks finds L and F, a second files each mark its zxid's server
	// needs. A long run leaves millions of marks, and one table beats arrays per server
	// and zxid, and those a map per zxid, by far (docs/performance.md).
	var at zxidTable[joinEntry]
	for i := range recs {
		if recs[i].Outcome == workload.OK {
			at.cover(zxid.Zxid(recs[i].Zxid))
		}
	}
	at.alloc()
	// Another record of the zxid on another server (never, unless the servers erred)
	// has its server's marks apart.
	var others map[serverZxid]*serverMarks
	for i := range recs {
		if r := &recs[i]; r.Outcome == workload.OK {
			switch e := at.slot(zxid.Zxid(r.Zxid)); e.server {
			case 0:
				e.server = r.Server
			case r.Server:
			default:
				if others == nil {
					others = map[serverZxid]*serverMarks{}
				}
				others[serverZxid{r.Server, zxid.Zxid(r.Zxid)}] = &serverMarks{}
			}
		}
	}
	// In server order: where two servers name a zxid's leader or follower, the last
	// one counts (the map's random order chose before; runs never have two).
	ids := slices.Sorted(maps.Keys(marks))
	for _, s := range ids {
		for m := range inOrder(marks[s]) {
			if m.Kind != trace.Proposed && m.Kind != trace.Quorum {
				continue
			}
			if e := at.get(m.Zxid); e != nil {
				if m.Kind == trace.Proposed {
					e.leader = s
				} else {
					e.peer = int(m.Peer)
				}
			}
		}
	}
	for _, s := range ids {
		for m := range inOrder(marks[s]) {
			e := at.get(m.Zxid)
			if e == nil {
				continue // no acknowledged write of it
			}
			role := roleOf[m.Kind]
			if s == e.server {
				e.has |= roleServer
				if role == roleServer {
					e.at[m.Kind] = m.At
				}
			} else if others != nil {
				if o := others[serverZxid{s, m.Zxid}]; o != nil {
					o.has = true
					if role == roleServer {
						o.at[m.Kind] = m.At
					}
				}
			}
			if s == e.leader {
				e.has |= roleLeader
				if role == roleLeader {
					e.at[m.Kind] = m.At
				}
			}
			if s == e.peer && role == rolePeer {
				e.at[m.Kind] = m.At
			}
		}
	}
	st := JoinStats{Missing: map[string]int{}}
	out := make([]Path, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		if r.Outcome != workload.OK {
			continue
		}
		st.OK++
		z := zxid.Zxid(r.Zxid)
		e := at.get(z)
		s, hasS := &e.at, e.has&roleServer != 0
		if r.Server != e.server {
			o := others[serverZxid{r.Server, z}]
			s, hasS = &o.at, o.has
		}
		if !hasS || e.has&roleLeader == 0 {
			if !hasS {
				st.Missing["server"]++
			} else {
				st.Missing["leader"]++
			}
			continue
		}
		out = append(out, Path{ID: r.ID, DC: r.DC, Server: r.Server, Leader: e.leader})
		p := &out[len(out)-1]
		p.At[StepIntended], p.At[StepSent], p.At[StepDone] = r.Intended, r.Sent, r.Done
		missing := numSteps
		for _, js := range joinSteps {
			a := s
			if js.leader {
				a = &e.at
			} else if js.step == StepCommitArrived && p.Server == p.Leader {
				p.At[StepCommitArrived] = p.At[StepCommitted]
				continue
			}
			if a[js.kind] == 0 {
				missing = js.step
				break
			}
			p.At[js.step] = time.Duration(a[js.kind] - start)
		}
		if missing != numSteps {
			st.Missing[stepNames[missing]]++
			out = out[:len(out)-1]
			continue
		}
		if e.peer != e.leader && e.at[trace.PropArrived] != 0 && e.at[trace.Acked] != 0 {
			p.At[StepPropArrived] = time.Duration(e.at[trace.PropArrived] - start)
			p.At[StepAcked] = time.Duration(e.at[trace.Acked] - start)
			p.Follower = e.peer
		}
		st.Joined++
	}
	if len(st.Missing) == 0 {
		st.Missing = nil
	}
	return out, st
}

// joinEntry is what Join gathers of an acknowledged zxid: the instant of each kind of
// mark from the server whose it is (roleOf), who S, L and F are, and whether S and L
// have a mark of the zxid at all.
type joinEntry struct {
	at                   [trace.NumKinds]int64
	server, leader, peer int
	has                  uint8 // roleServer, roleLeader
}

// Roles: whose marks of a write a path takes, as bits.
const (
	roleServer uint8 = 1 << iota
	roleLeader
	rolePeer
)

var roleOf = [trace.NumKinds]uint8{
	trace.Recv: roleServer, trace.Submit: roleServer, trace.CommitArrived: roleServer, trace.Applied: roleServer, trace.Reply: roleServer,
	trace.Arrived: roleLeader, trace.Proposed: roleLeader, trace.Quorum: roleLeader, trace.Committed: roleLeader,
	trace.PropArrived: rolePeer, trace.Acked: rolePeer,
}

type serverZxid struct {
	server int
	zxid   zxid.Zxid
}

// serverMarks are the S marks of a zxid on a server another record of it names.
type serverMarks struct {
	at  [trace.NumKinds]int64
	has bool
}

// joinSteps are the steps Join takes from the serving server's marks or the
// leader's, in the order the first one missing is counted. CommitArrived on the
// leader itself is its Committed.
var joinSteps = [...]struct {
	leader bool
	kind   trace.Kind
	step   Step
}{
	{false, trace.Recv, StepRecv},
	{false, trace.Submit, StepSubmit},
	{true, trace.Arrived, StepArrived},
	{true, trace.Proposed, StepProposed},
	{true, trace.Quorum, StepQuorum},
	{true, trace.Committed, StepCommitted},
	{false, trace.CommitArrived, StepCommitArrived},
	{false, trace.Applied, StepApplied},
	{false, trace.Reply, StepReply},
}

// zxidTable holds a T per zxid: per epoch, a slice indexed by the zxid's counter from
// the lowest covered (a run's counters are contiguous, whatever they start at). It is
// built in two passes: cover every zxid, alloc, then slot them. Unset slots are T's
// zero value.
type zxidTable[T any] struct {
	epochs []epochTable[T] // a run has few: searched in order, the last one found first
	last   int
}

// maxSlots bounds an epoch's slice: an epoch whose counters spread further than that
// (a spec's hand-set zxids) goes in a map.
const maxSlots = 1 << 22

type epochTable[T any] struct {
	epoch  zxid.Epoch
	lo, hi int64 // the counters covered
	dense  []T   // counter lo+i at i
	sparse map[uint32]*T
}

func (x *zxidTable[T]) epoch(e zxid.Epoch) *epochTable[T] {
	if x.last < len(x.epochs) && x.epochs[x.last].epoch == e {
		return &x.epochs[x.last]
	}
	for i := range x.epochs {
		if x.epochs[i].epoch == e {
			x.last = i
			return &x.epochs[i]
		}
	}
	return nil
}

// cover makes room for z (before alloc).
func (x *zxidTable[T]) cover(z zxid.Zxid) {
	c := int64(z.Counter())
	if e := x.epoch(z.Epoch()); e != nil {
		e.lo, e.hi = min(e.lo, c), max(e.hi, c)
		return
	}
	x.epochs = append(x.epochs, epochTable[T]{epoch: z.Epoch(), lo: c, hi: c})
	x.last = len(x.epochs) - 1
}

// alloc makes the slots of the zxids covered.
func (x *zxidTable[T]) alloc() {
	for i := range x.epochs {
		e := &x.epochs[i]
		if e.hi-e.lo+1 > maxSlots {
			e.sparse = map[uint32]*T{}
		} else {
			e.dense = make([]T, e.hi-e.lo+1)
		}
	}
}

// slot is z's T, which must have been covered.
func (x *zxidTable[T]) slot(z zxid.Zxid) *T {
	e := x.epoch(z.Epoch())
	if e.sparse == nil {
		return &e.dense[int64(z.Counter())-e.lo]
	}
	a := e.sparse[z.Counter()]
	if a == nil {
		a = new(T)
		e.sparse[z.Counter()] = a
	}
	return a
}

// get is z's T, or nil where nothing was covered.
func (x *zxidTable[T]) get(z zxid.Zxid) *T {
	e := x.epoch(z.Epoch())
	switch c := int64(z.Counter()); {
	case e == nil:
		return nil
	case e.sparse != nil:
		return e.sparse[uint32(c)]
	case c >= e.lo && c <= e.hi:
		return &e.dense[c-e.lo]
	}
	return nil
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
	row := w.Row()
	for _, p := range ps {
		row.Uint(p.ID)
		row.String(p.DC)
		row.Int(int64(p.Server))
		row.Int(int64(p.Leader))
		row.Int(int64(p.Follower))
		for _, t := range p.At {
			row.Int(int64(t))
		}
		w.WriteRow(row)
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
	out := []Path{} // a run with no path (no traces) has its anatomy join all the same
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
	type acc struct {
		n, neg            int
		phases            []float64
		follower, latency float64
		stall             float64
		m                 model.Split
		modelled          int
	}
	type split struct {
		m  model.Split
		ok bool
	}
	host := newPathStalls(stalls)
	newAcc := func() *acc { return &acc{phases: make([]float64, len(Phases))} }
	out := map[string]map[string]AnatomyStats{}
	var pp pathPhases
	for _, w := range windows {
		accs := map[string]*acc{}
		accOf := func(k string) *acc {
			a := accs[k]
			if a == nil {
				a = newAcc()
				accs[k] = a
			}
			return a
		}
		splits := map[[2]int]split{} // the model asked once per server and leader, not per write
		splitOf := func(p *Path) (model.Split, bool) {
			if pm == nil {
				return model.Split{}, false
			}
			sp, seen := splits[[2]int{p.Server, p.Leader}]
			if !seen {
				sp.m, sp.ok = pm(w.Name, p.Server, p.Leader)
				splits[[2]int{p.Server, p.Leader}] = sp
			}
			return sp.m, sp.ok
		}
		latencies := map[string][]float64{}
		for i := range paths {
			p := &paths[i]
			if !w.contains(p.At[StepIntended]) {
				continue
			}
			m, ok := splitOf(p)
			// The path's numbers once, then into its DC's sums and All's.
			pp.of(p, host, m, ok)
			latencies[p.DC] = append(latencies[p.DC], pp.latency)
			latencies[All] = append(latencies[All], pp.latency)
			for _, a := range [2]*acc{accOf(p.DC), accOf(All)} {
				a.n++
				for j, v := range pp.phases {
					a.phases[j] += v
				}
				if pp.neg {
					a.neg++
				}
				a.follower += pp.follower
				a.latency += pp.latency
				a.stall += pp.stall
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
		phasesOf := func(a *acc) map[string]float64 {
			n := float64(a.n)
			ph := map[string]float64{"quorum_follower": a.follower / n}
			for j, p := range Phases {
				ph[p.Name] = a.phases[j] / n
			}
			if host != nil {
				ph["host_stall"] = a.stall / n
			}
			return ph
		}
		// The tails: each DC's thresholds, then a second pass for the paths above them.
		type tailAcc struct {
			at float64
			*acc
		}
		tailAccs := map[string][]tailAcc{} // DC -> one per tail
		for dc, l := range latencies {
			slices.Sort(l)
			for _, t := range tails {
				if len(l) >= t.min {
					tailAccs[dc] = append(tailAccs[dc], tailAcc{l[int(math.Ceil(t.q*float64(len(l))))-1], newAcc()})
				}
			}
		}
		if len(tailAccs) > 0 {
			for i := range paths {
				p := &paths[i]
				if !w.contains(p.At[StepIntended]) {
					continue
				}
				lat := ms(p.Latency())
				if lat < tailAccs[All][0].at && (len(tailAccs[p.DC]) == 0 || lat < tailAccs[p.DC][0].at) {
					continue // below every tail's threshold (All's p99 is there whenever any is)
				}
				m, ok := splitOf(p)
				pp.of(p, host, m, ok)
				for _, dc := range [2]string{p.DC, All} {
					for _, t := range tailAccs[dc] {
						if pp.latency < t.at {
							continue
						}
						t.n++
						for j, v := range pp.phases {
							t.phases[j] += v
						}
						t.follower += pp.follower
						t.latency += pp.latency
						t.stall += pp.stall
					}
				}
			}
		}
		out[w.Name] = map[string]AnatomyStats{}
		for dc, a := range accs {
			n := float64(a.n)
			st := AnatomyStats{Count: a.n, MeasuredMS: a.latency / n, Negative: a.neg, PhasesMS: phasesOf(a)}
			if k := acked[w.Name][dc]; k > 0 {
				st.Coverage = n / float64(k)
			}
			for i, t := range tailAccs[dc] {
				if st.Tail == nil {
					st.Tail = map[string]*TailStats{}
				}
				st.Tail[tails[i].name] = &TailStats{AtMS: t.at, Count: t.n, MeasuredMS: t.latency / float64(t.n), PhasesMS: phasesOf(t.acc)}
			}
			if a.modelled == a.n {
				ph := st.PhasesMS
				mp := &ModelParts{Forward: a.m.Forward / n, Quorum: a.m.Quorum / n, Back: a.m.Back / n}
				mp.Total = mp.Forward + mp.Quorum + mp.Back
				e := &Excess{
					Total:         st.MeasuredMS - mp.Total,
					SendLag:       ph["send_lag"],
					Client:        ClientMS(ph),
					Processing:    ProcessingMS(ph),
					JitterInOrder: a.m.Jitter / n,
					HostStall:     ph["host_stall"],
				}
				e.Other = LinksMS(ph) - mp.Total - e.JitterInOrder
				st.ModelMS, st.ExcessMS = mp, e
			}
			out[w.Name][dc] = st
		}
	}
	return out
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

func (h *pathStalls) of(p *Path) []span {
	if h == nil {
		return nil
	}
	k := [3]int{p.Server, p.Leader, p.Follower}
	if s, ok := h.merged[k]; ok {
		return s
	}
	var on []HostStall
	for _, proc := range []string{HarnessProcess, fmt.Sprintf("p%d", p.Server), fmt.Sprintf("p%d", p.Leader), fmt.Sprintf("p%d", p.Follower)} {
		on = append(on, h.byProcess[proc]...)
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

// inOrder is a server's marks across their pieces, in order.
func inOrder(pieces [][]trace.Mark) iter.Seq[trace.Mark] {
	return func(yield func(trace.Mark) bool) {
		for _, p := range pieces {
			for _, m := range p {
				if !yield(m) {
					return
				}
			}
		}
	}
}
