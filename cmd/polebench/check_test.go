package main

import (
	"context"
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

	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/sim"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/storage"
	"github.com/polebench/polebench/topology"
)

// The broken replicas, for these tests only.
func init() {
	brokenVariants["ack-before-sync"] = func(on bool) { storage.AckBeforeSync.Store(on) }
	brokenVariants["trust-tail"] = func(on bool) { storage.TrustTail.Store(on) }
}

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

// TestCheckCatchesBroken: polebench check, on the local backend, catches replicas
// broken on purpose, and the seed that caught one passes without the break:
//   - ack-before-sync acknowledges writes a power loss takes back (the simulator's
//     ackBeforeWrite): a data center's servers losing what they had not synced loses
//     acknowledged writes;
//   - trust-tail reads a torn record at the end of its log as a write: the server
//     serves a value no one wrote.
func TestCheckCatchesBroken(t *testing.T) {
	// A search over seeds on real timing: whether a seed shows the break depends on
	// the instants the kill finds, so it is a campaign, not a test of `make test`.
	// `make check-broken` runs it.
	if os.Getenv("POLEBENCH_CHECK_BROKEN") == "" {
		t.Skip("a search on real timing: make check-broken (POLEBENCH_CHECK_BROKEN=1) runs it")
	}
	sp := checkSpec(t)
	topo, err := sp.Topology()
	if err != nil {
		t.Fatal(err)
	}
	for _, variant := range []string{"ack-before-sync", "trust-tail"} {
		t.Run(variant, func(t *testing.T) {
			// One after the other: a variant's switch holds for the whole process, and
			// with the two side by side, trust-tail's switch made the other variant's
			// sound run of seed 54 (a torn tail on p2) serve the torn record.
			out := t.TempDir()
			c := &checker{sp: sp, out: out, broken: variant}
			// Seeds whose schedules can show it: a lossy outage of a majority, or a torn tail.
			var tried []uint64
			for seed := uint64(1); seed <= 60 && len(tried) < 8; seed++ {
				fs := sim.RandomFaults(topo, seed, sp.Duration)
				if !shows(variant, fs, topo.N()) {
					continue
				}
				tried = append(tried, seed)
				r := c.run(context.Background(), seed, fs, filepath.Join(out, "broken"))
				if r.verdict == verdictError {
					t.Fatalf("seed %d: %v", seed, r.detail)
				}
				if r.verdict != verdictUnsafe {
					os.RemoveAll(r.dir)
					continue
				}
				t.Logf("caught at seed %d in %v (%v): %v", seed, r.took, fs, r.detail)
				if variant == "trust-tail" { // the shrink keeps the failure with fewer faults
					small := c.shrink(context.Background(), r, progress.NewPlain(testWriter{t}))
					if small.verdict != verdictUnsafe || len(small.faults) >= len(fs) {
						t.Errorf("shrunk to %s with %d of %d faults", small.verdict, len(small.faults), len(fs))
					}
					t.Logf("shrunk to %v", small.faults)
				}
				c.broken = ""
				if r := c.run(context.Background(), seed, fs, filepath.Join(out, "sound")); r.verdict != verdictOK {
					t.Fatalf("seed %d fails without the break too: %s %v", seed, r.verdict, r.detail)
				}
				return
			}
			t.Fatalf("seeds %v did not catch %s", tried, variant)
		})
	}
}

// shows says whether schedule fs can show variant: ack-before-sync needs a majority
// killed at one instant losing what it had not synced, trust-tail a torn tail.
func shows(variant string, fs []nemesis.Fault, n int) bool {
	if variant == "trust-tail" {
		return slices.ContainsFunc(fs, func(f nemesis.Fault) bool { return f.Kind == nemesis.TornTail })
	}
	at := map[int64]int{}
	for _, f := range fs {
		if f.Kind == nemesis.LoseUnsynced || f.Kind == nemesis.TornTail {
			at[int64(f.At)]++
		}
	}
	for _, k := range at {
		if k > n/2 {
			return true
		}
	}
	return false
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
	// Every random schedule splits into groups that cover it once.
	topo := checkSpecTopo(t)
	for seed := uint64(1); seed <= 200; seed++ {
		fs := sim.RandomFaults(topo, seed, 10*time.Second)
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
		{"check", []string{"check", "--converge", "1ns", "--seeds", "1", "--from", "3", "--out", "check"}, 3, false},
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
