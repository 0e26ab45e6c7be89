// Package cuttest is what the tests of the flavors that the harness cuts (etcd,
// ZooKeeper) share: a run of a spec whose first fault isolates the leader, and the
// checks every such run must pass. Its own package: it imports the runner, which
// links every backend, so no backend's internal test can import it.
package cuttest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/runner"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trial"
	"github.com/polebench/polebench/workload"
)

// Run is a run of a spec that isolates the leader (its first fault) and heals it
// (its second), through the runner.
type Run struct {
	Dir     string
	History *trial.History
	Faults  []record.Record // the harness's faults, in order
}

// Cuts runs spec text (one repetition) and checks what every cut run must show:
// each fault carried out without error; no acknowledged write lost, every value
// explained, the history linearizable (porcupine); while the first fault (isolate:
// leader) lasts, a server of the majority side leads and no write sent through the
// old leader once the cut took effect is acknowledged (it has no quorum); nothing is
// left behind. Correctness only: instants are compared with the cuts' as the timeline
// records them, never with a bound.
func Cuts(t *testing.T, name, text string, progress *progress.Line) Run {
	t.Helper()
	s, err := spec.Parse(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Options{Spec: s, Out: t.TempDir(), Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Runs[0]
	if v := run.Verification; v == nil || v.LostAcknowledgedWrites != 0 || v.Linearizability != "ok" || v.Acknowledged == 0 || len(v.Anomalies) > 0 {
		t.Fatalf("verification %+v", v)
	}
	_, h, _, err := trial.Read(run.Dir)
	if err != nil {
		t.Fatal(err)
	}
	r := Run{Dir: run.Dir, History: h}
	for _, e := range h.Timeline {
		if e.Source == record.SourceHarness && e.Fault != "" {
			if e.Error != "" {
				t.Errorf("%s at %.0f ms: %s", e.Fault, e.AtMS, e.Error)
			}
			r.Faults = append(r.Faults, e)
		}
	}
	if n := len(s.FaultSchedule()); len(r.Faults) != n {
		t.Fatalf("carried out %d faults, want the schedule's %d: %+v", len(r.Faults), n, r.Faults)
	}
	isolate, heal := r.Faults[0], r.Faults[1]
	old := isolate.Server
	if l := r.Between(event.Leading, isolate.At(), heal.At()); len(l) == 0 || slices.Contains(l, old) {
		t.Errorf("led while p%d was cut off: %v, want a server of the majority side", old, l)
		r.logTimeline(t)
	}
	// The timeline has the fault's issue; the cut is a flag on the proxies (or a
	// netem tree), in place within a few ms of it, or more on a starved host: half a
	// second leaves the claim most of the cut and no dependence on the host's pace.
	cutIn := isolate.At() + 500*time.Millisecond
	for _, w := range h.Records {
		if w.Server == old && w.Outcome == workload.OK && w.Sent > cutIn && w.Done < heal.At() {
			t.Errorf("a write sent through p%d at %v acknowledged at %v, while it was cut off (%v to %v)", old, w.Sent, w.Done, isolate.At(), heal.At())
		}
	}
	if left, err := cluster.Down(context.Background(), h.Label); err != nil || len(left) > 0 {
		t.Fatalf("after the run, cluster down %s removed %v (err %v)", h.Label, left, err)
	}
	return r
}

// Between are the servers with a node event of kind in (from, to).
func (r Run) Between(kind event.Kind, from, to time.Duration) []int {
	var out []int
	for _, e := range r.History.Timeline {
		if e.Source == record.SourceNode && e.Kind == kind && e.At() > from && e.At() < to {
			out = append(out, e.Server)
		}
	}
	return out
}

// logTimeline logs the timeline, for a failed check to be read without the run dir.
func (r Run) logTimeline(t *testing.T) {
	t.Helper()
	for _, e := range r.History.Timeline {
		t.Logf("%9.1f ms %-7s %-14s p%d leader %d epoch %d %s%s", e.AtMS, e.Source, string(e.Kind)+string(e.Fault), e.Server, e.Leader, e.Epoch, e.Reason, e.Error)
	}
}
