package nightly

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/benchdata"
	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/zkcompat"
)

// TestDefaultSuite checks the shipped suite: its entries, their goals, the --quick
// set, and the time budgets (a full night must fit the 75-minute CI job on 2 cores with
// room to spare, a quick one about 10 minutes).
func TestDefaultSuite(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		where string
		tol   float64 // measured_minus_model_ms; 0: a bench entry or none
		quick bool
	}
	wants := map[string]want{
		"two-dc-crash":             {"local", 1.0, true},
		"two-dc-crash-netns":       {"netns", 2.5, false},
		"two-dc-crash-docker":      {"docker", 3.0, false},
		"two-dc-crash-swarm":       {"swarm", 8.0, false},
		"etcd-two-dc-crash":        {"local etcd", 0, false},
		"etcd-two-dc-crash-netns":  {"netns etcd", 0, false},
		"fig7b-dep1-p1":            {"local", 2.0, false},
		"zookeeper-two-dc-400":     {"local zookeeper", 3.0, true},
		"poled-two-dc-400":         {"local", 1.0, false},
		"recovery-20mb":            {"local", 1.0, true},
		"poled-vs-zookeeper":       {"loopback poled vs zookeeper", 0, false},
		"poled-vs-etcd":            {"loopback poled vs etcd", 0, false},
		"sim-two-dc-crash":         {"sim", 1.0, true},
		"sim-fig7b-dep1-p1":        {"sim", 2.0, true},
		"sim-recovery-20mb":        {"sim", 1.0, true},
		"sim-speed-two-dc":         {"sim, workers 1, 2", 0, true},
		"sim-speed-nine-dc":        {"sim, workers 1, 2", 0, false},
		"sim-instructions-two-dc":  {"sim under callgrind, 1 worker", 0, false},
		"sim-instructions-nine-dc": {"sim under callgrind, 1 worker", 0, false},
		"kazoo":                    {"kazoo's harness, 3 servers: zookeeper, poled", 0, false},
	}
	if len(s.Entries) != len(wants) {
		t.Errorf("%d entries, want %d", len(s.Entries), len(wants))
	}
	for _, e := range s.Entries {
		w, ok := wants[e.Name]
		if !ok {
			t.Errorf("unexpected entry %s", e.Name)
			continue
		}
		if e.Where() != w.where || e.InQuick != w.quick {
			t.Errorf("%s: on %q, quick %v; want %q, %v", e.Name, e.Where(), e.InQuick, w.where, w.quick)
		}
		if e.Kind == KindBench {
			c := e.Load
			if !e.Goal.NoTrend || c.Repetitions < benchdata.TrendMinN || !slices.Equal(c.Servers, []int{3}) || c.Flavors[0] != backend.FlavorPoled {
				t.Errorf("%s: goal %v, %+v", e.Name, e.Goal, c)
			}
			// Against ZooKeeper: a ratio goal in both fsync settings, its JIT warmed longer.
			if zk := slices.Contains(c.Flavors, backend.FlavorZooKeeper); zk != (e.Goal.ThroughputRatioMin != nil) ||
				zk && (!slices.Equal(c.Fsync, []bool{false, true}) || c.WarmupOf(backend.FlavorZooKeeper) <= c.WarmupOf(backend.FlavorPoled)) {
				t.Errorf("%s: goal %v, %+v", e.Name, e.Goal, c)
			}
			continue
		}
		if e.Kind == KindSimSpeed {
			if !e.Goal.IsZero() || !slices.Equal(e.Workers, []int{1, 2}) || e.Resolved.Repetitions < 4 {
				t.Errorf("%s: goal %v, workers %v, %d repetitions", e.Name, e.Goal, e.Workers, e.Resolved.Repetitions)
			}
			continue
		}
		if e.Kind == KindKazoo {
			if !e.Goal.IsZero() || !slices.Equal(e.Kazoo.Modules, zkcompat.CIModules) {
				t.Errorf("%s: goal %v, modules %v: CI's, judged by zkcompat.Compare", e.Name, e.Goal, e.Kazoo.Modules)
			}
			continue
		}
		if e.Kind == KindSimInstructions {
			if !e.Goal.IsZero() || e.Resolved.Duration > 30*time.Second {
				t.Errorf("%s: goal %v, %v: callgrind runs it some 50 times slower", e.Name, e.Goal, e.Resolved.Duration)
			}
			continue
		}
		if r := e.Goal.MeasuredMinusModelMS; w.tol == 0 && !e.Goal.IsZero() || w.tol != 0 && (r == nil || r.Max != w.tol || r.Min != -w.tol) {
			t.Errorf("%s: goal %v, want ±%g ms (0: none)", e.Name, e.Goal, w.tol)
		}
		if e.Resolved.Repetitions != 5 || e.Resolved.Duration != 30*time.Second || e.Resolved.CrashAt != 15*time.Second {
			t.Errorf("%s: %d × %v, crash at %v", e.Name, e.Resolved.Repetitions, e.Resolved.Duration, e.Resolved.CrashAt)
		}
	}
	byName := func(s *Suite, name string) Entry {
		i := slices.IndexFunc(s.Entries, func(e Entry) bool { return e.Name == name })
		if i < 0 {
			t.Fatalf("no entry %s", name)
		}
		return s.Entries[i]
	}
	if e := byName(s, "fig7b-dep1-p1"); e.Resolved.Oracle.Name != "latency" || e.Resolved.Rates.Skew == nil || *e.Resolved.Rates.Skew.P != 1 {
		t.Errorf("fig7b entry: oracle %s, skew %+v", e.Resolved.Oracle.Name, e.Resolved.Rates.Skew)
	}
	if r := byName(s, "recovery-20mb").Resolved; r.PreloadMB != 20 || len(r.Outdate) != 1 {
		t.Errorf("recovery entry: preload %d, outdate %+v", r.PreloadMB, r.Outdate)
	}
	if r := byName(s, "zookeeper-two-dc-400").Resolved; r.Flavor != backend.FlavorZooKeeper || r.Rates.Total != 400 || byName(s, "poled-two-dc-400").Resolved.Rates.Total != 400 {
		t.Errorf("zookeeper entry: %s at %g writes/s", r.Flavor, r.Rates.Total)
	}
	if e := byName(s, "etcd-two-dc-crash-netns").Resolved; e.Flavor != "etcd" || e.Backend != backend.Netns || e.Rates.Total != byName(s, "two-dc-crash").Resolved.Rates.Total {
		t.Errorf("etcd netns entry: %s on %s at %g writes/s, not two-dc-crash's", e.Flavor, e.Backend, e.Rates.Total)
	}
	full := s.Planned()
	if full > 60*time.Minute {
		t.Errorf("a full night plans %v: the nightly workflow has 75 minutes", full)
	}
	t.Logf("a full night plans %v", full)

	q, err := s.Select(true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := q.Planned(); d > 11*time.Minute || d < 7*time.Minute {
		t.Errorf("a quick night plans %v, want about 10 minutes", d)
	}
	for _, e := range q.Entries {
		if e.Kind != KindBench && e.Resolved.Repetitions < 4 {
			t.Errorf("quick %s: %d repetitions cannot reach p < 0.05", e.Name, e.Resolved.Repetitions)
		}
	}
	if e := byName(q, "two-dc-crash"); e.Resolved.Duration != 25*time.Second || e.Resolved.Repetitions != 4 || byName(s, "two-dc-crash").Resolved.Duration != 30*time.Second {
		t.Errorf("quick two-dc-crash: %d × %v", e.Resolved.Repetitions, e.Resolved.Duration)
	}
	if !q.Quick || len(q.Entries) != 7 {
		t.Errorf("quick set: %d entries", len(q.Entries))
	}
}

