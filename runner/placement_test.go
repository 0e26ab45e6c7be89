package runner

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/etcd"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/model"
	"github.com/polebench/polebench/placement/etcdsys"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/workload"
)

// TestMain lets the test binary be the placement controller a run starts: the
// runner starts os.Executable() place --job FILE, as it starts the polebench
// binary's place subcommand, and here that executable is this test binary. A
// child process (not a goroutine) so that a kill is the kill of a process, as a
// user's controller dies.
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "place" && os.Args[2] == "--job" {
		os.Exit(placeChild(os.Args[3]))
	}
	os.Exit(m.Run())
}

func placeChild(path string) int {
	job, err := etcdsys.ReadJob(path)
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err = etcdsys.Serve(ctx, job, os.Stdout, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	}
	if err != nil {
		slog.Error("placement child", "err", err)
		return 1
	}
	return 0
}

// placementSpec is three-dc-dep1 on etcd with all load in fnal (p = 1) and the
// latency policy; the controller is killed before the crash and started again after
// Raft's election, so that only the restarted one can place the new leader.
const placementSpec = `name: placement-run
datacenters:
  - {name: D1, endpoint: caltech, servers: [4, 5]}
  - {name: D2, endpoint: slac, servers: [2, 3]}
  - {name: D3, endpoint: fnal, servers: [1]}
intra_dc_rtt_ms: 0.1
rates: {total: 100, skew: {hot: D3, p: 1}}
initial_leader: 5
crash_at: 9s
duration: 24s
workload: {warmup: 2s, settle: 4s}
flavor: etcd
placement: latency
repetitions: 1
faults:
  - {at: 6s, kill: controller}
  - {at: 13s, restart: controller}
`

// TestPlacementRun: a real run on etcd with a placement controller beside it, a
// process of its own. Before the crash it keeps the initial leader (the window the
// model's "before" measures); it is killed at 6 s, the cluster keeps serving and the
// run says placement stopped; restarted at 13 s, after Raft's election, it resumes
// and places the leader on the latency oracle's choice (the model's), which the run
// reports with its first commit; the controller is gone at the end. No timing is
// asserted.
func TestPlacementRun(t *testing.T) {
	t.Parallel()
	if err := etcd.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("real etcd needed under CI: %v", err)
		}
		t.Skip(err)
	}
	s, err := spec.Parse("placement-run.yaml", []byte(placementSpec))
	if err != nil {
		t.Fatal(err)
	}
	want := latencyChoice(t, s)
	sum, dir := runSpec(t, s)
	tl := runEvents(t, dir)
	var stopped, started float64 = -1, -1
	var decisions []record.Record
	for _, r := range tl {
		switch r.Kind {
		case event.PlacementStopped:
			stopped = r.AtMS
		case event.PlacementStarted:
			started = r.AtMS
		case event.Placement:
			decisions = append(decisions, r)
			if r.At() < s.CrashAt && r.Leader == 5 && r.Error == "" && r.Reason != "" && r.Server != 5 && !keptReason(r.Reason) {
				t.Errorf("before the crash the controller did not keep the initial leader: %+v", r)
			}
		}
	}
	if stopped < 0 || started < stopped {
		t.Fatalf("no PLACEMENT_STOPPED then PLACEMENT_STARTED in the events (%v, %v)", stopped, started)
	}
	resumed := false
	for _, r := range decisions {
		if r.AtMS > started {
			resumed = true
		}
		if r.AtMS > stopped && r.AtMS < started {
			t.Errorf("a decision while the controller was dead: %+v", r)
		}
	}
	if !resumed {
		t.Fatal("no decision after the controller's restart")
	}
	if !hasWarning(sum, "placement stopped at") {
		t.Errorf("the summary does not say placement stopped: %v", sum.Warnings)
	}
	if sum.PlacedLeader != want || sum.PlacedServingMS == nil {
		t.Fatalf("placed p%d (serving after the crash %v ms), want the latency oracle's p%d; Raft elected p%d", sum.PlacedLeader, sum.PlacedServingMS, want, sum.NewLeader)
	}
	if acked := ackedBetween(t, dir, stopped, started); acked == 0 {
		t.Error("no write acknowledged while the controller was dead")
	}
	if _, err := os.Stat(filepath.Join(dir, JobFile)); err != nil {
		t.Error(err)
	}
	label := runLabel(t, dir)
	if left, err := cluster.Down(context.Background(), label); err != nil || len(left) > 0 {
		t.Fatalf("after the run, cluster down %s removed %v (err %v)", label, left, err)
	}
	t.Logf("Raft elected p%d; placed p%d; election %v ms, crash to the placed leader serving %v ms, transfer %v ms", sum.NewLeader, sum.PlacedLeader,
		deref(sum.ElectionMS), deref(sum.PlacedServingMS), deref(sum.TransferMS))
}

func keptReason(why string) bool {
	return strings.Contains(why, "is kept where it leads") || strings.Contains(why, "is the policy's choice")
}

func latencyChoice(t *testing.T, s *spec.Spec) int {
	t.Helper()
	topo, err := s.Topology()
	if err != nil {
		t.Fatal(err)
	}
	var survivors []int
	for _, id := range topo.Servers() {
		if id != s.InitialLeader {
			survivors = append(survivors, id)
		}
	}
	a, err := model.Analyze(topo, survivors)
	if err != nil {
		t.Fatal(err)
	}
	e, err := a.Elect(score.Oracle{Name: score.Latency}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e.Leader
}

func hasWarning(sum *analysis.Summary, prefix string) bool {
	for _, w := range sum.Warnings {
		if strings.HasPrefix(w, prefix) {
			return true
		}
	}
	return false
}

// ackedBetween counts the writes intended in [from, to) ms and acknowledged.
func ackedBetween(t *testing.T, dir string, from, to float64) int {
	t.Helper()
	recs, err := workload.LoadRecords(filepath.Join(dir, "requests.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		at := float64(r.Intended.Milliseconds())
		if r.Outcome == workload.OK && at >= from && at < to {
			n++
		}
	}
	return n
}
