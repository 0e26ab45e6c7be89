package spec

import (
	"flag"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/score"
)

func TestOverrides(t *testing.T) {
	base, err := Resolve("three-dc-dep1")
	if err != nil {
		t.Fatal(err)
	}
	s, err := base.With(
		Setting{"p", "0.4"}, Setting{"oracle", "latency"}, Setting{"rate", "2000"},
		Setting{"initial-leader", "p4"}, Setting{"duration", "200s"}, Setting{"crash-at", "150s"},
		Setting{"intra-dc-rtt", "0"},
	)
	if err != nil {
		t.Fatal(err)
	}
	r := s.RatesByDC()
	if r["D3"] != 800 || r["D1"] != 600 || r["D2"] != 600 {
		t.Errorf("rates %v, want D3 = 0.4 * 2000 and the rest split", r)
	}
	if s.Oracle.Name != score.Latency || s.InitialLeader != 4 || s.CrashAt != 150*time.Second ||
		s.Duration != 200*time.Second || s.IntraDCRTTMs != 0 {
		t.Errorf("spec after overrides: %+v", s)
	}
	// The original is untouched.
	if base.Rates.Skew.P != nil || base.Oracle.Name != score.History || base.InitialLeader != 5 {
		t.Errorf("With changed its receiver: %+v", base)
	}

	// --hot and --p replace explicit shares.
	full, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err = full.With(Setting{"p", "1"}, Setting{"hot", "D1"})
	if err != nil {
		t.Fatal(err)
	}
	if r := s.RatesByDC(); r["D1"] != 1000 || r["D2"] != 0 || full.Rates.Shares == nil {
		t.Errorf("rates %v", r)
	}
	// Switching away from combined drops its criteria; back to combined keeps them.
	if s, err = full.With(Setting{"oracle", "history"}); err != nil || s.Oracle.Combined != nil {
		t.Errorf("oracle history: %v %+v", err, s)
	}
}

func TestOverrideErrors(t *testing.T) {
	dep1, err := Resolve("three-dc-dep1")
	if err != nil {
		t.Fatal(err)
	}
	full, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		spec *Spec
		sets []Setting
		want string
	}{
		{dep1, []Setting{{"q", "1"}}, `unknown override "q" (known: p, hot, rate, oracle, initial-leader, crash-at, duration, intra-dc-rtt, outdate, rtt, preload-mb, init-limit, payload, arrival, warmup, settle, jitter, dist, window-kb, backend, flavor, placement, repetitions, seed)`},
		{dep1, []Setting{{"p", "half"}}, `override p=half: rates.skew.p: "half" is not a number`},
		{dep1, []Setting{{"p", "1.5"}}, "override p=1.5: rates.skew.p: p = 1.5 is outside [0, 1]"},
		{dep1, []Setting{{"hot", "D9"}}, `override hot=D9: rates.skew.hot: unknown data center "D9"`},
		{dep1, []Setting{{"rate", "-1"}}, "override rate=-1: rates.total: rate -1 req/s is negative"},
		{dep1, []Setting{{"oracle", "fastest"}}, `override oracle=fastest: oracle.name: unknown oracle "fastest" (known: history, rotating, request, consensus, latency, worst-case, preference, combined)`},
		{dep1, []Setting{{"oracle", "preference"}}, "override oracle=preference: oracle.name: oracle preference needs a non-empty preference list"},
		{dep1, []Setting{{"initial-leader", "9"}}, "override initial-leader=9: initial_leader: 9 is not a server (1..5)"},
		{dep1, []Setting{{"initial-leader", "x"}}, `override initial-leader=x: initial_leader: "x" is not a server id`},
		{dep1, []Setting{{"crash-at", "2m"}}, "override crash-at=2m: crash_at: 2m0s is not before the end of the run (duration 2m0s)"},
		{dep1, []Setting{{"duration", "30s"}}, "experiments/three-dc-dep1.yaml:17: crash_at: 1m0s is not before the end of the run (duration 30s)"},
		{dep1, []Setting{{"duration", "soon"}}, `override duration=soon: duration: "soon" is not a duration (like 60s or 1m30s)`},
		{dep1, []Setting{{"intra-dc-rtt", "-1"}}, "override intra-dc-rtt=-1: intra_dc_rtt_ms: -1 ms is negative"},
		// full.yaml uses shares: --p alone cannot know which DC is hot.
		{full, []Setting{{"p", "0.5"}}, "override p=0.5: rates.skew.hot: missing: the skew needs the hot data center (the one that gets p of the load)"},
	}
	for _, tc := range tests {
		if _, err := tc.spec.With(tc.sets...); err == nil || err.Error() != tc.want {
			t.Errorf("With(%v):\n got: %v\nwant: %s", tc.sets, err, tc.want)
		}
	}
}

