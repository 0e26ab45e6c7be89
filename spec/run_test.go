package spec

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/workload"
	"github.com/polebench/polebench/workload/arrival"
)

// runSpec is a two-DC spec (leader p5, 120 s) with crash_at on line 8 and extra from
// line 9 on.
func runSpec(crashAt, extra string) []byte {
	return []byte(`name: t
datacenters:
  - {name: D1, endpoint: tud, servers: [1, 2]}
  - {name: D2, endpoint: cern, servers: [3, 4, 5]}
rates: {total: 1000}
initial_leader: 5
duration: 120s
crash_at: ` + crashAt + "\n" + extra)
}

func TestRunDefaults(t *testing.T) {
	s, err := Parse("x.yaml", runSpec("60s", ""))
	if err != nil {
		t.Fatal(err)
	}
	want := Workload{PayloadBytes: 1024, Arrival: "poisson", SessionsPerServer: 4, Keys: 1000, Warmup: 5 * time.Second, Settle: 10 * time.Second}
	if s.Workload != want {
		t.Errorf("workload %+v, want %+v", s.Workload, want)
	}
	if l := (Links{JitterPct: 2, Dist: "pareto", WindowBytes: 4 << 20}); !reflect.DeepEqual(s.Links, l) {
		t.Errorf("links %+v, want %+v", s.Links, l)
	}
	if s.PreloadMB != 0 || s.Repetitions != 5 || s.Seed != 1 || s.Backend != "local" || s.Faults != nil || s.Outdate != nil {
		t.Errorf("run settings: %+v", s)
	}
	if got := fmt.Sprint(s.FaultSchedule()); got != "[crash p5 at 1m0s]" {
		t.Errorf("schedule %v, want only the crash", got)
	}
}

