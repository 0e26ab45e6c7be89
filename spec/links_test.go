package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/netem"
)

func planOf(t *testing.T, s *Spec) netem.Plan {
	t.Helper()
	topo, err := s.Topology()
	if err != nil {
		t.Fatal(err)
	}
	return s.Plan(topo, s.Seed)
}

// TestLinkRules resolves a default, a between rule, a from/to rule and a schedule onto
// the plan: one-way delays per direction, the jitter following the delay, rate in
// bytes/s, loss models, queue, and full-state schedule steps.
func TestLinkRules(t *testing.T) {
	s, err := Parse("x.yaml", runSpec("60s", `backend: netns
links:
  default:
    rate: 100mbit
    queue: {packets: 500}
    loss: 0.1
  pairs:
    - between: [D1, D2]
      rtt_ms: 40
      reorder: {pct: 5, corr: 50, gap: 3}
    - from: D2
      to: D1
      delay_ms: 30
      loss: {gemodel: {p: 1, r: 10, 1-h: 70, 1-k: 0.1}}
      duplicate: {pct: 2, corr: 10}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := planOf(t, s)
	ab, _ := p.Link(1, 3)
	ba, _ := p.Link(3, 1)
	in, _ := p.Link(1, 2)
	want := netem.Link{From: 1, To: 3, Delay: 20 * time.Millisecond, Jitter: 400 * time.Microsecond, Dist: "pareto",
		RateBytesPerSec: 100e6 / 8, QueuePackets: 500, LossPct: 0.1, ReorderPct: 5, ReorderCorrPct: 50, ReorderGap: 3}
	if ab != want {
		t.Errorf("D1->D2 %+v\nwant %+v", ab, want)
	}
	want = netem.Link{From: 3, To: 1, Delay: 30 * time.Millisecond, Jitter: 600 * time.Microsecond, Dist: "pareto",
		RateBytesPerSec: 100e6 / 8, QueuePackets: 500, LossGE: netem.GEModel{P: 1, R: 10, OneMinusH: 70, OneMinusK: 0.1},
		ReorderPct: 5, ReorderCorrPct: 50, ReorderGap: 3, DuplicatePct: 2, DuplicateCorrPct: 10}
	if ba != want {
		t.Errorf("D2->D1 %+v\nwant %+v", ba, want)
	}
	if in.Impaired() || in.Delay != 50*time.Microsecond {
		t.Errorf("intra-DC link %+v: rules are for inter-DC links", in)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestLinkScheduleAndTrace(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rtt.csv"), []byte("time_s,rtt_ms\n0,20\n10,80\n20.5,40\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "x.yaml")
	s, err := Parse(file, runSpec("60s", `backend: sim
links:
  pairs:
    - between: [D1, D2]
      trace: rtt.csv
    - from: D1
      to: D2
      schedule:
        - {at: 30s, delay_ms: 5, rate: 1gbit}
        - {at: 50s, loss: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := planOf(t, s)
	if got := p.Instants(); len(got) != 5 {
		t.Errorf("instants %v", got)
	}
	l, _ := p.LinkAt(3, 1, 15*time.Second)
	if l.Delay != 40*time.Millisecond {
		t.Errorf("D2->D1 at 15s: delay %v, want 40ms (RTT 80 from the trace)", l.Delay)
	}
	l, _ = p.LinkAt(3, 1, 25*time.Second)
	if l.Delay != 20*time.Millisecond {
		t.Errorf("D2->D1 at 25s: delay %v, want 20ms", l.Delay)
	}
	l, _ = p.LinkAt(1, 3, 55*time.Second)
	if l.Delay != 5*time.Millisecond || l.Jitter != 100*time.Microsecond || l.RateBytesPerSec != 125e6 || l.LossPct != 1 {
		t.Errorf("D1->D2 at 55s: %+v", l)
	}
	l, _ = p.LinkAt(1, 3, 0)
	if l.Delay != 10375*time.Microsecond {
		t.Errorf("D1->D2 at 0: delay %v, want tud-cern's 20.75/2 ms", l.Delay)
	}
}

// TestLinkErrors: every new field's errors, with file:line and the field.
func TestLinkErrors(t *testing.T) {
	for _, tc := range []struct{ extra, want string }{
		{"links:\n  default:\n    loss: 120\n", "x.yaml:11: links.default.loss: 120% is outside [0, 100]"},
		{"links:\n  default:\n    loss: {pct: 1, corr: -3}\n", "x.yaml:11: links.default.loss.corr: -3% is outside [0, 100]"},
		{"links:\n  default:\n    loss: {corr: 3}\n", "x.yaml:11: links.default.loss: corr without pct"},
		{"links:\n  default:\n    loss: {pct: 1, gemodel: {p: 1, r: 2, 1-h: 3, 1-k: 4}}\n", "x.yaml:11: links.default.loss: pct and gemodel: a link has one loss model"},
		{"links:\n  default:\n    loss: {gemodel: {p: 1, r: 2, 1-h: 300, 1-k: 4}}\n", "x.yaml:11: links.default.loss.gemodel.1-h: 300% is outside [0, 100]"},
		{"links:\n  default:\n    loss: {gemodel: {p: 1}}\n", "x.yaml:11: links.default.loss.gemodel.r: missing required field"},
		{"links:\n  default:\n    rate: 0mbit\n", `x.yaml:11: links.default.rate: rate "0mbit" is below one byte per second (leave rate out for no limit)`},
		{"links:\n  default:\n    rate: 10 furlongs\n", `x.yaml:11: links.default.rate: "10 furlongs" is not a rate (like 100mbit, 1gbit or 12500000bps)`},
		{"links:\n  default:\n    queue: {packets: 0}\n", `x.yaml:11: links.default.queue.packets: "0" is not a positive number of packets`},
		{"links:\n  default:\n    queue: {}\n", "x.yaml:11: links.default.queue: give one of packets or bytes"},
		{"links:\n  default:\n    duplicate: 101\n", "x.yaml:11: links.default.duplicate: 101% is outside [0, 100]"},
		{"links:\n  default:\n    reorder: {pct: 5, gap: 0}\n", "x.yaml:11: links.default.reorder.gap: gap 0: want 1 or more packets"},
		{"links:\n  pairs:\n    - {between: [D1, D9], rtt_ms: 5}\n", `x.yaml:11: links.pairs[0].between: unknown data center "D9"`},
		{"links:\n  pairs:\n    - {from: D1, to: D2, rtt_ms: 5}\n", "x.yaml:11: links.pairs[0].rtt_ms: rtt_ms sets both directions: use between, or delay_ms for the one direction from D1 to D2"},
		{"links:\n  pairs:\n    - {from: D1, rtt_ms: 5}\n", "x.yaml:11: links.pairs[0]: needs between: [A, B], or from: A and to: B"},
		{"backend: sim\nlinks:\n  pairs:\n    - between: [D1, D2]\n      schedule:\n        - {at: 20s, rtt_ms: 5}\n        - {at: 10s, rtt_ms: 9}\n",
			"x.yaml:15: links.pairs[0].schedule[1].at: 10s is not after the previous step (20s): a schedule is in time order"},
		{"backend: sim\nlinks:\n  pairs:\n    - between: [D1, D2]\n      schedule:\n        - {at: 200s, rtt_ms: 5}\n",
			"x.yaml:14: links.pairs[0].schedule[0].at: 3m20s is not before the end of the run (2m0s)"},
		{"backend: docker\nlinks:\n  pairs:\n    - between: [D1, D2]\n      schedule:\n        - {at: 20s, rtt_ms: 5}\n",
			"x.yaml:13: links.pairs[0].schedule: the docker backend does not change links during a run yet (local, netns, sim do)"},
		{"flavor: zookeeper\nlinks:\n  pairs:\n    - between: [D1, D2]\n      schedule:\n        - {at: 20s, rtt_ms: 5}\n",
			"x.yaml:13: links.pairs[0].schedule: flavor zookeeper does not change links during a run: its links are set once, when its servers start"},
		{"links:\n  default:\n    duplicate: 1\n", "x.yaml:11: links.default.duplicate: the local backend's links are user space, carrying TCP streams, which hide duplicates (use netns or docker for kernel netem)"},
		{"backend: sim\nlinks:\n  default:\n    reorder: 1\n", "x.yaml:12: links.default.reorder: the sim backend's links are user space, carrying TCP streams, which deliver in order (use netns or docker for kernel netem)"},
		{"backend: swarm\nlinks:\n  default:\n    loss: {pct: 1, corr: 25}\n", "x.yaml:12: links.default.loss: the swarm backend's links are user space: loss correlation needs kernel netem (use netns or docker)"},
		{"backend: netns\nlinks:\n  default:\n    duplicate: {corr: 3}\n", "x.yaml:12: links.default.duplicate.pct: missing required field"},
		{"links:\n  pairs:\n    - between: [D1, D2]\n      trace: nope.csv\n", "x.yaml:12: links.pairs[0].trace: open nope.csv: no such file or directory"},
	} {
		_, err := Parse("x.yaml", runSpec("60s", tc.extra))
		if err == nil {
			t.Errorf("%q parsed; want %s", tc.extra, tc.want)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%q:\n got: %v\nwant: %s", tc.extra, err, tc.want)
		}
	}
}

func TestTraceErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ csv, want string }{
		{"0,20\n5,30\n5,40\n", "t.csv:3: time 5 s is not after the previous row's (5s)"},
		{"0,20\n5,-1\n", "t.csv:2: RTT -1 ms is negative"},
		{"0,20\nfive,1\n", `t.csv:2: want time_s,rtt_ms numbers, got "five","1"`},
		{"time_s,rtt_ms\n", "t.csv: no rows"},
	} {
		f := filepath.Join(dir, "t.csv")
		if err := os.WriteFile(f, []byte(tc.csv), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := readTrace(filepath.Join(dir, "x.yaml"), "t.csv")
		if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("%q: %v, want ...%s", tc.csv, err, tc.want)
		}
	}
}

func TestParseRate(t *testing.T) {
	for v, want := range map[string]uint64{"100mbit": 100e6, "1gbit": 1e9, "1Gbit": 1e9, "12500000bps": 100e6, "2kibit": 2048, "5000": 5000} {
		if got, err := ParseRate(v); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"0", "-5mbit", "mbit", "1.5 parsecs", "4bit"} {
		if _, err := ParseRate(v); err == nil {
			t.Errorf("ParseRate(%q) succeeded", v)
		}
	}
}

// TestRegions: data centers with regions take their RTTs from the preset (the mean of
// its two directions); an rtt entry still wins; errors with file:line.
func TestRegions(t *testing.T) {
	spec := func(dcs, extra string) []byte {
		return []byte("name: t\ndatacenters:\n" + dcs + "rates: {total: 1000}\ninitial_leader: 5\nduration: 120s\ncrash_at: 60s\n" + extra)
	}
	three := "  - {name: EU, region: westeurope, servers: [1, 2]}\n  - {name: US, region: eastus, servers: [3, 4]}\n  - {name: JP, region: japaneast, servers: [5]}\n"
	s, err := Parse("x.yaml", spec(three, "rtt:\n  - {between: [US, JP], ms: 150}\n"))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := s.Topology()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a, b int
		want float64
	}{{1, 3, 84}, {1, 5, 233.5}, {3, 5, 150}} {
		if got := topo.RTT(c.a, c.b); got != c.want {
			t.Errorf("RTT(p%d, p%d) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	for _, tc := range []struct{ dcs, want string }{
		{"  - {name: EU, region: westeurope, servers: [1, 2]}\n  - {name: US, region: atlantis, servers: [3, 4, 5]}\n",
			`x.yaml:4: datacenters[1].region: unknown region "atlantis" (the preset, topology/regions/azure.csv, has: australiaeast, brazilsouth, canadacentral, centralindia, centralus, eastus, francecentral, japaneast, northeurope, uksouth, westeurope, westus2)`},
		{"  - {name: EU, region: westeurope, endpoint: cern, servers: [1, 2]}\n  - {name: US, region: eastus, servers: [3, 4, 5]}\n",
			"x.yaml:3: datacenters[0].region: a data center has an endpoint or a region, not both"},
		{"  - {name: EU, region: westeurope, servers: [1, 2]}\n  - {name: US, endpoint: cern, servers: [3, 4, 5]}\n",
			`x.yaml:4: datacenters[1]: no RTT between "EU" and "US": one has a region, the other not; add an rtt entry`},
	} {
		if _, err := Parse("x.yaml", spec(tc.dcs, "")); err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got: %v\nwant: %s", tc.dcs, err, tc.want)
		}
	}
}