func TestRunOverrides(t *testing.T) {
	base, err := Resolve("two-dc-recovery")
	if err != nil {
		t.Fatal(err)
	}
	sec := func(d int) time.Duration { return time.Duration(d) * time.Second }
	tests := []struct {
		sets []Setting
		edit func(s *Spec) // the expected change
	}{
		{[]Setting{{"repetitions", "1"}}, func(s *Spec) { s.Repetitions = 1 }},
		{[]Setting{{"seed", "7"}}, func(s *Spec) { s.Seed = 7 }},
		{[]Setting{{"backend", "docker"}}, func(s *Spec) { s.Backend = "docker" }},
		{[]Setting{{"preload-mb", "250"}}, func(s *Spec) { s.PreloadMB = 250 }},
		{[]Setting{{"payload", "100"}}, func(s *Spec) { s.Workload.PayloadBytes = 100 }},
		{[]Setting{{"arrival", "constant"}}, func(s *Spec) { s.Workload.Arrival = "constant" }},
		{[]Setting{{"warmup", "0s"}}, func(s *Spec) { s.Workload.Warmup = 0 }},
		{[]Setting{{"settle", "2s"}}, func(s *Spec) { s.Workload.Settle = 2 * time.Second }},
		{[]Setting{{"jitter", "0"}}, func(s *Spec) { s.Links.JitterPct = 0 }},
		{[]Setting{{"dist", "normal"}}, func(s *Spec) { s.Links.Dist = "normal" }},
		{[]Setting{{"window-kb", "64"}}, func(s *Spec) { s.Links.WindowBytes = 64 << 10 }},
		{[]Setting{{"crash-at", "none"}}, func(s *Spec) { s.CrashAt = 0 }},
		{[]Setting{{"outdate", "none"}}, func(s *Spec) { s.Outdate = nil }},
		{[]Setting{{"outdate", "p2:1s:59s,3:5s:6s"}}, func(s *Spec) {
			s.Outdate = []Outdate{{2, sec(1), sec(59)}, {3, sec(5), sec(6)}}
		}},
		// Checked together: the outdate fits the longer run set after it.
		{[]Setting{{"outdate", "1:10s:100s"}, {"duration", "120s"}}, func(s *Spec) {
			s.Outdate = []Outdate{{1, sec(10), sec(100)}}
			s.Duration = sec(120)
		}},
	}
	for _, tc := range tests {
		got, err := base.With(tc.sets...)
		if err != nil {
			t.Errorf("With(%v): %v", tc.sets, err)
			continue
		}
		want := base.Clone()
		tc.edit(want)
		got.pos, want.pos = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("With(%v):\n got: %+v\nwant: %+v", tc.sets, got, want)
		}
	}
	// The receiver keeps its list.
	if len(base.Outdate) != 1 || base.Outdate[0].Server != 1 {
		t.Errorf("With changed its receiver: %+v", base.Outdate)
	}
}

