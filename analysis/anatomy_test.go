package analysis

import (
	"github.com/polebench/polebench/model"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/workload"
	"github.com/polebench/polebench/zxid"
)

// A write sent to follower p1 with leader p3 (quorum completed by p2's ACK), one sent
// to the leader itself, and one whose leader left no marks; the servers' clock is the
// records' plus start.
func anatomyFixture() ([]workload.Record, map[int][]trace.Mark, int64) {
	const start = 1_000_000_000
	ms := func(v float64) int64 { return start + int64(v*1e6) }
	z1, z2, z3 := zxid.Make(1, 1), zxid.Make(1, 2), zxid.Make(1, 3)
	recs := []workload.Record{
		{ID: 1, DC: "D1", Server: 1, Intended: 10 * time.Millisecond, Sent: 10200 * time.Microsecond, Done: 32 * time.Millisecond, Outcome: workload.OK, Zxid: int64(z1)},
		{ID: 2, DC: "D2", Server: 3, Intended: 11 * time.Millisecond, Sent: 11100 * time.Microsecond, Done: 12 * time.Millisecond, Outcome: workload.OK, Zxid: int64(z2)},
		{ID: 3, DC: "D2", Server: 3, Intended: 12 * time.Millisecond, Sent: 12100 * time.Microsecond, Done: 13 * time.Millisecond, Outcome: workload.OK, Zxid: int64(z3)},
		{ID: 4, DC: "D1", Server: 1, Intended: 13 * time.Millisecond, Sent: -1, Done: 14 * time.Millisecond, Outcome: workload.Failed},
	}
	marks := map[int][]trace.Mark{
		1: { // S of z1
			{Zxid: z1, At: ms(10.3), Kind: trace.Recv}, {Zxid: z1, At: ms(10.4), Kind: trace.Submit},
			{Zxid: z1, At: ms(31.0), Kind: trace.CommitArrived}, {Zxid: z1, At: ms(31.2), Kind: trace.Applied},
			{Zxid: z1, At: ms(31.3), Kind: trace.Reply},
		},
		2: { // the deciding follower of z1
			{Zxid: z1, At: ms(20.7), Kind: trace.PropArrived}, {Zxid: z1, At: ms(20.8), Kind: trace.Acked},
		},
		3: { // the leader; S of z2
			{Zxid: z1, At: ms(20.5), Kind: trace.Arrived}, {Zxid: z1, At: ms(20.6), Kind: trace.Proposed},
			{Zxid: z1, At: ms(20.9), Kind: trace.Quorum, Peer: 2}, {Zxid: z1, At: ms(21.0), Kind: trace.Committed},
			{Zxid: z2, At: ms(11.2), Kind: trace.Recv}, {Zxid: z2, At: ms(11.3), Kind: trace.Submit},
			{Zxid: z2, At: ms(11.3), Kind: trace.Arrived}, {Zxid: z2, At: ms(11.4), Kind: trace.Proposed},
			{Zxid: z2, At: ms(11.6), Kind: trace.Quorum, Peer: 1}, {Zxid: z2, At: ms(11.7), Kind: trace.Committed},
			{Zxid: z2, At: ms(11.75), Kind: trace.Applied}, {Zxid: z2, At: ms(11.8), Kind: trace.Reply},
		},
	}
	return recs, marks, start
}

func TestJoin(t *testing.T) {
	recs, marks, start := anatomyFixture()
	paths, st := join(recs, marks, start)
	if want := (JoinStats{OK: 3, Joined: 2, Missing: map[string]int{"server": 1}}); !reflect.DeepEqual(st, want) {
		// z3 has no marks on its server: counted, not joined.
		t.Fatalf("join stats %+v, want %+v", st, want)
	}
	p := paths[0]
	if p.Server != 1 || p.Leader != 3 || p.Follower != 2 {
		t.Fatalf("path 1: server %d leader %d follower %d, want 1 3 2", p.Server, p.Leader, p.Follower)
	}
	want := map[string]float64{"send_lag": 0.2, "to_server": 0.1, "intake": 0.1, "forward": 10.1, "leader": 0.1,
		"quorum": 0.3, "commit": 0.1, "commit_back": 10, "apply": 0.2, "reply": 0.1, "to_client": 0.7}
	var sum time.Duration
	for i, ph := range Phases {
		if got := ms(p.Phase(i)); math.Abs(got-want[ph.Name]) > 1e-9 {
			t.Errorf("path 1: %s = %.4f ms, want %.4f", ph.Name, got, want[ph.Name])
		}
		sum += p.Phase(i)
	}
	if sum != p.Latency() || p.Latency() != 22*time.Millisecond {
		t.Errorf("path 1: phases sum to %v, latency %v, want both 22ms", sum, p.Latency())
	}
	if h := p.FollowerHold(); h != 100*time.Microsecond {
		t.Errorf("path 1: follower hold %v, want 100µs", h)
	}
	q := paths[1]
	if q.Server != 3 || q.Leader != 3 || q.Follower != 0 || q.Phase(3) != 0 || q.Phase(7) != 0 {
		t.Errorf("path 2 (on the leader): server %d leader %d follower %d forward %v commit back %v; want 3 3 0 0 0",
			q.Server, q.Leader, q.Follower, q.Phase(3), q.Phase(7))
	}
	checkPathsRoundTrip(t, paths)
}

