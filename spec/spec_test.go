package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/model"
	"github.com/polebench/polebench/score"
)

// TestBadSpecs loads every testdata/bad/X.yaml and expects exactly the error in X.want:
// file, line, field path and message.
func TestBadSpecs(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad specs: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".want")
			if err != nil {
				t.Fatal(err)
			}
			_, err = Load(f)
			if err == nil {
				t.Fatalf("Load succeeded, want %s", want)
			}
			if got := err.Error(); got != strings.TrimSpace(string(want)) {
				t.Errorf("error\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ data, want string }{
		{"", "x.yaml: empty spec"},
		{"name: [", "x.yaml: yaml: line 1: did not find expected node content"},
		{"- 1\n- 2\n", "x.yaml:1: expected a mapping, got a list"},
		{"name: a\n---\nname: b\n", "x.yaml: more than one YAML document"},
	}
	for _, tc := range tests {
		if _, err := Parse("x.yaml", []byte(tc.data)); err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q): %v, want %s", tc.data, err, tc.want)
		}
	}
	if _, err := Load("testdata/nope.yaml"); err == nil || !strings.Contains(err.Error(), "read spec") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// TestFullExample checks the documented example, which sets every field.
func TestFullExample(t *testing.T) {
	s, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "example" || s.Description == "" || s.IntraDCRTTMs != 0.2 || s.InitialLeader != 5 ||
		s.CrashAt != 30*time.Second || s.Duration != 90*time.Second {
		t.Errorf("scalars: %+v", s)
	}
	if len(s.DataCenters) != 3 || s.DataCenters[2].Endpoint != "" || len(s.DataCenters[0].Servers) != 2 ||
		!slices.Equal(s.DataCenters[0].Nodes, []string{"lab-a"}) || fmt.Sprint(s.Nodes()) != "map[D1:[lab-a]]" {
		t.Errorf("datacenters: %+v", s.DataCenters)
	}
	if s.Oracle.Name != score.Combined || len(s.Oracle.Combined) != 2 || s.Oracle.Combined[0].Class != 10 || s.Oracle.Heartbeat != time.Second {
		t.Errorf("oracle: %+v", s.Oracle)
	}
	if s.Zxids[4] != 0x100000005 {
		t.Errorf("zxids: %v", s.Zxids)
	}
	topo, err := s.Topology()
	if err != nil {
		t.Fatal(err)
	}
	// D3 has no endpoint: both of its RTTs are explicit; D1-D2 comes from Table 2.
	if topo.RTT(1, 4) != 30 || topo.RTTSD(1, 4) != 0.5 || topo.RTT(1, 2) != 12 || topo.RTT(2, 4) != 9.88 || topo.RTT(4, 5) != 0.2 {
		t.Errorf("RTTs: %v %v %v %v %v", topo.RTT(1, 4), topo.RTTSD(1, 4), topo.RTT(1, 2), topo.RTT(2, 4), topo.RTT(4, 5))
	}
	if r := topo.Rates; r["D1"] != 200 || r["D2"] != 300 || r["D3"] != 500 {
		t.Errorf("rates: %v", r)
	}
	// Every top-level section is in the example, so docs/spec.md documents them all.
	data, err := os.ReadFile("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range sections {
		if !strings.Contains(string(data), "\n"+sec.name+":") && !strings.HasPrefix(string(data), sec.name+":") {
			t.Errorf("the example lacks %s", sec.name)
		}
	}
	// docs/spec.md shows this exact file.
	doc, err := os.ReadFile("../docs/spec.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), string(data)) {
		t.Error("docs/spec.md does not contain spec/testdata/full.yaml verbatim")
	}
}

