package analysis

// The join of the harness's records with the servers' trace marks into paths, and
// phases.csv.gz, the paths' file.

import (
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/polebench/polebench/csvfile"
	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/workload"
	"github.com/polebench/polebench/zxid"
)

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
	j := newJoin(recs)
	// In server order: where two servers name a zxid's leader or follower, the last
	// one counts (the map's random order chose before; runs never have two).
	ids := slices.Sorted(maps.Keys(marks))
	for _, s := range ids {
		j.roles(s, marks[s])
	}
	for _, s := range ids {
		j.file(s, marks[s])
	}
	return j.paths(recs, start)
}

// joiner is what Join gathers: a joinEntry per acknowledged zxid, and the marks of the
// servers that another record of a zxid names apart.
type joiner struct {
	at     zxidTable[joinEntry]
	others map[serverZxid]*serverMarks
}

// newJoin makes room for every acknowledged zxid of recs, and names its server.
func newJoin(recs []workload.Record) *joiner {
	j := &joiner{}
	for i := range recs {
		if recs[i].Outcome == workload.OK {
			j.at.cover(zxid.Zxid(recs[i].Zxid))
		}
	}
	j.at.alloc()
	// Another record of the zxid on another server (never, unless the servers erred)
	// has its server's marks apart.
	for i := range recs {
		if r := &recs[i]; r.Outcome == workload.OK {
			switch e := j.at.slot(zxid.Zxid(r.Zxid)); e.server {
			case 0:
				e.server = r.Server
			case r.Server:
			default:
				if j.others == nil {
					j.others = map[serverZxid]*serverMarks{}
				}
				j.others[serverZxid{r.Server, zxid.Zxid(r.Zxid)}] = &serverMarks{}
			}
		}
	}
	return j
}

// roles names, from server s's marks, the leader of each zxid s proposed and the
// follower whose ACK completed its quorum.
func (j *joiner) roles(s int, marks [][]trace.Mark) {
	for m := range inOrder(marks) {
		if m.Kind != trace.Proposed && m.Kind != trace.Quorum {
			continue
		}
		if e := j.at.get(m.Zxid); e != nil {
			if m.Kind == trace.Proposed {
				e.leader = s
			} else {
				e.peer = int(m.Peer)
			}
		}
	}
}