// TestRunDecode sets each new field alone and checks that it, and nothing else, changed.
func TestRunDecode(t *testing.T) {
	base, err := Parse("x.yaml", runSpec("60s", ""))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		crash, yaml string
		edit        func(s *Spec) // the expected change from the defaults
	}{
		{"none", "", func(s *Spec) { s.CrashAt = 0 }},
		{"1m", "", func(s *Spec) {}},
		{"60s", "workload: {payload_bytes: 4096}", func(s *Spec) { s.Workload.PayloadBytes = 4096 }},
		{"60s", "workload: {arrival: constant}", func(s *Spec) { s.Workload.Arrival = "constant" }},
		{"60s", "workload: {sessions_per_server: 1}", func(s *Spec) { s.Workload.SessionsPerServer = 1 }},
		{"60s", "workload: {keys: 7}", func(s *Spec) { s.Workload.Keys = 7 }},
		{"60s", "workload: {warmup: 0s}", func(s *Spec) { s.Workload.Warmup = 0 }},
		{"60s", "workload: {warmup: 59.5s}", func(s *Spec) { s.Workload.Warmup = 59500 * time.Millisecond }},
		{"60s", "workload: {settle: 3s}", func(s *Spec) { s.Workload.Settle = 3 * time.Second }},
		{"60s", "workload: {}", func(s *Spec) {}},
		{"60s", "preload_mb: 250", func(s *Spec) { s.PreloadMB = 250 }},
		{"60s", "preload_mb: 0", func(s *Spec) {}},
		{"60s", "init_limit: 90s", func(s *Spec) { s.InitLimit = 90 * time.Second }},
		{"60s", "repetitions: 1", func(s *Spec) { s.Repetitions = 1 }},
		{"60s", "seed: 0", func(s *Spec) { s.Seed = 0 }},
		{"60s", "seed: 0xffffffffffffffff", func(s *Spec) { s.Seed = 1<<64 - 1 }},
		{"60s", "backend: netns", func(s *Spec) { s.Backend = "netns" }},
		{"60s", "backend: docker", func(s *Spec) { s.Backend = "docker" }},
		{"60s", "links: {jitter_pct: 0}", func(s *Spec) { s.Links.JitterPct = 0 }},
		{"60s", "links: {jitter_pct: 100}", func(s *Spec) { s.Links.JitterPct = 100 }},
		{"60s", "links: {distribution: paretonormal}", func(s *Spec) { s.Links.Dist = "paretonormal" }},
		{"60s", "links: {distribution: uniform}", func(s *Spec) { s.Links.Dist = "uniform" }},
		{"60s", "links: {window_kb: 64}", func(s *Spec) { s.Links.WindowBytes = 64 << 10 }},
		{"60s", "links: {window_kb: 1048576}", func(s *Spec) { s.Links.WindowBytes = 1 << 30 }},
		{"60s", "outdate: [{server: 1, kill_at: 10s, restart_at: 58s}]",
			func(s *Spec) {
				s.Outdate = []Outdate{{Server: 1, KillAt: 10 * time.Second, RestartAt: 58 * time.Second}}
			}},
		{"60s", "outdate: [{server: 1, kill_at: 0s, restart_at: 60s}, {server: 4, kill_at: 1m, restart_at: 119s}]",
			func(s *Spec) {
				s.Outdate = []Outdate{{1, 0, 60 * time.Second}, {4, 60 * time.Second, 119 * time.Second}}
			}},
		{"60s", "outdate: []", func(s *Spec) {}},
		{"60s", "faults:\n  - {at: 0s, kill: 3}\n  - {at: 1m59s, restart: 3}",
			func(s *Spec) { s.Faults = []Fault{{At: 0, Kill: 3}, {At: 119 * time.Second, Restart: 3}} }},
		// The crashed leader may come back.
		{"60s", "faults: [{at: 90s, restart: 5}]", func(s *Spec) { s.Faults = []Fault{{At: 90 * time.Second, Restart: 5}} }},
	}
	for _, tc := range tests {
		t.Run(tc.crash+" "+tc.yaml, func(t *testing.T) {
			got, err := Parse("x.yaml", runSpec(tc.crash, tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			want := base.Clone()
			tc.edit(want)
			got.pos, want.pos = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct{ crash, yaml, want string }{
		// crash_at
		{"0s", "", "x.yaml:8: crash_at: 0s would crash the initial leader as the run starts: write none for a run without the crash"},
		{"soon", "", `x.yaml:8: crash_at: "soon" is neither a duration (like 60s) nor none`},
		{"-1s", "", "x.yaml:8: crash_at: -1s is negative"},
		// workload
		{"60s", "workload:\n  payload_bytes: 0", "x.yaml:10: workload.payload_bytes: 0 must be at least 1"},
		{"60s", "workload:\n  payload_bytes: 1kB", `x.yaml:10: workload.payload_bytes: "1kB" is not an integer`},
		{"60s", "workload:\n  sessions_per_server: -1", "x.yaml:10: workload.sessions_per_server: -1 must be at least 1"},
		{"60s", "workload:\n  keys: 0", "x.yaml:10: workload.keys: 0 must be at least 1"},
		{"60s", "workload:\n  arrival: bursty", `x.yaml:10: workload.arrival: unknown arrival "bursty" (known: poisson, constant)`},
		{"60s", "workload:\n  warmup: -1s", "x.yaml:10: workload.warmup: -1s is negative"},
		{"60s", "workload:\n  warmup: 60s", "x.yaml:10: workload.warmup: 1m0s is not before crash_at 1m0s: nothing would be measured before the crash"},
		{"60s", "workload:\n  settle: 0s", "x.yaml:10: workload.settle: 0s is not positive"},
		{"60s", "workload:\n  keyz: 1", "x.yaml:10: workload.keyz: unknown field (known: arrival, keys, payload_bytes, sessions_per_server, settle, warmup)"},
		{"60s", "workload: 5", `x.yaml:9: workload: expected a mapping, got "5"`},
		// A default warmup has no line: the other end is named.
		{"5s", "", "x.yaml:8: crash_at: 5s is not after the warmup (workload.warmup, default 5s): nothing would be measured before the crash"},
		{"none", "workload: {warmup: 2m}", "x.yaml:9: workload.warmup: 2m0s is not before duration 2m0s: nothing would be measured before the end of the run"},
		// preload_mb, repetitions, seed, backend
		{"60s", "preload_mb: -1", "x.yaml:9: preload_mb: -1 MB is negative"},
		{"60s", "init_limit: -5s", "x.yaml:9: init_limit: -5s is negative (leave it out for the default, sized from the state and the links)"},
		{"60s", "init_limit: soon", `x.yaml:9: init_limit: "soon" is not a duration (like 60s or 1m30s)`},
		{"60s", "repetitions: 0", "x.yaml:9: repetitions: 0: at least 1 run is needed"},
		{"60s", "seed: -1", `x.yaml:9: seed: "-1" is not a non-negative integer`},
		{"60s", "backend: k8s", `x.yaml:9: backend: unknown backend "k8s" (known: local, netns, docker, swarm, sim)`},
		// flavor: what ZooKeeper can run (backend.Runs, which cluster.New asks too)
		{"60s", "flavor: raft", `x.yaml:9: flavor: unknown flavor "raft" (known: poled, etcd, zookeeper)`},
		{"60s", "flavor: zookeeper\nbackend: docker", `x.yaml:10: backend: flavor zookeeper runs on the local and netns backends, not "docker"`},
		{"60s", "flavor: zookeeper\nbackend: swarm", `x.yaml:10: backend: flavor zookeeper runs on the local and netns backends, not "swarm"`},
		{"60s", "flavor: zookeeper\nbackend: sim", `x.yaml:10: backend: flavor zookeeper runs on the local and netns backends, not "sim"`},
		{"60s", "flavor: zookeeper\noracle: rotating", `x.yaml:10: oracle: flavor zookeeper: only the history oracle exists (ZooKeeper's own election), not "rotating"`},
		{"60s", "flavor: zookeeper\npreload_mb: 10", "x.yaml:10: preload_mb: flavor zookeeper: preloading state is a poled feature; ZooKeeper starts empty"},
		{"60s", "flavor: zookeeper\noutdate:\n  - {server: 1, kill_at: 10s, restart_at: 50s}", "x.yaml:10: outdate: flavor zookeeper: an outdated server needs its broadcast channel cut by the replica itself, which ZooKeeper cannot do"},
		{"60s", "flavor: zookeeper\nfaults:\n  - {at: 1s, kill: 2}\n  - {at: 2s, torn_tail: 3}", "x.yaml:12: faults[1]: flavor zookeeper: only kill, restart, pause, resume, partition, isolate, isolate-leader, one-way and heal faults (disk faults are poled's, which ZooKeeper cannot do)"},
		// faults a backend does not play, as it declares (backend.Carries)
		{"60s", "backend: swarm\nfaults:\n  - {at: 1s, pause: 2}\n  - {at: 2s, resume: 2}", "x.yaml:11: faults[0].pause: the swarm backend does not play pause faults: its servers are neither paused by the backend nor processes of this host"},
		{"60s", "backend: docker\nfaults:\n  - {at: 1s, torn_tail: 2}", "x.yaml:11: faults[0].torn_tail: the docker backend does not play torn-tail faults: its servers' poled logs are not on this host"},
		// links
		{"60s", "links:\n  jitter_pct: 101", "x.yaml:10: links.jitter_pct: 101% is outside [0, 100]"},
		{"60s", "links:\n  jitter_pct: -0.5", "x.yaml:10: links.jitter_pct: -0.5% is outside [0, 100]"},
		{"60s", "links:\n  distribution: cauchy", `x.yaml:10: links.distribution: unknown distribution "cauchy" (known: pareto, normal, paretonormal, uniform)`},
		{"60s", "links:\n  window_kb: 0", "x.yaml:10: links.window_kb: 0 kB is outside 1 .. 1048576 kB (TCP's largest window, 1 GiB)"},
		{"60s", "links:\n  window_kb: 1048577", "x.yaml:10: links.window_kb: 1048577 kB is outside 1 .. 1048576 kB (TCP's largest window, 1 GiB)"},
		{"60s", "links:\n  window: 64", "x.yaml:10: links.window: unknown field (known: default, distribution, jitter_pct, pairs, window_kb)"},
		// faults
		{"60s", "faults:\n  - {at: 2m, kill: 3}", "x.yaml:10: faults[0].at: 2m0s is outside the run [0, 2m0s)"},
		{"60s", "faults:\n  - {at: -1s, kill: 3}", "x.yaml:10: faults[0].at: -1s is outside the run [0, 2m0s)"},
		{"60s", "faults:\n  - {at: 1s, kill: 3}\n  - {at: 2s, kill: 1, restart: 1}", "x.yaml:11: faults[1]: needs exactly one of kill, restart (a server id, or controller), pause, resume, lose_unsynced, torn_tail (a server id), partition (groups of ids, or a shape: halves, one, majority, ring, bridge), isolate (a server id, or leader), isolate_dc (a data center), one_way ([[from ids], [to ids]]), slow_disk ({server, delay}), heal: true"},
		{"60s", "faults:\n  - at: 1s", "x.yaml:10: faults[0]: needs exactly one of kill, restart (a server id, or controller), pause, resume, lose_unsynced, torn_tail (a server id), partition (groups of ids, or a shape: halves, one, majority, ring, bridge), isolate (a server id, or leader), isolate_dc (a data center), one_way ([[from ids], [to ids]]), slow_disk ({server, delay}), heal: true"},
		{"60s", "faults:\n  - {kill: 1}", "x.yaml:10: faults[0].at: missing required field"},
		{"60s", "faults:\n  - {at: 1s, kill: 2}\n  - {at: 2s, restart: 2}\n  - {at: 3s,\n     kill: 9}", "x.yaml:13: faults[2].kill: server 9 is not one of p1..p5"},
		{"60s", "faults:\n  - {at: 1s, restart: 6}", "x.yaml:10: faults[0].restart: server 6 is not one of p1..p5"},
		{"60s", "faults:\n  - {at: 1s, kill: 0}", "x.yaml:10: faults[0].kill: 0 is not a server id (ids are 1..N)"},
		{"60s", "faults:\n  - {at: 1s, partition: [[1, 2]]}", "x.yaml:10: faults[0].partition: a partition needs at least two groups, got 1"},
		{"60s", "faults:\n  - {at: 1s, partition: [[1, 2], []]}", "x.yaml:10: faults[0].partition[1]: an empty group"},
		{"60s", "faults:\n  - {at: 1s, partition: [[1, 2], [2, 3]]}", "x.yaml:10: faults[0].partition[1][0]: p2 is already in group 0"},
		{"60s", "faults:\n  - {at: 1s, partition: [[1], [7]]}", "x.yaml:10: faults[0].partition[1][0]: server 7 is not one of p1..p5"},
		{"60s", "faults:\n  - {at: 1s, partition: [1, 2]}", "x.yaml:10: faults[0].partition[0]: expected a list, got \"1\""},
		{"60s", "faults:\n  - {at: 1s, heal: yes}", `x.yaml:10: faults[0].heal: "yes" is not true or false`},
		{"60s", "faults:\n  - {at: 1s, isolate: 2, heal: true}", "x.yaml:10: faults[0]: needs exactly one of kill, restart (a server id, or controller), pause, resume, lose_unsynced, torn_tail (a server id), partition (groups of ids, or a shape: halves, one, majority, ring, bridge), isolate (a server id, or leader), isolate_dc (a data center), one_way ([[from ids], [to ids]]), slow_disk ({server, delay}), heal: true"},
		{"60s", "faults:\n  - {at: 1s, kill: p1}", `x.yaml:10: faults[0].kill: "p1" is not an integer`},
		{"60s", "faults: {at: 1s}", "x.yaml:9: faults: expected a list, got a mapping"},
		// the faults after kill and restart: partition shapes, isolating a server or a
		// data center, one-way cuts, pauses, lost unsynced writes, torn tails, slow disks
		{"60s", "faults:\n  - {at: 1s, partition: star}", `x.yaml:10: faults[0].partition: unknown shape "star" (known: halves, one, majority, ring, bridge; or groups of ids)`},
		{"60s", "faults:\n  - {at: 1s, isolate: boss}", `x.yaml:10: faults[0].isolate: "boss" is not an integer`},
		{"60s", "faults:\n  - {at: 1s, isolate_dc: D9}", `x.yaml:10: faults[0].isolate_dc: unknown data center "D9"`},
		{"60s", "faults:\n  - {at: 1s, one_way: [[1]]}", "x.yaml:10: faults[0].one_way: want [[from ids], [to ids]], got 1 groups"},
		{"60s", "faults:\n  - {at: 1s, one_way: [[1], [1, 2]]}", "x.yaml:10: faults[0].one_way[1][0]: p1 is already in group 0"},
		{"60s", "faults:\n  - {at: 1s, pause: 6}", "x.yaml:10: faults[0].pause: server 6 is not one of p1..p5"},
		{"60s", "faults:\n  - {at: 1s, torn_tail: 0}", "x.yaml:10: faults[0].torn_tail: 0 is not a server id (ids are 1..N)"},
		{"60s", "faults:\n  - {at: 1s, slow_disk: {server: 2}}", "x.yaml:10: faults[0].slow_disk.delay: missing required field"},
		{"60s", "faults:\n  - {at: 1s, slow_disk: {server: 2, delay: -1ms}}", "x.yaml:10: faults[0].slow_disk.delay: -1ms is outside [0, 10s] (0 restores the disk)"},
		{"60s", "faults:\n  - {at: 1s, resume: 2}", "x.yaml:10: faults[0].resume: p2 is not paused at 1s: only a paused server can resume"},
		{"60s", "faults:\n  - {at: 1s, pause: 2}\n  - {at: 2s, pause: 2}", "x.yaml:11: faults[1].pause: p2 is paused already at 2s (by faults[0].pause at 1s)"},
		{"60s", "faults:\n  - {at: 1s, lose_unsynced: 2}\n  - {at: 2s, pause: 2}", "x.yaml:11: faults[1].pause: p2 is dead at 2s (killed at 1s by faults[0].lose_unsynced): only a running server can pause"},
		{"60s", "faults:\n  - {at: 1s, torn_tail: 2}\n  - {at: 2s, kill: 2}", "x.yaml:11: faults[1].kill: p2 is already dead at 2s (killed at 1s by faults[0].torn_tail)"},
		// the schedule, played in time order (the list order does not matter)
		{"60s", "faults:\n  - {at: 20s, kill: 3}\n  - {at: 10s, kill: 3}", "x.yaml:10: faults[0].kill: p3 is already dead at 20s (killed at 10s by faults[1].kill)"},
		{"60s", "faults:\n  - {at: 10s, restart: 3}", "x.yaml:10: faults[0].restart: p3 is not dead at 10s: only a killed server can restart"},
		{"60s", "faults:\n  - {at: 10s, kill: 3}\n  - {at: 20s, restart: 3}\n  - {at: 30s, restart: 3}", "x.yaml:12: faults[2].restart: p3 is not dead at 30s: only a killed server can restart"},
		{"60s", "faults:\n  - {at: 30s, kill: 5}", "x.yaml:8: crash_at: p5 is already dead at 1m0s (killed at 30s by faults[0].kill)"},
		{"60s", "faults:\n  - {at: 70s, kill: 5}", "x.yaml:10: faults[0].kill: p5 is already dead at 1m10s (killed at 1m0s by crash_at)"},
		// outdate
		{"60s", "outdate:\n  - {server: 5, kill_at: 10s, restart_at: 58s}", "x.yaml:10: outdate[0].server: p5 is the initial leader: an outdated server is a follower that misses writes"},
		{"60s", "outdate:\n  - {server: 0, kill_at: 10s, restart_at: 58s}", "x.yaml:10: outdate[0].server: server 0 is not one of p1..p5"},
		{"60s", "outdate:\n  - server: 1\n    kill_at: 10s\n    restart_at: 10s", "x.yaml:12: outdate[0].restart_at: 10s is not after kill_at 10s"},
		{"60s", "outdate:\n  - server: 1\n    kill_at: -10s\n    restart_at: 10s", "x.yaml:11: outdate[0].kill_at: -10s is outside the run [0, 2m0s)"},
		{"60s", "outdate:\n  - server: 1\n    kill_at: 10s\n    restart_at: 120s", "x.yaml:12: outdate[0].restart_at: 2m0s is outside the run [0, 2m0s)"},
		{"60s", "outdate:\n  - {server: 1, kill_at: 10s}", "x.yaml:10: outdate[0].restart_at: missing required field"},
		{"60s", "outdate:\n  - {server: 1, kill_at: 10s, restart_at: 58s, at: 1s}", "x.yaml:10: outdate[0].at: unknown field (known: kill_at, restart_at, server)"},
		{"60s", "outdate:\n  - {server: 1, kill_at: 10s, restart_at: 58s}\n  - {server: 1, kill_at: 20s, restart_at: 30s}", "x.yaml:11: outdate[1].kill_at: p1 is already dead at 20s (killed at 10s by outdate[0].kill_at)"},
		{"60s", "outdate:\n  - {server: 1, kill_at: 10s, restart_at: 58s}\nfaults:\n  - {at: 20s, restart: 1}", "x.yaml:10: outdate[0].restart_at: p1 is not dead at 58s: only a killed server can restart"},
	}
	for _, tc := range tests {
		_, err := Parse("x.yaml", runSpec(tc.crash, tc.yaml))
		if err == nil || err.Error() != tc.want {
			t.Errorf("crash_at %s, %q:\n got: %v\nwant: %s", tc.crash, tc.yaml, err, tc.want)
		}
	}
}

func TestFaultSchedule(t *testing.T) {
	s := func(d int) time.Duration { return time.Duration(d) * time.Second }
	tests := []struct {
		name, crash, yaml string
		want              string
	}{
		{"no crash, no faults", "none", "", "[]"},
		{"the paper's recovery run", "60s", "outdate: [{server: 1, kill_at: 10s, restart_at: 58s}]",
			"[kill p1 at 10s outdate p1 at 58s restart p1 at 58s crash p5 at 1m0s rejoin p1 at 1m0s]"},
		{"faults sorted by time", "none", "faults:\n  - {at: 30s, restart: 2}\n  - {at: 5s, kill: 2}\n  - {at: 20s, kill: 1}",
			"[kill p2 at 5s kill p1 at 20s restart p2 at 30s]"},
		{"partitions", "none", "faults:\n  - {at: 5s, partition: [[1, 2], [3, 4, 5]]}\n  - {at: 9s, heal: true}\n  - {at: 9s, isolate: 3}",
			"[partition [[1 3] [1 4] [1 5] [2 3] [2 4] [2 5]] at 5s isolate p3 at 9s heal at 9s]"},
		// At one instant restarts go first, so an outdated server restarted at crash_at
		// is live for the election; kills keep the spec's order: crash, outdate, faults.
		{"ties", "60s", "faults:\n  - {at: 60s, kill: 4}\n  - {at: 10s, kill: 2}\n  - {at: 60s, restart: 2}\noutdate:\n  - {server: 3, kill_at: 60s, restart_at: 70s}\n  - {server: 1, kill_at: 10s, restart_at: 60s}",
			"[kill p1 at 10s kill p2 at 10s outdate p1 at 1m0s restart p1 at 1m0s restart p2 at 1m0s crash p5 at 1m0s kill p3 at 1m0s kill p4 at 1m0s rejoin p1 at 1m0s outdate p3 at 1m10s restart p3 at 1m10s rejoin p3 at 1m10s]"},
	}
	for _, tc := range tests {
		sp, err := Parse("x.yaml", runSpec(tc.crash, tc.yaml))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := fmt.Sprint(sp.FaultSchedule()); got != tc.want {
			t.Errorf("%s:\n got: %v\nwant: %v", tc.name, got, tc.want)
		}
	}
	f := []Fault{{At: s(60), Kill: 5}, {At: s(58), Restart: 1}}
	if got := fmt.Sprint(f); got != "[kill p5 at 1m0s restart p1 at 58s]" {
		t.Errorf("Fault.String: %s", got)
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct{ crash, yaml, want string }{
		{"60s", "", ""},
		{"60s", "outdate: [{server: 1, kill_at: 10s, restart_at: 60s}]", ""},
		{"60s", "outdate:\n  - {server: 1, kill_at: 10s, restart_at: 61s}",
			"x.yaml:10: outdate[0].restart_at: p1 restarts at 1m1s, after the crash at 1m0s: it is not outdated at the election (the paper restarts it just before)"},
		{"none", "outdate: [{server: 1, kill_at: 10s, restart_at: 100s}]", ""},
		// Two of five dead is still a quorum; the third kill, the crash, is not.
		{"60s", "faults:\n  - {at: 1s, kill: 1}\n  - {at: 2s, kill: 2}\n  - {at: 90s, restart: 2}",
			"x.yaml:8: crash_at: at 1m0s only 2 of 5 servers are live, fewer than a quorum (3): writes stall until a restart"},
	}
	for _, tc := range tests {
		s, err := Parse("x.yaml", runSpec(tc.crash, tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(s.Warnings(), "\n"); got != tc.want {
			t.Errorf("%q:\n got: %s\nwant: %s", tc.yaml, got, tc.want)
		}
	}
}

// The names the spec accepts are the ones the packages that use them accept.
func TestRunNamesMatch(t *testing.T) {
	for _, d := range netem.Dists {
		if _, err := netem.Table(d); err != nil {
			t.Errorf("netem.Table(%s): %v", d, err)
		}
	}
	for _, a := range arrival.Kinds() {
		if _, err := workload.NewSchedule(a, 10, 1); err != nil {
			t.Errorf("workload refuses arrival %s: %v", a, err)
		}
	}
}

// Every fault kind after kill and restart in YAML (a partition shape, the leader or a
// data center isolated, a one-way cut, a pause, lost unsynced writes, a torn tail, a
// slow disk), and the nemesis schedule it makes.
func TestFaultKinds(t *testing.T) {
	s, err := Parse("x.yaml", runSpec("none", `faults:
  - {at: 1s, partition: ring}
  - {at: 2s, heal: true}
  - {at: 3s, isolate: leader}
  - {at: 4s, isolate_dc: D1}
  - {at: 5s, one_way: [[5], [1, 2]]}
  - {at: 6s, heal: true}
  - {at: 7s, pause: 3}
  - {at: 8s, resume: 3}
  - {at: 9s, lose_unsynced: 2}
  - {at: 10s, restart: 2}
  - {at: 11s, torn_tail: 2}
  - {at: 12s, restart: 2}
  - {at: 13s, slow_disk: {server: 1, delay: 20ms}}
  - {at: 14s, slow_disk: {server: 1, delay: 0s}}
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range s.FaultSchedule() {
		got = append(got, fmt.Sprintf("%s p%d %v %s %v", f.Kind, f.Server, f.Pairs, f.Shape, f.Delay))
	}
	want := []string{
		"partition p0 [[1 3] [1 5] [2 3] [2 4] [4 5]] ring 0s",
		"heal p0 []  0s",
		"isolate-leader p0 []  0s",
		"partition p0 [[1 3] [1 4] [1 5] [2 3] [2 4] [2 5]] dc:D1 0s",
		"one-way p0 [[5 1] [5 2]]  0s",
		"heal p0 []  0s",
		"pause p3 []  0s",
		"resume p3 []  0s",
		"lose-unsynced p2 []  0s",
		"restart p2 []  0s",
		"torn-tail p2 []  0s",
		"restart p2 []  0s",
		"slow-disk p1 []  20ms",
		"slow-disk p1 []  0s",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("schedule\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