func TestRunOverrideErrors(t *testing.T) {
	base, err := Resolve("two-dc-recovery")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sets []Setting
		want string
	}{
		{[]Setting{{"repetitions", "0"}}, "override repetitions=0: repetitions: 0: at least 1 run is needed"},
		{[]Setting{{"repetitions", "many"}}, `override repetitions=many: repetitions: "many" is not an integer`},
		{[]Setting{{"seed", "-1"}}, `override seed=-1: seed: "-1" is not a non-negative integer`},
		{[]Setting{{"backend", "k8s"}}, `override backend=k8s: backend: unknown backend "k8s" (known: local, netns, docker, swarm, sim)`},
		{[]Setting{{"preload-mb", "-5"}}, "override preload-mb=-5: preload_mb: -5 MB is negative"},
		// What the flavor declares: its first election's leader.
		{[]Setting{{"flavor", "zookeeper"}, {"oracle", "history"}, {"outdate", "none"}, {"preload-mb", "0"}, {"initial-leader", "3"}},
			"override initial-leader=3: initial_leader: flavor zookeeper: ZooKeeper's first election picks the highest id among servers in sync, so the initial leader must be p5, not p3"},
		{[]Setting{{"preload-mb", "1.5"}}, `override preload-mb=1.5: preload_mb: "1.5" is not an integer`},
		{[]Setting{{"payload", "0"}}, "override payload=0: workload.payload_bytes: 0 must be at least 1"},
		{[]Setting{{"arrival", "bursty"}}, `override arrival=bursty: workload.arrival: unknown arrival "bursty" (known: poisson, constant)`},
		{[]Setting{{"warmup", "61s"}}, "override warmup=61s: workload.warmup: 1m1s is not before crash_at 1m0s: nothing would be measured before the crash"},
		{[]Setting{{"warmup", "x"}}, `override warmup=x: workload.warmup: "x" is not a duration (like 60s or 1m30s)`},
		{[]Setting{{"settle", "-1s"}}, "override settle=-1s: workload.settle: -1s is not positive"},
		{[]Setting{{"jitter", "200"}}, "override jitter=200: links.jitter_pct: 200% is outside [0, 100]"},
		{[]Setting{{"dist", "cauchy"}}, `override dist=cauchy: links.distribution: unknown distribution "cauchy" (known: pareto, normal, paretonormal, uniform)`},
		{[]Setting{{"window-kb", "0"}}, "override window-kb=0: links.window_kb: 0 kB is outside 1 .. 1048576 kB (TCP's largest window, 1 GiB)"},
		{[]Setting{{"crash-at", "0"}}, "override crash-at=0: crash_at: 0s would crash the initial leader as the run starts: write none for a run without the crash"},
		// The crash moved before the warmup ends; the default warmup has no line.
		{[]Setting{{"crash-at", "4s"}}, "override crash-at=4s: crash_at: 4s is not after the warmup (workload.warmup, default 5s): nothing would be measured before the crash"},
		{[]Setting{{"outdate", "1:10s"}}, `override outdate=1:10s: outdate: "1:10s" is not SERVER:KILL_AT:RESTART_AT (like 1:10s:58s)`},
		{[]Setting{{"outdate", "x:10s:58s"}}, `override outdate=x:10s:58s: outdate: "x" is not a server id`},
		{[]Setting{{"outdate", "1:10:58s"}}, `override outdate=1:10:58s: outdate: "10" is not a duration (like 60s or 1m30s)`},
		// Errors inside the replaced list point at the override, not at the file's old lines.
		{[]Setting{{"outdate", "1:10s:58s,5:10s:58s"}}, "override outdate=1:10s:58s,5:10s:58s: outdate[1].server: p5 is the initial leader: an outdated server is a follower that misses writes"},
		{[]Setting{{"outdate", "1:58s:10s"}}, "override outdate=1:58s:10s: outdate[0].restart_at: 10s is not after kill_at 58s"},
		{[]Setting{{"outdate", "1:10s:90s"}}, "override outdate=1:10s:90s: outdate[0].restart_at: 1m30s is outside the run [0, 1m30s)"},
		{[]Setting{{"outdate", "1:10s:50s,1:20s:30s"}}, "override outdate=1:10s:50s,1:20s:30s: outdate[1].kill_at: p1 is already dead at 20s (killed at 10s by outdate[0].kill_at)"},
		// A shorter run cuts the file's outdate, which is named by its line.
		{[]Setting{{"duration", "58s"}, {"crash-at", "none"}}, "experiments/two-dc-recovery.yaml:25: outdate[0].restart_at: 58s is outside the run [0, 58s)"},
	}
	for _, tc := range tests {
		if _, err := base.With(tc.sets...); err == nil || err.Error() != tc.want {
			t.Errorf("With(%v):\n got: %v\nwant: %s", tc.sets, err, tc.want)
		}
	}
}

func TestParseSetting(t *testing.T) {
	if s, err := ParseSetting("crash-at=1m"); err != nil || s != (Setting{"crash-at", "1m"}) {
		t.Errorf("ParseSetting: %v %v", s, err)
	}
	for _, bad := range []string{"p", "=1"} {
		if _, err := ParseSetting(bad); err == nil {
			t.Errorf("ParseSetting(%q) succeeded", bad)
		}
	}
}

// Every override can be registered as a flag (unique, non-empty names).
func TestOverrideFlags(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var names []string
	for _, o := range Overrides() {
		if o.Name == "" || o.Usage == "" || o.Field == "" {
			t.Errorf("incomplete override %+v", o)
		}
		fs.String(o.Name, "", o.Usage) // panics on a duplicate name
		names = append(names, o.Name)
	}
	if !slices.Contains(names, "p") || !slices.Contains(names, "oracle") {
		t.Errorf("overrides %v", names)
	}
}

func TestRTTOverride(t *testing.T) {
	s, err := Resolve("two-dc")
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.With(Setting{"rtt", "D1-D2=77.06"})
	if err != nil {
		t.Fatal(err)
	}
	topo, err := c.Topology()
	if err != nil {
		t.Fatal(err)
	}
	if got := topo.RTT(1, 5); got != 77.06 {
		t.Fatalf("RTT p1-p5 = %v after --rtt D1-D2=77.06", got)
	}
	if orig, _ := s.Topology(); orig.RTT(1, 5) != 20.75 {
		t.Fatal("the override changed the original spec")
	}
	c, err = c.With(Setting{"rtt", "D2-D1=0"})
	if err != nil || len(c.RTT) != 1 || c.RTT[0].Ms != 0 {
		t.Fatalf("a second override of the pair: %v, %+v", err, c.RTT)
	}
	for _, bad := range []string{"D1=3", "D1-D2", "D1-D2=x", "D1-D9=3"} {
		if _, err := s.With(Setting{"rtt", bad}); err == nil || !strings.Contains(err.Error(), "rtt") {
			t.Errorf("--rtt %s: %v", bad, err)
		}
	}
}
