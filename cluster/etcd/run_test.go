package etcd_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/etcd"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/runner"
	"github.com/polebench/polebench/spec"
)

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func specFor(t *testing.T, name string, settings ...string) *spec.Spec {
	t.Helper()
	s, err := spec.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	var sets []spec.Setting
	for _, kv := range append([]string{"duration=16s", "crash-at=8s", "warmup=2s", "settle=4s", "repetitions=1", "flavor=" + etcd.Flavor}, settings...) {
		k, v, _ := strings.Cut(kv, "=")
		sets = append(sets, spec.Setting{Name: k, Value: v})
	}
	if s, err = s.With(sets...); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEtcdRun runs the two-DC experiment on an etcd cluster through the runner, on the
// local backend and on netns (a namespace per member; kernel netem where the probe
// passes, else the user-space links): p5 leads first (moved there), is killed at 8 s, and a survivor of
// Raft's set (CanWin, from what each stood with) leads, its election and recovery
// measured off etcd's own logs and Status; no acknowledged write is lost, porcupine
// finds the history linearizable, the resolved heartbeat and election timeout are in
// the run directory, and cluster down finds nothing left. 100 writes/s: five members,
// their links and the harness share two cores with other work. Correctness only:
// nothing here is timed.
func TestEtcdRun(t *testing.T) {
	if err := etcd.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("real etcd needed under CI: %v", err)
		}
		t.Skip(err)
	}
	if testing.Short() {
		t.Skip("a 16 s experiment; -short skips it")
	}
	for _, b := range []string{"local", "netns"} {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			if b == "netns" && os.Geteuid() != 0 {
				if os.Getenv("CI") != "" {
					t.Fatal("the netns backend needs root, and CI runs as root")
				}
				t.Skip("needs root")
			}
			runTwoDC(t, specFor(t, "two-dc", "rate=100", "backend="+b))
		})
	}
}

// TestEtcdDockerRun is TestEtcdRun on the docker backend (a container per member, of
// the image of this host's etcd). Correctness only, as there.
func TestEtcdDockerRun(t *testing.T) {
	if err := etcd.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("real etcd needed under CI: %v", err)
		}
		t.Skip(err)
	}
	if testing.Short() {
		t.Skip("a 16 s experiment; -short skips it")
	}
	if err := cluster.Check(t.Context(), backend.Docker, etcd.Flavor); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the docker backend needs root and a Docker engine, which CI has: %v", err)
		}
		t.Skip(err)
	}
	runTwoDC(t, specFor(t, "two-dc", "rate=100", "backend="+backend.Docker))
}

func runTwoDC(t *testing.T, s *spec.Spec) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Options{Spec: s, Out: t.TempDir(), Progress: progress.NewPlain(testWriter{t})})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 1 || res.Runs[0].Verification == nil {
		t.Fatalf("runs %+v: want one, verified", res.Runs)
	}
	run, sum := res.Runs[0], res.Runs[0].Summary
	v := run.Verification
	if v.LostAcknowledgedWrites != 0 || v.Linearizability != "ok" || v.Acknowledged == 0 || len(v.Anomalies) > 0 {
		t.Fatalf("verification %+v", v)
	}
	set := etcd.CanWin([]int{1, 2, 3, 4}, 5, sum.ElectionZxids)
	if !slices.Contains(set, sum.NewLeader) {
		t.Fatalf("p%d leads after the crash, not one of Raft's set %v (logs %v)", sum.NewLeader, set, sum.ElectionZxids)
	}
	if sum.InitialLeader != 5 || sum.ElectionMS == nil || sum.RecoveryMS == nil || *sum.ElectionMS <= 0 || *sum.RecoveryMS <= 0 {
		t.Fatalf("initial leader p%d, election %v ms, recovery %v ms: want p5 and both measured", sum.InitialLeader, sum.ElectionMS, sum.RecoveryMS)
	}
	t.Logf("p%d of %v leads: election %.0f ms, recovery %.0f ms", sum.NewLeader, set, *sum.ElectionMS, *sum.RecoveryMS)
	b, err := os.ReadFile(run.Dir + "/logs/" + etcd.ConfigFile)
	if err != nil || !strings.Contains(string(b), `"election_timeout": "1s"`) {
		t.Errorf("%s: %s (%v): want the resolved election timeout", etcd.ConfigFile, b, err)
	}
	if b, err := os.ReadFile(res.Dir + "/spec.resolved.json"); err != nil || !strings.Contains(string(b), `"heartbeat": "100ms"`) {
		t.Errorf("spec.resolved.json: %.300s (%v): want the resolved flavor settings", b, err)
	}
	var sv struct{ Label string }
	readJSON(t, run.Dir+"/servers.json", &sv)
	if left, err := cluster.Down(context.Background(), sv.Label); err != nil || len(left) > 0 {
		t.Fatalf("after the run, cluster down %s removed %v (err %v): the run left them behind", sv.Label, left, err)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
