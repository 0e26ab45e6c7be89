package etcd_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/etcd"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/runner"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trial"
	"github.com/polebench/polebench/workload"
)

// cuts isolates the leader (p5, moved there) for 5 s, then cuts one way what p1-p4
// send p5 for 5 s, while p5's own messages still reach them.
const cuts = `name: cuts
datacenters:
  - {name: D1, endpoint: tud, servers: [1, 2]}
  - {name: D2, endpoint: cern, servers: [3, 4, 5]}
rates: {total: 100}
initial_leader: 5
crash_at: none
duration: 24s
repetitions: 1
flavor: etcd
faults:
  - {at: 4s, isolate: leader}
  - {at: 9s, heal: true}
  - {at: 13s, one_way: [[1, 2, 3, 4], [5]]}
  - {at: 18s, heal: true}
`

// TestEtcdCuts plays the cuts on a real etcd cluster on the local backend, its peer
// traffic through the user-space links the harness cuts (etcd cannot cut itself):
//   - the leader cut off: a member of the majority side leads while it lasts, and no
//     write sent through p5 is acknowledged while p5 is cut off (no quorum);
//   - p1-p4's messages to p5 cut, p5's to them not: p5, a follower, hears no leader
//     and campaigns (a cut the other way would leave it the leader's heartbeats),
//     while p1-p4, who still hear their leader, neither campaign nor elect (etcd's
//     check-quorum lease ignores p5's vote requests);
//   - after the heals no acknowledged write is lost and the history is linearizable
//     (porcupine), as the runner verifies, and nothing is left behind.
//
// Correctness only: which instants things happen at is not judged, only their order
// against the cuts as the timeline records them.
func TestEtcdCuts(t *testing.T) {
	if err := etcd.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("real etcd needed under CI: %v", err)
		}
		t.Skip(err)
	}
	if testing.Short() {
		t.Skip("a 24 s experiment; -short skips it")
	}
	s, err := spec.Parse("cuts.yaml", []byte(cuts))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Options{Spec: s, Out: t.TempDir(), Progress: progress.NewPlain(testWriter{t})})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Runs[0]
	v := run.Verification
	if v == nil || v.LostAcknowledgedWrites != 0 || v.Linearizability != "ok" || v.Acknowledged == 0 || len(v.Anomalies) > 0 {
		t.Fatalf("verification %+v", v)
	}
	_, h, _, err := trial.Read(run.Dir)
	if err != nil {
		t.Fatal(err)
	}
	faults := harnessFaults(t, h.Timeline)
	isolate, heal1, oneWay, heal2 := faults[0], faults[1], faults[2], faults[3]
	if isolate.Server != 5 {
		t.Fatalf("isolate-leader cut p%d off, want p5 (the initial leader)", isolate.Server)
	}
	if l := between(h.Timeline, event.Leading, isolate.At(), heal1.At()); len(l) == 0 || slices.Contains(l, 5) {
		t.Errorf("led while p5 was cut off: %v, want one of p1-p4", l)
	}
	// Sent once the cut took effect (the timeline has the fault's issue; the cut is a
	// flag on the proxies, set within microseconds of it), acknowledged before the heal.
	cutIn := isolate.At() + 50*time.Millisecond
	for _, r := range h.Records {
		if r.Server == 5 && r.Outcome == workload.OK && r.Sent > cutIn && r.Done < heal1.At() {
			t.Errorf("a write sent through p5 at %v acknowledged at %v, while p5 was cut off (%v to %v)", r.Sent, r.Done, isolate.At(), heal1.At())
		}
	}
	if c := between(h.Timeline, event.Election, oneWay.At(), heal2.At()); !slices.Contains(c, 5) || slices.ContainsFunc(c, func(id int) bool { return id != 5 }) {
		t.Errorf("campaigned while p1-p4's messages to p5 were cut: %v, want p5 alone", c)
	}
	if l := between(h.Timeline, event.Leading, oneWay.At(), heal2.At()); len(l) > 0 {
		t.Errorf("led anew while p1-p4's messages to p5 were cut: %v, want no election", l)
	}
	var sv struct{ Label string }
	readJSON(t, run.Dir+"/servers.json", &sv)
	if left, err := cluster.Down(context.Background(), sv.Label); err != nil || len(left) > 0 {
		t.Fatalf("after the run, cluster down %s removed %v (err %v)", sv.Label, left, err)
	}
}

// harnessFaults are the faults the harness carried out, in order; each without error.
func harnessFaults(t *testing.T, tl []record.Record) []record.Record {
	t.Helper()
	var out []record.Record
	for _, r := range tl {
		if r.Source == record.SourceHarness && r.Fault != "" {
			if r.Error != "" {
				t.Errorf("%s at %.0f ms: %s", r.Fault, r.AtMS, r.Error)
			}
			out = append(out, r)
		}
	}
	if len(out) != 4 {
		t.Fatalf("carried out %d faults, want the schedule's 4: %+v", len(out), out)
	}
	return out
}

// between are the servers with an event of kind in (from, to).
func between(tl []record.Record, kind event.Kind, from, to time.Duration) []int {
	var out []int
	for _, r := range tl {
		if r.Source == record.SourceNode && r.Kind == kind && r.At() > from && r.At() < to {
			out = append(out, r.Server)
		}
	}
	return out
}