// TestSelectPlanted: --set goes to every run entry after its own and its quick
// settings, never to a bench entry, and errors name the flag.
func TestSelectPlanted(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	planted := []spec.Setting{{Name: "intra-dc-rtt", Value: "3"}, {Name: "repetitions", Value: "4"}}
	p, err := s.Select(false, planted)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range p.Entries {
		if e.Kind == KindRun && (e.Resolved.IntraDCRTTMs != 3 || e.Resolved.Repetitions != 4) {
			t.Errorf("%s: intra-DC RTT %g, %d repetitions", e.Name, e.Resolved.IntraDCRTTMs, e.Resolved.Repetitions)
		}
	}
	if s.Entries[0].Resolved.IntraDCRTTMs != 0.1 {
		t.Errorf("Select changed the suite it selects from")
	}
	for _, tc := range []struct {
		set  spec.Setting
		want string
	}{
		{spec.Setting{Name: "bogus", Value: "1"}, `--set bogus=1: unknown override "bogus" (known: p, hot, `},
		{spec.Setting{Name: "intra-dc-rtt", Value: "-1"}, "--set intra-dc-rtt=-1: entry two-dc-crash (nightly/suite.yaml:"},
		// zookeeper runs on local and netns only: the docker entry says so.
		{spec.Setting{Name: "flavor", Value: "zookeeper"}, "--set flavor=zookeeper: entry two-dc-crash-docker"},
	} {
		if _, err := s.Select(false, []spec.Setting{tc.set}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %s: %v, want ~%q", tc.set, err, tc.want)
		}
	}
}

