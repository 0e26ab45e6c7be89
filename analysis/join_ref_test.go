package analysis

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/workload"
	"github.com/polebench/polebench/zxid"
)

// joinReference is Join as it was before it filed the marks by role in one table per
// run: kept to check that Join builds the same paths and counts.
func joinReference(recs []workload.Record, marks map[int][]trace.Mark, start int64) ([]Path, JoinStats) {
	// Per server and zxid, the instant of each trace.Kind: a write leaves about four
	// marks on each server. Zxids are dense within an epoch, so the index is a slice
	// per epoch, not a map of a million keys (far slower: docs/performance.md).
	at := map[int]*refZxidIndex{}
	leader, peer := &refZxidIndex{}, &refZxidIndex{} // [0]: the proposing leader, the deciding follower
	for s, ms := range marks {
		idx := &refZxidIndex{}
		at[s] = idx
		for _, m := range ms {
			idx.slot(uint64(m.Zxid))[m.Kind] = m.At
			switch m.Kind {
			case trace.Proposed:
				leader.slot(uint64(m.Zxid))[0] = int64(s)
			case trace.Quorum:
				peer.slot(uint64(m.Zxid))[0] = int64(m.Peer)
			}
		}
	}
	marksOf := func(server int, z uint64) *[trace.NumKinds]int64 {
		if idx := at[server]; idx != nil {
			return idx.get(z)
		}
		return nil
	}
	first := func(idx *refZxidIndex, z uint64) int {
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

// refZxidIndex holds an array per zxid: per epoch, a slice indexed by the zxid's counter
// from the lowest seen (a run's counters are contiguous, whatever they start at);
// arrays come from slabs, not one allocation each.
type refZxidIndex struct {
	epochs map[uint32]*refEpochSlots
	far    map[uint64]*[trace.NumKinds]int64 // counters too far from an epoch's others
	slab   [][trace.NumKinds]int64
}

// refMaxSlots bounds an epoch's slice: a zxid further from the epoch's others than that
// (a spec's hand-set zxids) goes in a map.
const refMaxSlots = 1 << 22

type refEpochSlots struct {
	base  int64
	slots []*[trace.NumKinds]int64
}

func (x *refZxidIndex) get(z uint64) *[trace.NumKinds]int64 {
	if e := x.epochs[uint32(z>>32)]; e != nil {
		if i := int64(uint32(z)) - e.base; i >= 0 && i < int64(len(e.slots)) {
			return e.slots[i]
		}
	}
	return x.far[z]
}

// slot is z's array, made if it is not there yet.
func (x *refZxidIndex) slot(z uint64) *[trace.NumKinds]int64 {
	if a := x.get(z); a != nil {
		return a
	}
	if x.epochs == nil {
		x.epochs = map[uint32]*refEpochSlots{}
	}
	c := int64(uint32(z))
	e := x.epochs[uint32(z>>32)]
	if e == nil {
		e = &refEpochSlots{base: c}
		x.epochs[uint32(z>>32)] = e
	}
	if len(x.slab) == cap(x.slab) {
		x.slab = make([][trace.NumKinds]int64, 0, 4096)
	}
	x.slab = x.slab[:len(x.slab)+1]
	a := &x.slab[len(x.slab)-1]
	if lo, hi := min(c, e.base), max(c+1, e.base+int64(len(e.slots))); hi-lo > refMaxSlots {
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

// joinHistory is a run's records and marks as servers leave them, and then some: two
// epochs (the second after a leader change), writes on every server, a few marks lost
// or repeated, marks at instant 0, writes without a Proposed or a Quorum mark, a
// quorum completed by the leader itself, marks of zxids no record names, records not
// acknowledged, two records of one zxid on different servers, and an epoch whose
// counters spread too far for a slice, and a server without marks.
func joinHistory(seed uint64) ([]workload.Record, map[int][]trace.Mark, int64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	const start = 5_000_000_000
	servers := []int{1, 2, 3, 4, 5}
	marks := map[int][]trace.Mark{}
	add := func(s int, z uint64, k trace.Kind, at int64, peer int) {
		if rng.IntN(200) == 0 {
			return // lost
		}
		if rng.IntN(500) == 0 {
			at = 0
		}
		m := trace.Mark{Zxid: zxid.Zxid(z), At: at, Kind: k, Peer: uint8(peer)}
		marks[s] = append(marks[s], m)
		if rng.IntN(300) == 0 {
			m.At += 7 // repeated: the later one counts
			marks[s] = append(marks[s], m)
		}
	}
	var recs []workload.Record
	t := int64(start)
	for i := range 3000 {
		epoch, leader := uint64(1), 5
		if i >= 1500 {
			epoch, leader = 2, 4
		}
		counter := uint64(100 + i)
		if i == 2999 {
			counter = 1 << 30 // far from the epoch's others
		}
		z := epoch<<32 | counter
		s := servers[rng.IntN(len(servers))]
		if leader == 4 && s == 5 {
			s = 3
		}
		t += int64(rng.IntN(2_000_000))
		r := workload.Record{ID: uint64(i + 1), DC: fmt.Sprintf("D%d", 1+s%2), Server: s, Intended: time.Duration(t - start),
			Sent: time.Duration(t - start + 10), Outcome: workload.OK, Zxid: int64(z)}
		if rng.IntN(150) == 0 {
			r.Server = 9 // a server that left no marks
		}
		switch rng.IntN(40) {
		case 0:
			r.Outcome, r.Zxid = workload.Failed, 0
		case 1:
			r.Outcome, r.Zxid = workload.Unknown, 0
		}
		at := t + 100
		add(s, z, trace.Recv, at, 0)
		add(s, z, trace.Submit, at+10, 0)
		add(leader, z, trace.Arrived, at+1000, 0)
		if rng.IntN(100) != 0 {
			add(leader, z, trace.Proposed, at+1100, 0)
		}
		peer := servers[rng.IntN(len(servers))]
		if leader == 4 && peer == 5 {
			peer = 0
		}
		for _, f := range servers {
			if f != leader && (leader == 5 || f != 5) {
				add(f, z, trace.PropArrived, at+1200+int64(f), 0)
				add(f, z, trace.Acked, at+1300+int64(f), 0)
				add(f, z, trace.CommitArrived, at+1600+int64(f), 0)
				add(f, z, trace.Applied, at+1700+int64(f), 0)
			}
		}
		if rng.IntN(100) != 0 {
			add(leader, z, trace.Quorum, at+1400, peer)
		}
		add(leader, z, trace.Committed, at+1500, 0)
		add(leader, z, trace.Applied, at+1510, 0)
		add(s, z, trace.Reply, at+1800, 0)
		r.Done = time.Duration(at + 1900 - start)
		recs = append(recs, r)
		if rng.IntN(300) == 0 { // the same zxid acknowledged on another server too
			o := r
			o.ID, o.Server = r.ID+1_000_000, 1+s%5
			add(o.Server, z, trace.Recv, at+3, 0)
			add(o.Server, z, trace.Submit, at+13, 0)
			add(o.Server, z, trace.Reply, at+1803, 0)
			recs = append(recs, o)
		}
		if rng.IntN(100) == 0 { // a zxid no record names
			add(leader, epoch<<32|uint64(50_000+i), trace.Proposed, at, 0)
		}
	}
	rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	return recs, marks, start
}

// TestJoinMatchesReference: Join builds exactly the paths and counts the reference
// join does, on histories with every irregularity a run may leave.
func TestJoinMatchesReference(t *testing.T) {
	for seed := range uint64(5) {
		recs, marks, start := joinHistory(seed)
		got, gotStats := join(recs, marks, start)
		want, wantStats := joinReference(recs, marks, start)
		if !reflect.DeepEqual(gotStats, wantStats) {
			t.Errorf("seed %d: stats %+v, reference %+v", seed, gotStats, wantStats)
		}
		if len(got) != len(want) {
			t.Fatalf("seed %d: %d paths, reference %d", seed, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("seed %d: path %d\n%+v\nreference\n%+v", seed, i, got[i], want[i])
			}
		}
		if wantStats.Joined < 2500 || len(wantStats.Missing) < 5 || wantStats.Missing["server"] == 0 || countFollowers(want) < 1000 {
			t.Errorf("seed %d: %+v, %d with a follower: want most joined, most with a follower, and several kinds of missing",
				seed, wantStats, countFollowers(want))
		}
	}
}

func countFollowers(ps []Path) (n int) {
	for _, p := range ps {
		if p.Follower != 0 {
			n++
		}
	}
	return n
}