// checkPathsRoundTrip writes paths to phases.csv.gz and reads the same back.
func checkPathsRoundTrip(t *testing.T, paths []Path) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "phases.csv.gz")
	if err := WritePaths(file, paths); err != nil {
		t.Fatal(err)
	}
	back, err := ReadPaths(file)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, paths) {
		t.Fatalf("phases.csv.gz round trip:\n%+v\nwant\n%+v", back, paths)
	}
}

func TestAnatomize(t *testing.T) {
	recs, marks, start := anatomyFixture()
	paths, _ := join(recs, marks, start)
	pm := func(w string, s, l int) (model.Split, bool) {
		if s == l {
			return model.Split{Quorum: 0.2, Jitter: 0.01}, true
		}
		return model.Split{Forward: 10, Quorum: 0.2, Back: 10, Jitter: 0.05}, true
	}
	w := []Window{{Name: "before", From: 0, To: time.Second}}
	a := Anatomize(paths, w, pm, map[string]map[string]int{"before": {"D1": 1, "D2": 2, All: 3}}, nil)
	d1 := a["before"]["D1"]
	if d1.Count != 1 || d1.Coverage != 1 || math.Abs(d1.MeasuredMS-22) > 1e-9 || d1.Negative != 0 {
		t.Fatalf("D1: %+v", d1)
	}
	e := d1.ExcessMS
	wantE := Excess{Total: 1.8, SendLag: 0.2, Client: 0.8, Processing: 0.7, JitterInOrder: 0.05, Other: 0.05}
	for name, got := range map[string][2]float64{"total": {e.Total, wantE.Total}, "send lag": {e.SendLag, wantE.SendLag},
		"client": {e.Client, wantE.Client}, "processing": {e.Processing, wantE.Processing},
		"jitter": {e.JitterInOrder, wantE.JitterInOrder}, "other": {e.Other, wantE.Other}} {
		if math.Abs(got[0]-got[1]) > 1e-9 {
			t.Errorf("D1 excess %s = %.4f, want %.4f", name, got[0], got[1])
		}
	}
	if parts := e.SendLag + e.Client + e.Processing + e.JitterInOrder + e.Other; math.Abs(parts-e.Total) > 1e-9 {
		t.Errorf("D1 excess parts add up to %.4f, total %.4f", parts, e.Total)
	}
	if d2 := a["before"]["D2"]; d2.Count != 1 || d2.Coverage != 0.5 {
		t.Errorf("D2: count %d coverage %v, want 1 and 0.5 (one of two acknowledged writes joined)", d2.Count, d2.Coverage)
	}
	if a["before"][All].Count != 2 {
		t.Errorf("all: count %d, want 2", a["before"][All].Count)
	}

	// Out of order steps are counted, not hidden.
	bad := append([]Path(nil), paths...)
	bad[0].At[StepReply] = bad[0].At[StepApplied] - time.Microsecond
	if n := Anatomize(bad, w, nil, nil, nil)["before"]["D1"].Negative; n != 1 {
		t.Errorf("a reply before its apply: negative = %d, want 1", n)
	}
	if Anatomize(bad, w, nil, nil, nil)["before"]["D1"].ExcessMS != nil {
		t.Error("an excess without a model")
	}
}