func TestBadSuites(t *testing.T) {
	const entry = "name: x\nexperiments:\n  - name: a\n    spec: two-dc\n    set: [duration=30s, crash-at=15s]\n"
	const benchEntry = "name: x\nexperiments:\n  - name: b\n    kind: bench\n    set: [repetitions=5]\n"
	const speedEntry = "name: x\nexperiments:\n  - name: s\n    kind: sim-speed\n    spec: two-dc\n"
	tests := []struct {
		name, text, want string
	}{
		{"empty", "", "bad.yaml: empty suite"},
		{"not yaml", "name: [", "bad.yaml: yaml: line 1"},
		{"no experiments", "name: x\n", "bad.yaml:1: experiments: missing"},
		{"unknown top field", "name: x\nexperiment: []\n", "bad.yaml:2: experiment: unknown field (known: experiments, name)"},
		{"unknown entry field", "name: x\nexperiments:\n  - name: a\n    spec: two-dc\n    sets: []\n", "bad.yaml:5: experiments[0].sets: unknown field (known: goal, kind, name, quick, set, spec)"},
		{"no spec", "name: x\nexperiments:\n  - name: a\n", "bad.yaml:3: experiments[0].spec: missing"},
		{"unknown spec", "name: x\nexperiments:\n  - name: a\n    spec: four-dc\n", "bad.yaml:3: experiments[0].spec: four-dc is neither a file nor a shipped spec"},
		{"unknown kind", "name: x\nexperiments:\n  - name: a\n    kind: sim\n    spec: two-dc\n", `bad.yaml:3: experiments[0].kind: unknown kind "sim" (known: bench, kazoo, run, sim-instructions, sim-speed)`},
		{"bad name", "name: x\nexperiments:\n  - name: a/b\n    spec: two-dc\n", `bad.yaml:3: experiments[0].name: "a/b"`},
		{"twice", "name: x\nexperiments:\n  - {name: a, spec: two-dc}\n  - {name: a, spec: two-dc}\n", `bad.yaml:4: experiments[1].name: "a" is also the name of the entry at bad.yaml:3`},
		{"not name=value", "name: x\nexperiments:\n  - name: a\n    spec: two-dc\n    set: [duration]\n", `bad.yaml:5: experiments[0].set[0]: override "duration": want name=value`},
		{"unknown override", "name: x\nexperiments:\n  - name: a\n    spec: two-dc\n    set:\n      - duration=30s\n      - bogus=23\n", `bad.yaml:7: experiments[0].set[1]: unknown override "bogus"`},
		{"bad value", "name: x\nexperiments:\n  - name: a\n    spec: two-dc\n    set:\n      - duration=30\n", `bad.yaml:6: experiments[0].set[0]: override duration=30: duration: "30" is not a duration`},
		// Each setting is fine alone, together the crash falls after the end.
		{"across fields", "name: x\nexperiments:\n  - name: a\n    spec: two-dc\n    set: [duration=30s]\n", "bad.yaml:3: experiments[0].set: "},

		// Goals.
		{"goal not a number", entry + "    goal: {measured_minus_model_ms: one}\n", `bad.yaml:6: experiments[0].goal.measured_minus_model_ms: "one" is not a number`},
		{"goal negative", entry + "    goal: {measured_minus_model_ms: -1}\n", "bad.yaml:6: experiments[0].goal.measured_minus_model_ms: -1: a tolerance is not negative"},
		{"goal range upside down", entry + "    goal:\n      measured_minus_model_ms: {min: 2, max: 1}\n", "bad.yaml:7: experiments[0].goal.measured_minus_model_ms: min 2 is above max 1"},
		{"goal range half", entry + "    goal:\n      measured_minus_model_ms: {max: 1}\n", "bad.yaml:7: experiments[0].goal.measured_minus_model_ms.min: missing"},
		{"goal unknown", entry + "    goal:\n      latency_ms: 1\n", "bad.yaml:7: experiments[0].goal.latency_ms: unknown field (known: measured_minus_model_ms, no_trend, rtt_error_pct_max, throughput_ratio_min)"},
		{"goal of another kind", entry + "    goal:\n      no_trend: true\n", "bad.yaml:7: experiments[0].goal.no_trend: not a goal of kind run (its goals: measured_minus_model_ms, rtt_error_pct_max)"},
		{"rtt goal not above 0", entry + "    goal: {rtt_error_pct_max: 0}\n", "bad.yaml:6: experiments[0].goal.rtt_error_pct_max: 0: a percentage above 0"},
		{"goal empty", entry + "    goal: {}\n", "bad.yaml:6: experiments[0].goal: an empty goal"},
		{"goal not a mapping", entry + "    goal: 1\n", "bad.yaml:6: experiments[0].goal: expected a mapping"},
		{"bench goal of a run", benchEntry + "    goal: {measured_minus_model_ms: 1}\n", "bad.yaml:6: experiments[0].goal.measured_minus_model_ms: not a goal of kind bench"},
		{"no_trend not bool", benchEntry + "    goal: {no_trend: yes}\n", "bad.yaml:6: experiments[0].goal.no_trend: expected true or false"},
		{"too few windows for a trend", "name: x\nexperiments:\n  - name: b\n    kind: bench\n    set: [repetitions=4]\n    goal: {no_trend: true}\n",
			"bad.yaml:6: experiments[0].goal: no_trend: 4 windows can never show a trend at p < 0.05 (Mann-Kendall needs 5)"},
		{"ratio of one flavor", "name: x\nexperiments:\n  - name: b\n    kind: bench\n    set: [flavor=poled]\n    goal: {throughput_ratio_min: 1}\n",
			"bad.yaml:6: experiments[0].goal: throughput_ratio_min compares poled with zookeeper: the entry measures poled"},
		{"ratio zero", benchEntry + "    goal: {throughput_ratio_min: 0}\n", "bad.yaml:6: experiments[0].goal.throughput_ratio_min: 0: a ratio above 0"},

		// Quick.
		{"quick not bool", entry + "    quick: often\n", "bad.yaml:6: experiments[0].quick: expected true, false or a list of name=value settings"},
		{"quick bad setting", entry + "    quick:\n      - repetitions=4\n      - duration=x\n", `bad.yaml:8: experiments[0].quick[1]: override duration=x: duration: "x" is not a duration`},
		{"quick across fields", entry + "    quick: [duration=14s]\n", "bad.yaml:6: experiments[0].quick: "},
		{"quick goal", "name: x\nexperiments:\n  - name: b\n    kind: bench\n    set: [repetitions=5]\n    quick: [repetitions=3]\n    goal: {no_trend: true}\n",
			"bad.yaml:7: experiments[0].goal: no_trend: 3 windows can never show a trend at p < 0.05 (Mann-Kendall needs 5) (with the quick settings)"},

		// The bench kind.
		{"bench with a spec", "name: x\nexperiments:\n  - name: b\n    kind: bench\n    spec: two-dc\n", "bad.yaml:5: experiments[0].spec: kind bench takes no spec"},
		{"bench unknown setting", "name: x\nexperiments:\n  - name: b\n    kind: bench\n    set: [p=1]\n", `bad.yaml:5: experiments[0].set[0]: unknown setting "p" of kind bench (known: clients, duration, flavor, fsync, mode, payload, rate, repetitions, servers, warmup, zookeeper-warmup)`},
		{"bench bad value", "name: x\nexperiments:\n  - name: b\n    kind: bench\n    set: [fsync=maybe]\n", `bad.yaml:5: experiments[0].set[0]: fsync=maybe: "maybe": want on, off, or off,on`},
		// The sim-speed kind.
		{"sim-speed workers not a count", speedEntry + "    set: [duration=30s, crash-at=15s, workers=0]\n", `bad.yaml:6: experiments[0].set[2]: workers=0: "0" is not a count of workers (1 or more)`},
		{"sim-speed workers twice", speedEntry + "    set:\n      - workers=2,1,2\n", `bad.yaml:7: experiments[0].set[0]: workers=2,1,2: 2 twice`},
		{"sim-speed on a backend", speedEntry + "    set: [backend=docker]\n", "bad.yaml:6: experiments[0].set[0]: backend=docker: a sim-speed entry always runs the simulator"},
		{"sim-speed bad override", speedEntry + "    set: [workers=1, bogus=2]\n", `bad.yaml:6: experiments[0].set[1]: unknown override "bogus"`},
		{"sim-speed goal", speedEntry + "    goal: {measured_minus_model_ms: 1}\n", "bad.yaml:6: experiments[0].goal: kind sim-speed takes no goal"},
		// The kazoo kind.
		{"kazoo with a spec", "name: x\nexperiments:\n  - name: k\n    kind: kazoo\n    spec: two-dc\n", "bad.yaml:5: experiments[0].spec: kind kazoo takes no spec"},
		{"kazoo unknown module", "name: x\nexperiments:\n  - name: k\n    kind: kazoo\n    set: [\"modules=test_client,test_zoo\"]\n", `bad.yaml:5: experiments[0].set[0]: modules=test_client,test_zoo: "test_zoo" is not a module of kazoo's suite`},
		{"kazoo bad size", "name: x\nexperiments:\n  - name: k\n    kind: kazoo\n    set: [modules=ci, size=0]\n", `bad.yaml:5: experiments[0].set[1]: size=0: "0" is not a number of servers`},
		{"kazoo unknown setting", "name: x\nexperiments:\n  - name: k\n    kind: kazoo\n    set: [duration=1s]\n", `bad.yaml:5: experiments[0].set[0]: unknown setting "duration" of kind kazoo (known: modules, size)`},
		{"kazoo goal", "name: x\nexperiments:\n  - name: k\n    kind: kazoo\n    goal: {no_trend: true}\n", "bad.yaml:5: experiments[0].goal: kind kazoo takes no goal"},
		{"bench bad config", "name: x\nexperiments:\n  - name: b\n    kind: bench\n    set: [servers=12]\n", "bad.yaml:3: experiments[0].set: --servers: 12 servers: 1 to 9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// TestSuiteForms: the forms a goal and quick may take.
func TestSuiteForms(t *testing.T) {
	s, err := Parse("ok.yaml", []byte(`name: x
experiments:
  - name: a
    spec: two-dc
    set: [duration=30s, crash-at=15s, repetitions=5]
    goal:
      measured_minus_model_ms: {min: -0.5, max: 1.5}
    quick: [repetitions=4]
  - name: b
    spec: two-dc
    set: [backend=sim, duration=30s, crash-at=15s]
    goal: {measured_minus_model_ms: 1}
    quick: true
  - name: c
    spec: two-dc
    set: [duration=30s, crash-at=15s]
    quick: false
  - name: d
    kind: bench
    set: ["fsync=off,on", zookeeper-warmup=40s, repetitions=6]
    goal: {throughput_ratio_min: 1.5, no_trend: true}
    quick: [repetitions=5]
`))
	if err != nil {
		t.Fatal(err)
	}
	a, b, c, d := s.Entries[0], s.Entries[1], s.Entries[2], s.Entries[3]
	if r := a.Goal.MeasuredMinusModelMS; r == nil || *r != (benchdata.Range{Min: -0.5, Max: 1.5}) || !a.InQuick || len(a.Quick) != 1 {
		t.Errorf("a: %+v", a)
	}
	if r := b.Goal.MeasuredMinusModelMS; r == nil || *r != (benchdata.Range{Min: -1, Max: 1}) || !b.InQuick || b.Quick != nil {
		t.Errorf("b: %+v", b)
	}
	if c.InQuick || !c.Goal.IsZero() {
		t.Errorf("c: %+v", c)
	}
	if d.Load.FlavorWarmup[backend.FlavorZooKeeper] != 40*time.Second || d.Load.Repetitions != 6 || !slices.Equal(d.Load.Flavors, []string{"poled", "zookeeper"}) {
		t.Errorf("d: %+v", d.Load)
	}
	q, err := s.Select(true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Entries) != 3 || q.Entries[0].Resolved.Repetitions != 4 || q.Entries[2].Load.Repetitions != 5 {
		t.Errorf("quick: %d entries", len(q.Entries))
	}
	// A write benchmark plans its start, both warm-ups and every window.
	if got, want := d.Planned(), 2*(20*time.Second+10*time.Second+40*time.Second+2*6*15*time.Second); got != want {
		t.Errorf("bench planned %v, want %v", got, want)
	}
}

// TestSuiteSpecNextToIt resolves a spec file relative to the suite's directory.
func TestSuiteSpecNextToIt(t *testing.T) {
	dir := t.TempDir()
	text, err := os.ReadFile("../experiments/two-dc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte(strings.Replace(string(text), "name: two-dc", "name: mine", 1)), 0o644)
	suite := filepath.Join(dir, "suite.yaml")
	os.WriteFile(suite, []byte("name: x\nexperiments:\n  - {name: a, spec: mine.yaml, set: [repetitions=2]}\n"), 0o644)
	s, err := Load(suite)
	if err != nil {
		t.Fatal(err)
	}
	if s.Entries[0].Resolved.Name != "mine" || s.Entries[0].Resolved.Repetitions != 2 {
		t.Errorf("resolved %s × %d", s.Entries[0].Resolved.Name, s.Entries[0].Resolved.Repetitions)
	}
}

// TestRunVerdictsAndExit: Run's bookkeeping with stand-in entries (no cluster). An
// entry this machine cannot run is skipped, named at the start, without failing the
// night (but under Strict); one whose backend can make the machine ready is prepared
// at its turn and the machine put back after it; a night fails on a failed entry or
// a confident miss, never on an inconclusive verdict, and its last line names the
// inconclusive and skipped entries. A bench entry's own bench.json joins the night
// under the entry's name.
func TestRunVerdictsAndExit(t *testing.T) {
	windows := func(name string, xs ...float64) benchdata.Metric {
		return benchdata.Metric{Name: "fsync-on/" + name + ".writes_per_s", Unit: "writes/s", Better: benchdata.Higher, Samples: xs}
	}
	// Each stand-in entry's windows, by name, in the order measured: 1.5x at p = 0.008,
	// 0.91x at p = 0.69 without a trend (a night of the issue's), ZooKeeper still
	// warming up.
	nights := map[string][]benchdata.Metric{
		"met":          {windows("poled", 21000, 21500, 20900, 21300, 21100), windows("zookeeper", 13800, 13700, 14000, 13600, 13900)},
		"inconclusive": {windows("poled", 6444, 7500, 5900, 7100, 6400), windows("zookeeper", 7200, 6300, 7400, 7047, 6900)},
		"trend":        {windows("poled", 21000, 21500, 20900, 21300, 21100), windows("zookeeper", 9000, 10000, 11000, 12000, 13000)},
	}
	const suite = `name: fake
experiments:
  - name: needs-java
    kind: bench
    goal: {throughput_ratio_min: 1}
  - name: %s
    kind: bench
    set: [repetitions=5]
    goal: {throughput_ratio_min: 1, no_trend: true}
  - name: needs-ready
    kind: bench
    set: [repetitions=5]
    goal: {throughput_ratio_min: 1}
`
	tests := []struct {
		name, second string
		strict       bool
		prepareErr   error
		runErr       error
		err          []string // in the error, or nil for none
		verdicts     []string // of needs-java, the second entry, needs-ready
		last         string
	}{
		{"met and a skip: exit 0", "met", false, nil, nil, nil,
			[]string{benchdata.FidelitySkipped, benchdata.FidelityMet, benchdata.FidelityMet}, "night: 2 met; 1 skipped (needs-java)"},
		{"inconclusive: exit 0, named last", "inconclusive", false, nil, nil, nil,
			[]string{benchdata.FidelitySkipped, benchdata.FidelityInconclusive, benchdata.FidelityMet}, "night: 1 met; 1 inconclusive (inconclusive); 1 skipped (needs-java)"},
		{"a confident miss fails", "trend", false, nil, nil, []string{"fidelity goal missed by trend"},
			[]string{benchdata.FidelitySkipped, benchdata.FidelityMissed, benchdata.FidelityMet}, "night: 1 met; 1 MISSED (trend); 1 skipped (needs-java)"},
		{"a failed entry fails", "met", false, nil, errors.New("the cluster did not start"), []string{"needs-ready (fake.yaml:10): the cluster did not start"},
			[]string{benchdata.FidelitySkipped, benchdata.FidelityMet, benchdata.FidelityMet}, "night: 2 met; 1 skipped (needs-java)"},
		{"strict: a skip fails", "met", true, nil, nil, []string{"needs-java (fake.yaml:3): skipped: flavor zookeeper: java not found"},
			[]string{benchdata.FidelitySkipped, benchdata.FidelityMet, benchdata.FidelityMet}, "night: 2 met; 1 skipped (needs-java)"},
		{"the machine cannot be made ready: skipped", "met", false, errors.New("the engine is in a swarm, but not as a manager"), nil, nil,
			[]string{benchdata.FidelitySkipped, benchdata.FidelityMet, benchdata.FidelitySkipped}, "night: 1 met; 2 skipped (needs-java, needs-ready)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			saved := kinds[KindBench]
			defer func() { kinds[KindBench] = saved }()
			fake := saved
			var ran []string
			ready, released := false, 0
			fake.check = func(_ context.Context, e Entry) error {
				switch {
				case e.Name == "needs-java":
					return errors.New("flavor zookeeper: java not found")
				case e.Name == "needs-ready" && !ready:
					return cluster.Unprepared(errors.New("the engine is no swarm manager"))
				}
				return nil
			}
			fake.prepare = func(_ context.Context, e Entry) (string, func(context.Context) error, error) {
				if e.Name != "needs-ready" {
					return "", func(context.Context) error { return nil }, nil
				}
				if tc.prepareErr != nil {
					return "", nil, tc.prepareErr
				}
				ready = true
				return "made ready", func(context.Context) error { ready = false; released++; return nil }, nil
			}
			fake.run = func(_ context.Context, e Entry, dir string, _ runEnv) error {
				ran = append(ran, e.Name)
				if e.Name == "needs-ready" && !ready {
					t.Errorf("%s ran on a machine not made ready", e.Name)
				}
				os.MkdirAll(dir, 0o755)
				ms := nights[e.Name]
				if e.Name == "needs-ready" {
					ms = nights["met"]
				}
				f := &benchdata.File{Format: benchdata.FormatVersion, Metrics: slices.Clone(ms)}
				if err := f.WriteFile(filepath.Join(dir, benchdata.FileName)); err != nil {
					return err
				}
				if e.Name == "needs-ready" {
					return tc.runErr
				}
				return nil
			}
			kinds[KindBench] = fake
			f, out, progress, err := nightWith(t, "fake.yaml", fmt.Sprintf(suite, tc.second), Options{Strict: tc.strict})
			for _, want := range tc.err {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want %q", err, want)
				}
			}
			if tc.err == nil && err != nil {
				t.Errorf("error %v, want none", err)
			}
			wantRan := []string{tc.second, "needs-ready"}
			if tc.prepareErr != nil {
				wantRan = wantRan[:1]
			}
			if !slices.Equal(ran, wantRan) || ready || released != len(wantRan)-1 {
				t.Errorf("ran %v, want %v; released %d times, still ready %v", ran, wantRan, released, ready)
			}
			if !strings.Contains(progress, "[1/3 needs-java] will be skipped: this machine cannot run it: flavor zookeeper: java not found") ||
				!strings.Contains(progress, "[3/3 needs-ready] the machine is made ready for it at its turn: the engine is no swarm manager") {
				t.Errorf("what the machine lacks is not said at the start:\n%s", progress)
			}
			if lines := strings.Split(strings.TrimSpace(progress), "\n"); lines[len(lines)-1] != tc.last {
				t.Errorf("last line %q, want %q\n%s", lines[len(lines)-1], tc.last, progress)
			}
			if f == nil || len(f.Fidelity) != 3 || f.Env.Suite != "fake" {
				t.Fatalf("night %+v", f)
			}
			var verdicts []string
			for _, fd := range f.Fidelity {
				verdicts = append(verdicts, fd.Verdict)
			}
			if !slices.Equal(verdicts, tc.verdicts) || !strings.Contains(f.Fidelity[0].Note, "this machine cannot run it: flavor zookeeper: java not found") {
				t.Errorf("verdicts %v, want %v; %+v", verdicts, tc.verdicts, f.Fidelity)
			}
			if _, ok := f.Metric(tc.second + "/fsync-on/poled.writes_per_s"); !ok {
				t.Errorf("metrics %+v", f.Metrics)
			}
			back, err := benchdata.ReadFile(filepath.Join(out, benchdata.FileName))
			if err != nil || len(back.Fidelity) != 3 {
				t.Errorf("bench.json: %v %+v", err, back)
			}
			if md, err := os.ReadFile(filepath.Join(out, FidelityFile)); err != nil || !strings.Contains(string(md), "| `needs-java` | loopback poled vs zookeeper | skipped |") {
				t.Errorf("fidelity.md: %v\n%s", err, md)
			}
		})
	}
}

// TestSimSpeed runs a sim-speed entry for real, at one loop and two workers: every
// metric has a sample per repetition, the events are the same at both counts (the
// entry would fail otherwise), and the night takes the entry's file under its name.
func TestSimSpeed(t *testing.T) {
	f, _, progress, err := night(t, "speed.yaml", `name: speed
experiments:
  - name: speed
    kind: sim-speed
    spec: two-dc
    set: ["workers=1,2", duration=3s, crash-at=1500ms, warmup=1s, repetitions=2]
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cpu_per_write_in_refs.w1", "cpu_per_write_in_refs.w2", "cpu_us_per_write.w1", "cpu_us_per_write.w2",
		"events_per_write", "host_ref_ms", "speedup.w2", "x_realtime.w1", "x_realtime.w2"}
	var got []string
	for _, m := range f.Metrics {
		got = append(got, strings.TrimPrefix(m.Name, "speed/"))
		if len(m.Samples) != 2 || slices.ContainsFunc(m.Samples, func(x float64) bool { return !(x > 0) }) {
			t.Errorf("%s: samples %v", m.Name, m.Samples)
		}
		if m.Deterministic != (m.Name == "speed/events_per_write") {
			t.Errorf("%s: deterministic %v", m.Name, m.Deterministic)
		}
		// What the host moves as much as the code is reported, never judged.
		hosts := strings.Contains(m.Name, "x_realtime") || strings.Contains(m.Name, "cpu_us_per_write") || strings.Contains(m.Name, "host_ref_ms")
		if (m.Better == benchdata.Neither) != hosts {
			t.Errorf("%s: better %q", m.Name, m.Better)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("metrics %v, want %v", got, want)
	}
	// Two seeds give two runs; each repetition's event count is its own.
	if i := slices.Index(got, "events_per_write"); i >= 0 && f.Metrics[i].Samples[0] == f.Metrics[i].Samples[1] {
		t.Errorf("both repetitions made %v events a write", f.Metrics[i].Samples)
	}
	if !strings.Contains(progress, "rep 2, 2 workers:") || !strings.Contains(progress, "rep 1, one loop:") || len(f.Incomplete) > 0 {
		t.Errorf("incomplete %v; progress:\n%s", f.Incomplete, progress)
	}
}

// night parses text as a suite and runs it into a new directory, out.
func night(t *testing.T, file, text string) (f *benchdata.File, out, progress string, err error) {
	t.Helper()
	return nightWith(t, file, text, Options{})
}

// nightWith is night with options (Out and Progress are its own).
func nightWith(t *testing.T, file, text string, o Options) (f *benchdata.File, out, progress string, err error) {
	t.Helper()
	s, err := Parse(file, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(t.TempDir(), "night")
	var b strings.Builder
	o.Out, o.Progress = out, &b
	f, err = Run(context.Background(), s, o)
	return f, out, b.String(), err
}
