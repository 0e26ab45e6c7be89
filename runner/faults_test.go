package runner

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/cluster/swarm/swarmtest"
	"github.com/polebench/polebench/cluster/zookeeper"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/spec"
)

// everyFault is a spec with every fault a real poled cluster carries.
const everyFault = `faults:
  - {at: 3s, pause: 3}
  - {at: 3500ms, partition: [[1, 3], [2, 4, 5]]}
  - {at: 4500ms, heal: true}
  - {at: 5s, resume: 3}
  - {at: 6s, isolate: leader}
  - {at: 9s, heal: true}
  - {at: 10s, lose_unsynced: 2}
  - {at: 11s, restart: 2}
  - {at: 12s, torn_tail: 1}
  - {at: 13s, restart: 1}
  - {at: 14s, slow_disk: {server: 4, delay: 20ms}}
  - {at: 14500ms, one_way: [[1, 2], [3, 4, 5]]}
  - {at: 15s, partition: ring}
  - {at: 17s, heal: true}
  - {at: 18s, slow_disk: {server: 4, delay: 0s}}
`

// engineFaults is what a container of the docker backend carries (a swarm task, all
// but the pause): no log faults, since the engine keeps the data directories.
const engineFaults = `faults:
  - {at: 2s, pause: 3}
  - {at: 2500ms, partition: [[1, 3], [2, 4, 5]]}
  - {at: 3500ms, heal: true}
  - {at: 4s, resume: 3}
  - {at: 4500ms, isolate: leader}
  - {at: 6500ms, heal: true}
  - {at: 7s, slow_disk: {server: 4, delay: 20ms}}
  - {at: 7500ms, one_way: [[1, 2], [3, 4, 5]]}
  - {at: 8s, partition: ring}
  - {at: 9500ms, heal: true}
  - {at: 10s, slow_disk: {server: 4, delay: 0s}}
`

// TestFaultsLocal and TestFaultsNetns play every fault on a real cluster with fsync
// on: each is carried out without error and in the timeline, and no acknowledged
// write is lost, the history is linearizable. No timing is judged.
func TestFaultsLocal(t *testing.T) {
	t.Parallel()
	faultsOn(t, "local", everyFault, "24s")
}

func TestFaultsNetns(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	faultsOn(t, "netns", everyFault, "24s")
}

// TestFaultsDocker: the same on containers (docker pause; links cut and disks slowed
// through the replicas' admin ports), but for the log's faults: the engine keeps the
// data directories, so the harness cannot cut a log back.
func TestFaultsDocker(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("needs root")
	}
	faultsOn(t, "docker", engineFaults, "13s")
}

// TestFaultsLeftAtTheEnd: faults the schedule never undoes (a partition, a pause, a
// slow disk and a one-way cut, with no heal, resume or fast disk after them; what a
// schedule that slipped past the load's end leaves) are undone after the load, before
// the read-back: every server is read back and the run verifies.
func TestFaultsLeftAtTheEnd(t *testing.T) {
	t.Parallel()
	res := runFaults(t, "local", `faults:
  - {at: 3s, partition: [[1], [2, 3, 4, 5]]}
  - {at: 4s, pause: 2}
  - {at: 5s, slow_disk: {server: 4, delay: 20ms}}
  - {at: 6s, one_way: [[3], [1]]}
`, "8s")
	if v := readVerification(t, res.Dir); len(v.Servers) != 5 {
		t.Errorf("read back from %v, want all five servers", v.Servers)
	}
}

// TestFaultsSwarm: on a single-node swarm, what docker carries but a pause (a swarm
// task cannot be paused).
func TestFaultsSwarm(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a 13 s run; -short skips it")
	}
	swarmtest.Manager(t) // after t.Parallel: its machine-wide lock is held while the test runs, not while it waits
	var kept []string
	for _, l := range strings.SplitAfter(engineFaults, "\n") {
		if !strings.Contains(l, " pause:") && !strings.Contains(l, " resume:") {
			kept = append(kept, l)
		}
	}
	faultsOn(t, "swarm", strings.Join(kept, ""), "13s")
}