// TestZxidTable: zxids in any order, in several epochs, from any counter, one epoch
// spread too far for a slice, each get their own slot; one never covered is not
// there, one covered but never set is zero.
func TestZxidTable(t *testing.T) {
	var x zxidTable[[1]int64]
	zs := []zxid.Zxid{0x1_00000005, 0x1_00000003, 0x2_fffffff0, 0x1_00000009, 0x2_00000001, 0x1_00000004}
	for _, z := range zs {
		x.cover(z)
	}
	x.alloc()
	for i, z := range zs {
		x.slot(z)[0] = int64(i + 1)
	}
	for i, z := range zs {
		if a := x.get(z); a == nil || a[0] != int64(i+1) {
			t.Errorf("zxid %v: %v, want %d", z, a, i+1)
		}
		if x.slot(z)[0] != int64(i+1) {
			t.Errorf("zxid %v: slot made it again", z)
		}
	}
	for _, z := range []zxid.Zxid{0x1_00000002, 0x1_0000000a, 0x3_00000005, 0x2_00000002, 0} {
		if a := x.get(z); a != nil {
			t.Errorf("zxid %v: %v, never covered", z, a)
		}
	}
	if a := x.get(0x1_00000006); a == nil || a[0] != 0 {
		t.Errorf("zxid 0x100000006, covered, never set: %v, want [0]", a)
	}
}

// TestAnatomizeHostStall: a stall of a process on a write's path comes out of the
// phase it fell in and into host_stall, so the phases still add up; out of a link's
// phase only as far as the link took longer than the model; a stall of a process off
// the path does not count.
func TestAnatomizeHostStall(t *testing.T) {
	recs, marks, start := anatomyFixture()
	paths, _ := join(recs, marks, start)
	pm := func(w string, s, l int) (model.Split, bool) {
		return model.Split{Forward: 10, Quorum: 0.2, Back: 10, Jitter: 0.05}, s != l
	}
	at := func(v float64) time.Duration { return time.Duration(v * 1e6) }
	// Path 1's forward link took 10.1 ms (model 10), its quorum's link part 0.2 (model
	// 0.2), the commit's way back 10 (model 10).
	stalls := []HostStall{
		{HarnessProcess, at(10.1), at(10.25)}, // send lag 0.1, to the server 0.05 (path 1)
		{HarnessProcess, at(11.5), at(11.55)}, // path 1's forward link (0.1 over the model): 0.05; path 2's quorum
		{"p2", at(20.75), at(20.85)},          // path 1's follower: its hold 0.05; the quorum's link part, at the model: none
		{"p3", at(25), at(26)},                // path 1's leader, while the commit is on a link at the model: none
		{"p9", at(10), at(32)},                // on no path
	}
	w := []Window{{Name: "before", From: 0, To: time.Second}}
	a := Anatomize(paths, w, pm, map[string]map[string]int{"before": {"D1": 1, "D2": 2, All: 3}}, stalls)
	d1, d2 := a["before"]["D1"], a["before"]["D2"]
	want := map[string]float64{"send_lag": 0.1, "to_server": 0.05, "forward": 10.05, "quorum": 0.25, "quorum_follower": 0.05,
		"commit_back": 10, "to_client": 0.7, "host_stall": 0.25}
	for name, v := range want {
		if got := d1.PhasesMS[name]; math.Abs(got-v) > 1e-9 {
			t.Errorf("D1 %s = %.4f ms, want %.4f", name, got, v)
		}
	}
	sum := d1.PhasesMS["host_stall"]
	for _, ph := range Phases {
		sum += d1.PhasesMS[ph.Name]
	}
	if math.Abs(sum-d1.MeasuredMS) > 1e-9 {
		t.Errorf("D1 phases and host stall add up to %.4f, measured %.4f", sum, d1.MeasuredMS)
	}
	e := d1.ExcessMS
	if e == nil || math.Abs(e.HostStall-0.25) > 1e-9 || math.Abs(e.Other) > 1e-9 {
		t.Fatalf("D1 excess %+v, want host stall 0.25 and other 0", e)
	}
	if parts := e.SendLag + e.Client + e.Processing + e.JitterInOrder + e.Other + e.HostStall; math.Abs(parts-e.Total) > 1e-9 {
		t.Errorf("D1 excess parts add up to %.4f, total %.4f", parts, e.Total)
	}
	if got := d2.PhasesMS["host_stall"]; math.Abs(got-0.05) > 1e-9 {
		t.Errorf("D2 host stall %.4f ms, want 0.05 (the harness's, in its quorum wait, which has no model)", got)
	}
	// Without a model every overlap counts.
	if got := Anatomize(paths, w, nil, nil, stalls)["before"]["D1"].PhasesMS["host_stall"]; math.Abs(got-1.3) > 1e-9 {
		t.Errorf("D1 host stall without a model %.4f ms, want 1.3", got)
	}
	if _, ok := Anatomize(paths, w, pm, nil, nil)["before"]["D1"].PhasesMS["host_stall"]; ok {
		t.Error("a host stall phase where the host was not measured")
	}
	if got := Anatomize(paths, w, pm, nil, []HostStall{})["before"]["D1"].PhasesMS; got["host_stall"] != 0 || got["send_lag"] != 0.2 {
		t.Errorf("measured host without stalls: %v, want host_stall 0 and the phases whole", got)
	}
}