func TestRates(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	dcs := []DataCenter{{Name: "D1"}, {Name: "D2"}, {Name: "D3"}}
	tests := []struct {
		name  string
		rates Rates
		want  map[string]float64
	}{
		{"equal by default", Rates{Total: 900}, map[string]float64{"D1": 300, "D2": 300, "D3": 300}},
		{"skew without p is equal", Rates{Total: 900, Skew: &Skew{Hot: "D3"}}, map[string]float64{"D1": 300, "D2": 300, "D3": 300}},
		{"Dep1 p=0.5 hot D3", Rates{Total: 1000, Skew: &Skew{Hot: "D3", P: p(0.5)}}, map[string]float64{"D1": 250, "D2": 250, "D3": 500}},
		{"Dep3 p=1 hot D2", Rates{Total: 1000, Skew: &Skew{Hot: "D2", P: p(1)}}, map[string]float64{"D1": 0, "D2": 1000, "D3": 0}},
		{"shares, missing DC gets 0", Rates{Total: 1000, Shares: map[string]float64{"D1": 0.25, "D3": 0.75}}, map[string]float64{"D1": 250, "D2": 0, "D3": 750}},
	}
	for _, tc := range tests {
		s := &Spec{DataCenters: dcs, Rates: tc.rates}
		got := s.RatesByDC()
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
	// 2DC, Fig. 7a: lambda_1 = (1-p) lambda_T, lambda_2 = p lambda_T.
	s := &Spec{DataCenters: dcs[:2], Rates: Rates{Total: 1000, Skew: &Skew{Hot: "D2", P: p(0.2)}}}
	if got := s.RatesByDC(); got["D1"] != 800 || got["D2"] != 200 {
		t.Errorf("2DC p=0.2: %v", got)
	}
}

func TestShipped(t *testing.T) {
	want := []string{"etcd-11836", "nine-dc", "rtt-schedule", "three-dc-dep1", "three-dc-dep2", "three-dc-dep3", "three-dc-recovery", "three-region",
		"two-dc", "two-dc-recovery", "two-dc-recovery-100mbit", "two-dc-recovery-1gbit"}
	if got := ShippedNames(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("ShippedNames() = %v, want %v", got, want)
	}
	endpoints := map[string][3]string{
		"three-dc-dep1": {"caltech", "slac", "fnal"},
		"three-dc-dep2": {"slac", "caltech", "fnal"},
		"three-dc-dep3": {"slac", "fnal", "caltech"},
	}
	for _, name := range want {
		s, err := Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		// The embedded copy is the file in the source tree.
		disk, err := Load("../experiments/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(s.FaultSchedule(), disk.FaultSchedule()) || s.Name != name || disk.Name != name {
			t.Errorf("%s: the embedded spec differs from the file", name)
		}
		servers := 5 // the paper's layouts; the simulator's large one has 45, its last leading
		if name == "nine-dc" {
			servers = 45
		}
		if s.InitialLeader != servers || s.CrashAt != 60*time.Second || s.N() != servers || s.Repetitions != 5 || s.Backend != "local" {
			t.Errorf("%s: %+v", name, s)
		}
		if w := s.Warnings(); w != nil {
			t.Errorf("%s warns: %v", name, w)
		}
		if strings.Contains(name, "-recovery") {
			continue
		}
		oracle := score.History
		if name == "rtt-schedule" {
			oracle = score.Latency
		}
		if s.Duration != 120*time.Second || s.Oracle.Name != oracle || s.Outdate != nil || s.PreloadMB != 0 {
			t.Errorf("%s: %+v", name, s)
		}
		if e, ok := endpoints[name]; ok {
			for i, dc := range s.DataCenters {
				if dc.Endpoint != e[i] {
					t.Errorf("%s D%d = %s, want %s", name, i+1, dc.Endpoint, e[i])
				}
			}
		}
	}
	if _, err := Shipped("nope"); err == nil || !strings.Contains(err.Error(), "two-dc") {
		t.Errorf("Shipped(nope): %v", err)
	}
	if s, err := Resolve("experiments/two-dc.yaml"); err != nil || s.File != "experiments/two-dc.yaml" {
		t.Errorf("Resolve by repository path: %v", err)
	}
	if _, err := Resolve("nope"); err == nil || !strings.Contains(err.Error(), "neither a file nor a shipped spec") {
		t.Errorf("Resolve(nope): %v", err)
	}
}

// TestRecoverySpecs pins the Fig. 8 setups: who is outdated, when, and what the model
// says the spec's oracle elects after the crash.
func TestRecoverySpecs(t *testing.T) {
	sec := func(d int) time.Duration { return time.Duration(d) * time.Second }
	tests := []struct {
		name    string
		oracle  string
		elected int
		sched   string
		history []int // the servers history ties: outdated ones are behind
	}{
		{"two-dc-recovery", score.Rotating, 1, "[kill p1 at 10s outdate p1 at 58s restart p1 at 58s crash p5 at 1m0s rejoin p1 at 1m0s]",
			[]int{2, 3, 4}},
		{"three-dc-recovery", score.History, 4, "[kill p2 at 10s kill p3 at 10s outdate p2 at 58s outdate p3 at 58s restart p2 at 58s restart p3 at 58s crash p5 at 1m0s rejoin p2 at 1m0s rejoin p3 at 1m0s]",
			[]int{1, 4}},
	}
	for _, tc := range tests {
		s, err := Resolve(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if s.Oracle.Name != tc.oracle || s.PreloadMB != 50 || s.Duration != sec(90) {
			t.Errorf("%s: oracle %s, preload %d MB, duration %v", tc.name, s.Oracle.Name, s.PreloadMB, s.Duration)
		}
		if got := fmt.Sprint(s.FaultSchedule()); got != tc.sched {
			t.Errorf("%s schedule %v, want %v", tc.name, got, tc.sched)
		}
		p, err := s.Model()
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(p.Elections, func(e model.Election) bool { return e.Oracle == tc.oracle })
		if i < 0 || p.Elections[i].Leader != tc.elected {
			t.Errorf("%s: elections %+v, want %s to elect p%d", tc.name, p.Elections, tc.oracle, tc.elected)
		}
		i = slices.IndexFunc(p.Elections, func(e model.Election) bool { return e.Oracle == score.History })
		if i < 0 || p.Elections[i].Leader != 4 || !slices.Equal(p.Elections[i].Tied, tc.history) {
			t.Errorf("%s: history %+v, want p4 among %v", tc.name, p.Elections, tc.history)
		}
	}
	// Fig. 8b's links (Sec. 4.4): p1 reaches D2 over 20.75 ms, p4 over 77.06 ms.
	s, err := Resolve("three-dc-recovery")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := s.Topology()
	if err != nil {
		t.Fatal(err)
	}
	if topo.RTT(1, 2) != 20.75 || topo.RTT(4, 3) != 77.06 || topo.RTT(1, 5) != 9.88 || topo.RTTSD(4, 2) != 0.26 {
		t.Errorf("3DC RTTs: p1-p2 %v, p4-p3 %v, p1-p5 %v", topo.RTT(1, 2), topo.RTT(4, 3), topo.RTT(1, 5))
	}
}

// TestHistoryElects: with the servers in sync history elects the model's winner
// (p4 on two-dc), and a server ahead when it is one.
func TestHistoryElects(t *testing.T) {
	s, err := Resolve("two-dc")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		zxids map[int]uint64
		want  int
	}{
		{map[int]uint64{1: 9, 2: 9, 3: 9, 4: 9}, 4},
		{map[int]uint64{1: 9, 2: 9, 3: 10, 4: 9}, 3},
		{map[int]uint64{1: 11, 2: 9, 3: 10, 4: 10}, 1},
	} {
		got, err := s.HistoryElects(c.zxids)
		if err != nil || got != c.want {
			t.Errorf("zxids %v: p%d (%v), want p%d", c.zxids, got, err, c.want)
		}
	}
}
