package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/sim"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/topology"
	"github.com/polebench/polebench/trial"
)

// checkSpec is what polebench check runs by default: two-dc, 10 s at 200 req/s, local.
func checkSpec(t *testing.T) *spec.Spec {
	t.Helper()
	sp, err := spec.Resolve("two-dc")
	if err != nil {
		t.Fatal(err)
	}
	sp, err = sp.With(spec.Setting{Name: "crash-at", Value: "none"}, spec.Setting{Name: "warmup", Value: "0s"},
		spec.Setting{Name: "duration", Value: "10s"}, spec.Setting{Name: "rate", Value: "200"}, spec.Setting{Name: "backend", Value: "local"})
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// TestCheckCatchesBroken: polebench check, on the local backend, catches servers
// broken on purpose, one at a time (replica.Variants), and the seed that caught one
// passes on the sound replica: the power table's local column for two variants
// (make check-broken prints the whole table).
func TestCheckCatchesBroken(t *testing.T) {
	// A search over seeds on real timing: whether a seed shows the break depends on
	// the instants the faults find, so it is a campaign, not a test of `make test`.
	// `make check-broken` runs it.
	if os.Getenv("POLEBENCH_CHECK_BROKEN") == "" {
		t.Skip("a search on real timing: make check-broken (POLEBENCH_CHECK_BROKEN=1) runs it")
	}
	sp := checkSpec(t)
	topo, err := sp.Topology()
	if err != nil {
		t.Fatal(err)
	}
	var variants []replica.VariantInfo
	for _, name := range []replica.Variant{replica.SelfTwice, replica.ApplyUncommitted} {
		v, err := replica.VariantOf(string(name))
		if err != nil {
			t.Fatal(err)
		}
		variants = append(variants, v)
	}
	c := &checker{sp: sp, out: t.TempDir()}
	schedule := func(seed uint64) []nemesis.Fault { return sim.DenseFaults(topo, seed, sp.Duration) }
	run := func(ctx context.Context, broken map[int]replica.Variant, seed uint64, fs []nemesis.Fault) (string, error) {
		cc := *c
		cc.broken = broken
		r := cc.run(ctx, seed, fs, filepath.Join(c.out, fmt.Sprintf("seed-%d-%d", seed, len(broken))))
		if r.verdict == verdictError {
			t.Fatalf("seed %d: %v", seed, r.detail)
		}
		return r.verdict, r.detail
	}
	rows := power(context.Background(), variants, func(replica.VariantInfo) string { return "" }, 1, 50, 1, schedule, run, progress.NewPlain(testWriter{t}))
	for _, r := range rows {
		switch {
		case r.seed == 0:
			t.Errorf("%s not caught in %d seeds", r.v.Name, r.tried)
		case r.sound != verdictOK:
			t.Errorf("%s: seed %d fails on the sound replica too: %s", r.v.Name, r.seed, r.sound)
		case len(r.shrunk) > len(r.faults):
			t.Errorf("%s: shrunk to %d of %d faults", r.v.Name, len(r.shrunk), len(r.faults))
		}
	}
}

// faultGroups pairs every fault with what undoes it, so a shrink keeps schedules
// playable.
func TestFaultGroups(t *testing.T) {
	fs := []nemesis.Fault{
		{Kind: nemesis.Kill, Server: 1}, {Kind: nemesis.Pause, Server: 2}, {Kind: nemesis.Partition},
		{Kind: nemesis.Restart, Server: 1}, {Kind: nemesis.SlowDisk, Server: 3, Delay: 1}, {Kind: nemesis.Resume, Server: 2},
		{Kind: nemesis.Heal}, {Kind: nemesis.SlowDisk, Server: 3}, {Kind: nemesis.TornTail, Server: 1}, {Kind: nemesis.Restart, Server: 1},
	}
	got := faultGroups(fs)
	want := [][]int{{0, 3}, {1, 5}, {2, 6}, {4, 7}, {8, 9}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groups %v, want %v", got, want)
	}
	// Every random schedule (classic and dense) splits into groups that cover it once.
	topo := checkSpecTopo(t)
	for seed := uint64(1); seed <= 400; seed++ {
		fs := sim.RandomFaults(topo, seed, 10*time.Second)
		if seed > 200 {
			fs = sim.DenseFaults(topo, seed, 30*time.Second)
		}
		seen := map[int]bool{}
		for _, g := range faultGroups(fs) {
			for _, i := range g {
				if seen[i] {
					t.Fatalf("seed %d: fault %d in two groups", seed, i)
				}
				seen[i] = true
			}
		}
		if len(seen) != len(fs) {
			t.Fatalf("seed %d: groups cover %d of %d faults", seed, len(seen), len(fs))
		}
	}
}

func checkSpecTopo(t *testing.T) *topology.Topology {
	t.Helper()
	topo, err := checkSpec(t).Topology()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestReplayArgs(t *testing.T) {
	args := []string{"three-dc-dep1", "--backend", "netns", "--seeds=50", "--duration", "15s", "--shrink", "--converge", "5s", "--out", "x", "--rate=300", "--faults", "f.json", "--from", "7"}
	for _, c := range []struct{ got, want string }{
		{simReplay(args), " three-dc-dep1 --duration 15s --rate=300 --faults f.json"},
		{replayArgs(args, "from", "seeds", "shrink"), " three-dc-dep1 --backend netns --duration 15s --converge 5s --out x --rate=300 --faults f.json"},
		{simReplay([]string{"--seeds", "5"}), ""}, // no spec named: no double space
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestCheckUsage(t *testing.T) {
	if code, _, errs := runCLI("check", "--backend", "sim"); code == 0 || !strings.Contains(errs, "sim check") {
		t.Errorf("check --backend sim: exit %d, %q", code, errs)
	}
	if code, _, errs := runCLI("check", "--seeds", "0"); code == 0 || !strings.Contains(errs, "--seeds 0") {
		t.Errorf("check --seeds 0: exit %d, %q", code, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--schedule", "jepsen"}, `--schedule "jepsen"`},
		{[]string{"sim", "check", "--schedule", "jepsen"}, `--schedule "jepsen"`},
		{[]string{"check", "--broken", "p3"}, `--broken "p3": want pN:VARIANT`},
		{[]string{"sim", "check", "--broken", "p3:lazy"}, `no broken variant "lazy"`},
		{[]string{"check", "--variants", "all", "--backend", "netns"}, "only the local backend's servers"},
		{[]string{"sim", "check", "--variants", "self-twice,lazy"}, `--variants: no broken variant "lazy"`},
	} {
		if code, _, errs := runCLI(c.args...); code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q, want %q", c.args, code, errs, c.want)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestReplayLines: each replay line a failing seed prints, run as printed, replays
// the seed: its verdict, schedule and run directory again, and the same lines. The
// failures are cheap and certain: a server killed at 4 s and never restarted (the
// simulator's servers do not all converge), and on a real cluster --converge 1ns (no
// server answers in time, whatever the schedule: stuck).
func TestReplayLines(t *testing.T) {
	t.Chdir(t.TempDir()) // sim check's replay of a real check writes to results/sim-check
	const killed = "killed.json"
	if err := os.WriteFile(killed, []byte(`[{"At": 4000000000, "Kind": "kill", "Server": 5}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		seed uint64 // the failing seed whose lines are run
		// simSchedule: the simulator's replay of a real check fails with the same
		// schedule (it has --faults); else the seed passes there.
		simSchedule bool
	}{
		{"sim check", []string{"sim", "check", "--faults", killed, "--seeds", "2", "--from", "5", "--out", "sim"}, 6, false},
		{"sim check, spec and overrides", []string{"sim", "check", "three-dc-dep1", "--duration", "6s", "--rate=150", "--disk-latency", "2ms",
			"--faults", killed, "--jobs", "1", "--from", "5", "--seeds=2", "--out", "sim-dep1"}, 6, false},
		{"check", []string{"check", "--schedule", "classic", "--converge", "1ns", "--seeds", "1", "--from", "3", "--out", "check"}, 3, false},
		{"check, spec and overrides", []string{"check", "two-dc", "--backend", "local", "--duration", "5s", "--rate", "100",
			"--faults", killed, "--converge=1ns", "--shrink", "--from", "5", "--seeds", "1", "--out", "check-two-dc"}, 5, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(c.args...)
			first := seedNote(out, c.seed)
			if first == nil {
				t.Fatalf("polebench %v: exit %d, no failure of seed %d\nstdout: %s\nstderr: %s", c.args, code, c.seed, out, errs)
			}
			if c.args[0] == "check" && first["verdict"] != "STUCK" {
				t.Fatalf("seed %d: %s, want STUCK (--converge 1ns): %s", c.seed, first["verdict"], first["detail"])
			}
			// The same executor: the same failure and the same lines.
			_, replayOut := replay(t, first["replay"], code)
			keys := []string{"verdict", "schedule", "run directory", "replay", "in the simulator"}
			if c.args[0] == "sim" {
				keys = append(keys, "detail") // deterministic
			}
			if n := seedNote(replayOut, c.seed); n == nil {
				t.Errorf("%s: no failure of seed %d:\n%s", first["replay"], c.seed, replayOut)
			} else {
				for _, k := range keys {
					if n[k] != first[k] {
						t.Errorf("%s: %s %q, want %q", first["replay"], k, n[k], first[k])
					}
				}
			}
			if c.args[0] == "sim" {
				return
			}
			// The simulator: the same seed of the same spec, with the same schedule.
			simCode, simOut := replay(t, first["in the simulator"], 0)
			if want := fmt.Sprintf("sim check two-dc: 1 seeds from %d ", c.seed); !strings.Contains(simOut, want) {
				t.Errorf("%s: exit %d, no %q:\n%s", first["in the simulator"], simCode, want, simOut)
			}
			if sim := seedNote(simOut, c.seed); c.simSchedule && (sim == nil || sim["schedule"] != first["schedule"]) {
				t.Errorf("%s: schedule %q, want %q:\n%s", first["in the simulator"], sim["schedule"], first["schedule"], simOut)
			}
			if first["shrunk replay"] == "" {
				return
			}
			// The shrunk schedule, from its faults.json (--converge 1ns keeps every try
			// stuck: the shrink removes every fault).
			if first["shrunk"] != "[]" {
				t.Errorf("shrunk to %q, want []", first["shrunk"])
			}
			_, shrunkOut := replay(t, first["shrunk replay"], code)
			if n := seedNote(shrunkOut, c.seed); n == nil || n["schedule"] != first["shrunk"] || n["verdict"] != first["verdict"] {
				t.Errorf("%s: want %s with schedule %s:\n%s", first["shrunk replay"], first["verdict"], first["shrunk"], shrunkOut)
			}
		})
	}
}

// replay runs line, a printed "polebench ..." command, and wants exit status code.
func replay(t *testing.T, line string, code int) (int, string) {
	t.Helper()
	args, ok := strings.CutPrefix(line, "polebench ")
	if !ok {
		t.Fatalf("replay line %q", line)
	}
	got, out, errs := runCLI(strings.Fields(args)...)
	if got != code {
		t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", line, got, code, out, errs)
	}
	return got, out
}

// seedNote is what a check printed of seed's failure: its verdict and detail, and
// each indented line by its key ("schedule", "replay", ...), those after a shrink
// under "shrunk" and "shrunk KEY"; nil if it printed none.
func seedNote(out string, seed uint64) map[string]string {
	m := regexp.MustCompile(`(?m)^seed ` + strconv.FormatUint(seed, 10) + ` ([^:]*): (.*)\n((?:  .*\n)*)`).FindStringSubmatch(out)
	if m == nil {
		return nil
	}
	note := map[string]string{"verdict": m[1], "detail": m[2]}
	prefix := ""
	for _, l := range strings.Split(strings.TrimRight(m[3], "\n"), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), ": ")
		if strings.HasPrefix(k, "shrunk to ") {
			note["shrunk"], prefix = v, "shrunk "
			continue
		}
		note[prefix+k] = v
	}
	return note
}

// TestCheckFaultsUnwritable: a seed whose schedule cannot be written to its run
// directory is an error, with the file in the detail, and runs nothing: no replay's
// --faults could read it, and the check writes nothing anywhere instead.
func TestCheckFaultsUnwritable(t *testing.T) {
	faults := sim.RandomFaults(checkSpecTopo(t), 1, 10*time.Second)
	for _, c := range []struct {
		name string
		dir  func(t *testing.T, root string) string // the run directory, made unwritable
	}{
		{"run directory under a file", func(t *testing.T, root string) string {
			if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(root, "file", "seed-1")
		}},
		{"faults.json a directory", func(t *testing.T, root string) string {
			dir := filepath.Join(root, "seed-1")
			if err := os.MkdirAll(filepath.Join(dir, "faults.json", "x"), 0o755); err != nil {
				t.Fatal(err)
			}
			return dir
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := c.dir(t, root)
			before := tree(t, root)
			ch := &checker{sp: checkSpec(t), out: root}
			r := ch.run(context.Background(), 1, faults, dir)
			if r.verdict != verdictError || !strings.Contains(errText(r.detail), filepath.Join(dir, "faults.json")) {
				t.Errorf("verdict %s (%v), want %s naming %s", r.verdict, r.detail, verdictError, filepath.Join(dir, "faults.json"))
			}
			if after := tree(t, root); !slices.Equal(after, before) {
				t.Errorf("the check wrote %v, had %v", after, before)
			}
		})
	}
}

// tree is every path below root.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		paths = append(paths, path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// TestUnplayed: a run whose nemesis fell behind and left faults of its schedule
// unplayed at the end of the load is told apart from one that played them all (its
// stuck servers are then the schedule's doing, not theirs: an error, not stuck).
func TestUnplayed(t *testing.T) {
	dir := t.TempDir()
	recs := []record.Record{
		record.Harness(time.Second, event.Kill, 3, nil),
		record.Harness(2*time.Second, event.Restart, 3, nil),
		{Event: event.Event{Kind: event.Started, Server: 3}, Source: record.SourceNode},
	}
	recs[0].Fault, recs[1].Fault = nemesis.Kill, nemesis.Restart
	if err := record.WriteEvents(filepath.Join(dir, trial.EventsFile), recs); err != nil {
		t.Fatal(err)
	}
	kill := []nemesis.Fault{{At: time.Second, Kind: nemesis.Kill, Server: 3}, {At: 2 * time.Second, Kind: nemesis.Restart, Server: 3}}
	if err := unplayed(dir, kill); err != nil {
		t.Errorf("both played: %v", err)
	}
	more := append(kill, nemesis.Fault{At: 3 * time.Second, Kind: nemesis.Pause, Server: 1}, nemesis.Fault{At: 4 * time.Second, Kind: nemesis.Resume, Server: 1})
	if err := unplayed(dir, more); err == nil || !strings.Contains(err.Error(), "2 of the schedule's 4") {
		t.Errorf("2 of 4 played: %v", err)
	}
	// A restart that failed (its port taken) did not carry the schedule out either.
	recs[1] = record.Harness(2*time.Second, event.Restart, 3, errors.New("start p3: admin port: bind: address already in use"))
	recs[1].Fault = nemesis.Restart
	if err := record.WriteEvents(filepath.Join(dir, trial.EventsFile), recs); err != nil {
		t.Fatal(err)
	}
	if err := unplayed(dir, kill); err == nil || !strings.Contains(err.Error(), "restart p3: start p3: admin port") {
		t.Errorf("a failed restart: %v", err)
	}
}

// A flavor that declares its fault kinds gets only those in its random schedules: a
// kill that loses unsynced writes becomes a plain kill, partitions and their heals go.
func TestCheckCarried(t *testing.T) {
	in := []nemesis.Fault{{Kind: nemesis.LoseUnsynced, Server: 1}, {Kind: nemesis.Restart, Server: 1},
		{Kind: nemesis.Partition}, {Kind: nemesis.Heal}, {Kind: nemesis.Pause, Server: 2}, {Kind: nemesis.Resume, Server: 2}, {Kind: nemesis.SlowDisk}}
	c := backend.Carries{Faults: []nemesis.Kind{nemesis.Kill, nemesis.Restart, nemesis.Pause, nemesis.Resume}}
	var kinds []nemesis.Kind
	for _, f := range carried(c, in) {
		kinds = append(kinds, f.Kind)
	}
	if want := []nemesis.Kind{nemesis.Kill, nemesis.Restart, nemesis.Pause, nemesis.Resume}; !slices.Equal(kinds, want) {
		t.Errorf("carried kinds %v, want %v", kinds, want)
	}
	if got := carried(backend.Carries{Faults: nemesis.Kinds()}, in); len(got) != len(in) {
		t.Errorf("carried(poled) kept %d of %d", len(got), len(in))
	}
}