// TestAnatomizeTail: the tail is exactly the writes at or above the percentile, and
// its phases add up to its mean.
func TestAnatomizeTail(t *testing.T) {
	// 2000 writes in two DCs, each step a random 0-2 ms after the last: latencies spread.
	rng := rand.New(rand.NewPCG(7, 8))
	paths := make([]Path, 2000)
	for i := range paths {
		p := &paths[i]
		p.ID, p.DC, p.Server, p.Leader, p.Follower = uint64(i), []string{"D1", "D2"}[i%2], 1+i%2, 3, 2
		p.At[0] = time.Duration(i) * time.Millisecond
		for k := 1; k < int(numSteps); k++ {
			p.At[k] = p.At[k-1] + time.Duration(rng.IntN(2000))*time.Microsecond
		}
	}
	w := []Window{{"before", 0, time.Hour}}
	var stalls []HostStall
	for i := range 50 {
		from := time.Duration(i) * 37 * time.Millisecond
		stalls = append(stalls, HostStall{HarnessProcess, from, from + 2*time.Millisecond})
	}
	a := Anatomize(paths, w, nil, nil, stalls)["before"]
	for _, dc := range []string{"D1", All} {
		var lat []float64
		for _, p := range paths {
			if dc == All || p.DC == dc {
				lat = append(lat, ms(p.Latency()))
			}
		}
		slices.Sort(lat)
		for _, tl := range tails {
			tail, ok := a[dc].Tail[tl.name]
			if len(lat) < tl.min {
				if ok {
					t.Errorf("%s: a %s tail of %d writes", dc, tl.name, len(lat))
				}
				continue
			}
			at := lat[int(math.Ceil(tl.q*float64(len(lat))))-1]
			n := len(lat) - sort.SearchFloat64s(lat, at)
			if !ok || tail.AtMS != at || tail.Count != n || tail.MeasuredMS < at-1e-9 {
				t.Fatalf("%s %s: %+v, want at %.4f over %d writes", dc, tl.name, tail, at, n)
			}
			sum := tail.PhasesMS["host_stall"]
			for _, ph := range Phases {
				sum += tail.PhasesMS[ph.Name]
			}
			if math.Abs(sum-tail.MeasuredMS) > 1e-9 {
				t.Errorf("%s %s: phases add up to %.4f, mean %.4f", dc, tl.name, sum, tail.MeasuredMS)
			}
		}
	}
	if a[All].Tail["p99"] == nil || a[All].Tail["p999"] == nil {
		t.Fatalf("all: tails %v, want p99 and p999 (%d writes)", a[All].Tail, a[All].Count)
	}
}

// join is Join of each server's marks cut into pieces of three, so that every test
// of the join also crosses the pieces' boundaries as the simulator's chunks do.
func join(recs []workload.Record, marks map[int][]trace.Mark, start int64) ([]Path, JoinStats) {
	pieces := map[int][][]trace.Mark{}
	for s, ms := range marks {
		for len(ms) > 0 {
			n := min(3, len(ms))
			pieces[s] = append(pieces[s], ms[:n])
			ms = ms[n:]
		}
	}
	return Join(recs, pieces, start)
}

// TestReadPathsOldLayout reads a stored phases.csv.gz of the layout before the delta
// one (two-dc's first 40 paths, times in ns since the start), and reads back the same
// paths from the delta layout WritePaths writes now.
func TestReadPathsOldLayout(t *testing.T) {
	old, err := ReadPaths(filepath.Join("testdata", "phases-before-2026-12-02.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(old) != 40 || old[0].ID != 1099511627777 || old[0].DC != "D1" || old[0].At[0] != 131779 || old[39].At[numSteps-1] <= old[39].At[0] {
		t.Fatalf("%d paths, the first %+v", len(old), old[0])
	}
	checkPathsRoundTrip(t, old)
}