// file keeps each of server s's marks that a path takes from s: as its zxid's S, L or F.
func (j *joiner) file(s int, marks [][]trace.Mark) {
	for m := range inOrder(marks) {
		e := j.at.get(m.Zxid)
		if e == nil {
			continue // no acknowledged write of it
		}
		role := roleOf[m.Kind]
		if s == e.server {
			e.has |= roleServer
			if role == roleServer {
				e.at[m.Kind] = m.At
			}
		} else if j.others != nil {
			if o := j.others[serverZxid{s, m.Zxid}]; o != nil {
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

// paths are the acknowledged records' paths that every step was found of, and how
// many were, and which step the others missed first.
func (j *joiner) paths(recs []workload.Record, start int64) ([]Path, JoinStats) {
	st := JoinStats{Missing: map[string]int{}}
	out := make([]Path, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		if r.Outcome != workload.OK {
			continue
		}
		st.OK++
		z := zxid.Zxid(r.Zxid)
		e := j.at.get(z)
		s, hasS := &e.at, e.has&roleServer != 0
		if r.Server != e.server {
			o := j.others[serverZxid{r.Server, z}]
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
		if missing := fill(&out[len(out)-1], r, s, e, start); missing != numSteps {
			st.Missing[stepNames[missing]]++
			out = out[:len(out)-1]
			continue
		}
		st.Joined++
	}
	if len(st.Missing) == 0 {
		st.Missing = nil
	}
	return out, st
}

// fill sets p's instants from r, its server's marks s and its zxid's entry e, and
// returns the first step missing (numSteps if none is).
func fill(p *Path, r *workload.Record, s *[trace.NumKinds]int64, e *joinEntry, start int64) Step {
	p.At[StepIntended], p.At[StepSent], p.At[StepDone] = r.Intended, r.Sent, r.Done
	for _, js := range joinSteps {
		a := s
		if js.leader {
			a = &e.at
		} else if js.step == StepCommitArrived && p.Server == p.Leader {
			p.At[StepCommitArrived] = p.At[StepCommitted]
			continue
		}
		if a[js.kind] == 0 {
			return js.step
		}
		p.At[js.step] = time.Duration(a[js.kind] - start)
	}
	if e.peer != e.leader && e.at[trace.PropArrived] != 0 && e.at[trace.Acked] != 0 {
		p.At[StepPropArrived] = time.Duration(e.at[trace.PropArrived] - start)
		p.At[StepAcked] = time.Duration(e.at[trace.Acked] - start)
		p.Follower = e.peer
	}
	return numSteps
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

// phases.csv.gz has had two layouts, told apart by the header. pathHeader's (before
// 2026-12-02) gave every time in ns since the run's start. pathDeltaHeader's, written
// now, gives the id and the intended time as the difference from the row before, and
// each later time as the difference from the time before it in its row: small numbers,
// which compress to half the bytes and format in fewer instructions. Both are read.
var (
	pathHeader      = pathColumns("id", "_ns")
	pathDeltaHeader = pathColumns("id_delta", "_delta_ns")
)

func pathColumns(id, suffix string) []string {
	h := []string{id, "dc", "server", "leader", "follower"}
	for _, n := range stepNames {
		h = append(h, n+suffix)
	}
	return h
}

// WritePaths writes paths as CSV (gzip if path ends in .gz) in the delta layout: the
// run's phases.csv.gz.
func WritePaths(path string, ps []Path) error {
	w, err := csvfile.Create(path)
	if err != nil {
		return fmt.Errorf("analysis: %w", err)
	}
	w.Write(pathDeltaHeader)
	row := w.Row()
	var prev Path
	for _, p := range ps {
		row.Int(int64(p.ID - prev.ID)) // wraps, and back, where ids fall
		row.String(p.DC)
		row.Int(int64(p.Server))
		row.Int(int64(p.Leader))
		row.Int(int64(p.Follower))
		before := prev.At[0]
		for _, t := range p.At {
			row.Int(int64(t - before))
			before = t
		}
		w.WriteRow(row)
		prev = p
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("analysis: writing %s: %w", path, err)
	}
	return nil
}

// ReadPaths reads what WritePaths wrote, in either layout. Errors name the file, line
// and field.
func ReadPaths(path string) ([]Path, error) {
	in, err := csvfile.OpenLayouts(path, pathDeltaHeader, pathHeader)
	if err != nil {
		return nil, fmt.Errorf("analysis: %w", err)
	}
	defer in.Close()
	delta := in.Layout == 0
	out := []Path{} // a run with no path (no traces) has its anatomy join all the same
	var prev Path
	for in.Next() {
		p := readPath(in, prev, delta)
		out = append(out, p)
		prev = p
	}
	if err := in.Err(); err != nil {
		return nil, fmt.Errorf("analysis: %w", err)
	}
	return out, nil
}

// readPath reads the row after prev (which the delta layout's differences are from).
func readPath(in *csvfile.Reader, prev Path, delta bool) Path {
	p := Path{DC: in.Field(1), Server: int(in.Int(2, 64)), Leader: int(in.Int(3, 64)), Follower: int(in.Int(4, 64))}
	if delta {
		p.ID = prev.ID + uint64(in.Int(0, 64))
	} else {
		p.ID = in.Uint(0)
	}
	before := prev.At[0]
	for i := range p.At {
		p.At[i] = time.Duration(in.Int(5+i, 64))
		if delta {
			p.At[i] += before
		}
		before = p.At[i]
	}
	return p
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
