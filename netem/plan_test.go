package netem

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/polebench/polebench/topology"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// twoDC is the paper's two-data-center layout (Fig. 4a): D1 = {p1, p2} at tud,
// D2 = {p3, p4, p5} at cern, 20.75 ms apart.
func twoDC(t *testing.T) *topology.Topology {
	t.Helper()
	topo, err := topology.New(topology.Config{
		DCs: []topology.DC{
			{Name: "D1", Endpoint: "tud", Servers: []int{1, 2}},
			{Name: "D2", Endpoint: "cern", Servers: []int{3, 4, 5}},
		},
		IntraRTT: topology.DefaultIntraRTT,
	})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestNewPlan(t *testing.T) {
	p := NewPlan(twoDC(t), DefaultOptions(5))
	if len(p.Links) != 5*4 {
		t.Fatalf("%d links; want every ordered pair of 5 servers (20)", len(p.Links))
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	far, ok := p.Link(2, 4)
	want := Link{From: 2, To: 4, Delay: 10375 * time.Microsecond, Jitter: 207500 * time.Nanosecond, Dist: DistPareto}
	if !ok || far != want {
		t.Errorf("p2->p4 = %+v; want %+v (RTT/2, 2 %% jitter, Pareto)", far, want)
	}
	near, _ := p.Link(4, 5)
	if near.Delay != 50*time.Microsecond || near.Jitter != time.Microsecond {
		t.Errorf("p4->p5 (same DC) = %+v; want the intra-DC RTT/2 = 50µs, jitter 1µs", near)
	}
	if p.RTT(1, 3) != 20750*time.Microsecond {
		t.Errorf("plan RTT p1-p3 = %v", p.RTT(1, 3))
	}
	if p.Seed != 5 || p.WindowBytes != DefaultWindowBytes {
		t.Errorf("seed %d window %d", p.Seed, p.WindowBytes)
	}
	if _, ok := p.Link(3, 3); ok {
		t.Error("a link from a server to itself")
	}

	o := NewPlan(twoDC(t), Options{JitterPct: 0, Dist: DistNormal, RateBytesPerSec: 1e6, LossPct: 0.5, WindowBytes: 1 << 20})
	l, _ := o.Link(1, 5)
	if l.Jitter != 0 || l.Dist != DistNormal || l.RateBytesPerSec != 1e6 || l.LossPct != 0.5 || o.WindowBytes != 1<<20 {
		t.Errorf("options not applied: %+v window %d", l, o.WindowBytes)
	}
}

// TestPlanGolden pins the JSON a run directory gets (and poled reads).
func TestPlanGolden(t *testing.T) {
	p := NewPlan(twoDC(t), DefaultOptions(1))
	path := filepath.Join("testdata", "two-dc.plan.json")
	if *update {
		if err := WritePlan(path, p); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(t.TempDir(), "plan.json")
	if err := WritePlan(tmp, p); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(tmp)
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if string(got) != string(want) {
		t.Errorf("plan JSON differs from %s (run with -update if intended)", path)
	}
	back, err := ReadPlan(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Links) != len(p.Links) || back.Seed != p.Seed || back.WindowBytes != p.WindowBytes {
		t.Fatalf("round trip: %+v", back)
	}
	for i := range p.Links {
		if back.Links[i] != p.Links[i] {
			t.Errorf("link %d: %+v, wrote %+v", i, back.Links[i], p.Links[i])
		}
	}
}

func TestParsePlanErrors(t *testing.T) {
	good := `{"links": [
  {"from": 1, "to": 2, "delay_ns": 1000, "jitter_ns": 20, "dist": "pareto"},
  {"from": 2, "to": 1, "delay_ns": 1000, "jitter_ns": 20, "dist": "pareto"}
], "seed": 1, "window_bytes": 65536}`
	if _, err := ParsePlan("good.json", []byte(good)); err != nil {
		t.Fatalf("good plan: %v", err)
	}
	for _, c := range []struct{ name, data, want string }{
		{"syntax", "{\n\"links\": [\n,]}", "syntax.json:3"},
		{"unknown field", `{"links": [], "jitter": 2}`, `unknown field "jitter"`},
		{"bad dist", strings.Replace(good, `"dist": "pareto"}`, `"dist": "gamma"}`, 1), `links[0] (p1->p2): unknown distribution "gamma"`},
		{"missing pair", `{"links": [{"from": 1, "to": 2, "delay_ns": 1, "dist": "normal"}]}`, "no link p2->p1"},
		{"duplicate", strings.Replace(good, `"from": 2, "to": 1`, `"from": 1, "to": 2`, 1), "links[1]: second link p1->p2"},
		{"self", strings.Replace(good, `"from": 2, "to": 1`, `"from": 1, "to": 1`, 1), "link from p1 to itself"},
		{"negative delay", strings.Replace(good, `"delay_ns": 1000`, `"delay_ns": -5`, 1), "negative delay"},
		{"loss", strings.Replace(good, `"dist": "pareto"}`, `"dist": "pareto", "loss_pct": 101}`, 1), "loss 101% outside [0, 100]"},
		{"huge jitter", strings.Replace(good, `"jitter_ns": 20`, `"jitter_ns": 3000000000`, 1), "above the kernel's limit"},
		{"window", strings.Replace(good, `65536`, `-1`, 1), "window_bytes -1 is negative"},
	} {
		_, err := ParsePlan(c.name+".json", []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), c.name+".json") {
			t.Errorf("%s: error %v; want one naming the file and containing %q", c.name, err, c.want)
		}
	}
	if _, err := ReadPlan(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("ReadPlan of a missing file")
	}
}

func TestPlanCut(t *testing.T) {
	p := NewPlan(twoDC(t), DefaultOptions(5))
	c := p.Cut([][2]int{{1, 3}, {2, 3}})
	for _, l := range c.Links {
		cut := (l.From <= 2 && l.To == 3) || (l.To <= 2 && l.From == 3)
		orig, _ := p.Link(l.From, l.To)
		if want := map[bool]float64{true: 100, false: 0}[cut]; l.LossPct != want {
			t.Errorf("p%d->p%d loss %v%%; want %v", l.From, l.To, l.LossPct, want)
		}
		if orig.LossPct != 0 || orig.Delay != l.Delay {
			t.Errorf("p%d->p%d: Cut changed the original plan or the delay", l.From, l.To)
		}
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// One way: only p1->p3 drops.
	for _, l := range p.CutOneWay([][2]int{{1, 3}}).Links {
		if want := map[bool]float64{true: 100, false: 0}[l.From == 1 && l.To == 3]; l.LossPct != want {
			t.Errorf("one way: p%d->p%d loss %v%%; want %v", l.From, l.To, l.LossPct, want)
		}
	}
	// p1's tree gets the cut peer in a class of its own, dropping everything.
	addrs := map[int]netip.Addr{}
	for id := 1; id <= 5; id++ {
		addrs[id] = netip.AddrFrom4([4]byte{10, 0, 0, byte(id)})
	}
	s, err := spec(Target{Self: 1, Addrs: addrs}, c)
	if err != nil {
		t.Fatal(err)
	}
	var dropped [][]int
	for _, l := range s.Leaves {
		if l.Params.Loss == lossScaled(100) {
			dropped = append(dropped, l.Servers)
		}
	}
	if fmt.Sprint(dropped) != "[[3]]" {
		t.Errorf("leaves with 100%% loss in p1's tree: %v; want [[3]]", dropped)
	}
}

// A server that knows only some peers' addresses installs the plan among them: a
// valid plan whose tree filters exactly those peers, with their delays.
func TestPlanAmong(t *testing.T) {
	p := NewPlan(twoDC(t), DefaultOptions(5))
	q := p.Among([]int{1, 3, 4})
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(q.Servers()); got != "[1 3 4]" {
		t.Fatalf("servers %s, want [1 3 4]", got)
	}
	if len(q.Links) != 6 || len(p.Links) != 20 {
		t.Fatalf("%d links among 3 servers (want 6); the original has %d (want 20)", len(q.Links), len(p.Links))
	}
	s, err := spec(Target{Self: 1, Addrs: map[int]netip.Addr{3: netip.MustParseAddr("10.0.0.3"), 4: netip.MustParseAddr("10.0.0.4")}}, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Leaves) != 1 || fmt.Sprint(s.Leaves[0].Servers) != "[3 4]" || len(s.Filters) != 2 {
		t.Fatalf("p1's tree among p3, p4: %+v", s)
	}
	if want, _ := p.Link(1, 3); s.Leaves[0].Params.Latency != want.Delay {
		t.Errorf("leaf delay %v, want the plan's %v", s.Leaves[0].Params.Latency, want.Delay)
	}
	if got := p.Among([]int{2}); len(got.Links) != 0 {
		t.Errorf("a plan among one server has %d links", len(got.Links))
	}
}

// ProbeHere probes in the caller's own namespace; it must leave no interface there.
// Only the probe's own names are compared: other packages' tests (Docker's veths)
// come and go in the same namespace meanwhile.
func TestProbeHereLeavesNothing(t *testing.T) {
	needRoot(t)
	err := ProbeHere(context.Background())
	t.Logf("ProbeHere: %v", err)
	if err != nil && !strings.HasPrefix(err.Error(), "kernel lacks ") {
		t.Errorf("ProbeHere failed for a reason other than the kernel: %v", err)
	}
	if err != nil && Probe(context.Background()) == nil {
		t.Errorf("Probe passes but ProbeHere fails: %v", err)
	}
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if n := l.Attrs().Name; n == hereDev() || n == hereDev()+"p" {
			t.Errorf("ProbeHere left %s behind", n)
		}
	}
}