// faultsOn runs two-dc on backend for duration with faults (a spec's faults: list),
// and checks that every fault was carried out and recorded.
func faultsOn(t *testing.T, backend, faults, duration string) {
	res := runFaults(t, backend, faults, duration)
	seen := map[nemesis.Kind]bool{}
	for _, e := range runEvents(t, res.Dir) {
		if e.Source != record.SourceHarness || e.Fault == "" {
			continue
		}
		if e.Error != "" {
			t.Errorf("%s at %.0f ms: %s", e.Fault, e.AtMS, e.Error)
		}
		seen[e.Fault] = true
		if e.Fault == nemesis.Pause && e.Kind != event.Pause || e.Fault == nemesis.SlowDisk && e.Kind != event.SlowDisk {
			t.Errorf("%s recorded as %s", e.Fault, e.Kind)
		}
	}
	for _, k := range []nemesis.Kind{nemesis.Pause, nemesis.Resume, nemesis.IsolateLeader, nemesis.LoseUnsynced, nemesis.TornTail, nemesis.SlowDisk, nemesis.OneWay, nemesis.Partition, nemesis.Heal} {
		if !strings.Contains(faults, " "+strings.ReplaceAll(string(k), "-", "_")+":") && k != nemesis.IsolateLeader {
			continue // not in this backend's list
		}
		if !seen[k] {
			t.Errorf("no %s in the timeline", k)
		}
	}
}

// runFaults runs two-dc on backend for duration with faults, and checks that the run
// lost no acknowledged write and its history is linearizable.
func runFaults(t *testing.T, backend, faults, duration string) *Result {
	t.Helper()
	if testing.Short() {
		t.Skip("a " + duration + " run; -short skips it")
	}
	path := filepath.Join(t.TempDir(), "faults.yaml")
	b, err := spec.Shipped("two-dc")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, faults...), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = s.With(spec.Setting{Name: "duration", Value: duration}, spec.Setting{Name: "crash-at", Value: "none"},
		spec.Setting{Name: "repetitions", Value: "1"}, spec.Setting{Name: "backend", Value: backend}, spec.Setting{Name: "warmup", Value: "1s"},
		spec.Setting{Name: "rate", Value: testRate}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out := t.TempDir()
	res, err := Run(ctx, Options{Spec: s, Out: out, Progress: progress.NewPlain(testWriter{t}), Fsync: true})
	if err != nil {
		logFaults(t, out) // a run that ends in error is diagnosed by what its nemesis did
		t.Fatal(err)
	}
	sum := res.Summaries[0]
	if sum.LostAcknowledgedWrites != 0 {
		t.Errorf("%d acknowledged writes lost", sum.LostAcknowledgedWrites)
	}
	if v := readVerification(t, res.Dir); v.Linearizability != "ok" {
		t.Errorf("linearizability: %s", v.Linearizability)
	}
	return res
}

// logFaults logs every harness record of the run directories under out: the faults as
// carried out, with their errors, and what the harness saw of the servers.
func logFaults(t *testing.T, out string) {
	t.Helper()
	_ = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "events.jsonl" {
			return err
		}
		tl, err := record.ReadEvents(p)
		if err != nil {
			t.Logf("%s: %v", p, err)
			return nil
		}
		for _, e := range tl {
			if e.Source == record.SourceHarness {
				t.Logf("%8.0f ms  %s %s p%d %s", e.AtMS, e.Kind, e.Fault, e.Server, e.Error)
			}
		}
		return nil
	})
}

// TestZooKeeperPause: a ZooKeeper server is a JVM of this host, paused by SIGSTOP and
// resumed by SIGCONT; the run loses no acknowledged write.
func TestZooKeeperPause(t *testing.T) {
	if err := zookeeper.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("real ZooKeeper needed under CI: %v", err)
		}
		t.Skip(err)
	}
	if testing.Short() {
		t.Skip("a 24 s run; -short skips it")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "pause.yaml")
	b, err := spec.Shipped("two-dc")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, "faults:\n  - {at: 4s, pause: 5}\n  - {at: 8s, resume: 5}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = s.With(spec.Setting{Name: "duration", Value: "16s"}, spec.Setting{Name: "crash-at", Value: "none"}, spec.Setting{Name: "flavor", Value: "zookeeper"},
		spec.Setting{Name: "repetitions", Value: "1"}, spec.Setting{Name: "warmup", Value: "1s"}, spec.Setting{Name: "rate", Value: "100"}); err != nil {
		t.Fatal(err)
	}
	sum, dir := runSpec(t, s)
	_ = sum
	var pauses int
	for _, e := range runEvents(t, dir) {
		if e.Source == record.SourceHarness && (e.Kind == event.Pause || e.Kind == event.Resume) {
			if e.Error != "" {
				t.Errorf("%s: %s", e.Kind, e.Error)
			}
			pauses++
		}
	}
	if pauses != 2 {
		t.Errorf("%d pauses and resumes recorded, want 2", pauses)
	}
}
