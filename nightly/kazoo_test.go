package nightly

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/benchdata"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/zkcompat"
)

// TestKazooEntry runs a kazoo entry of one module (SASL's, a few seconds a flavor)
// through Run, for real: kazoo's harness starts Debian's ZooKeeper, then poled (built
// from this tree, as the local backend's) through the launcher, and the night has
// both flavors' counts.
func TestKazooEntry(t *testing.T) {
	if err := checkKazoo(t.Context(), Entry{}); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	s, err := Parse("k.yaml", []byte("name: k\nexperiments:\n  - name: kazoo\n    kind: kazoo\n    set: [modules=test_sasl]\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "night")
	f, err := Run(ctx, s, Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range f.Metrics {
		got[m.Name] = m.Samples[0]
	}
	// test_sasl: 4 DIGEST-MD5 tests, 3 of them racy (zkcompat.Racy): at least the
	// fourth passes; the 2 GSSAPI ones skip (no KDC).
	for _, fl := range kazooFlavors {
		p, failed, skipped := got["kazoo/"+fl+".passed"], got["kazoo/"+fl+".failed"], got["kazoo/"+fl+".skipped"]
		if p < 1 || p+failed != 4 || skipped != 2 {
			t.Errorf("%s: %v passed, %v failed, %v skipped; want 4 run (1 or more passed) and 2 skipped", fl, p, failed, skipped)
		}
	}
	table, err := os.ReadFile(filepath.Join(out, "kazoo", "table.txt"))
	if err != nil || !strings.Contains(string(table), "zookeeper ") || !strings.Contains(string(table), "poled ") {
		t.Errorf("table.txt: %s (%v)", table, err)
	}
	t.Logf("%s", table)
	for _, fl := range kazooFlavors {
		if _, err := os.Stat(filepath.Join(out, "kazoo", fl, "results.txt")); err != nil {
			t.Error(err)
		}
	}
}

// TestKazooProblems: a test that passed on ZooKeeper and failed on poled is a
// problem, counted in the metrics and named in the table.
func TestKazooProblems(t *testing.T) {
	e := Entry{Kazoo: &Kazoo{Modules: []string{"test_x"}, Size: 3}}
	results := map[string]zkcompat.Results{
		backend.FlavorZooKeeper: {"test_x::T::a": zkcompat.Passed, "test_x::T::b": zkcompat.Failed},
		backend.FlavorPoled:     {"test_x::T::a": zkcompat.Failed, "test_x::T::b": zkcompat.Passed},
	}
	took := map[string]time.Duration{backend.FlavorZooKeeper: 3 * time.Second, backend.FlavorPoled: time.Second}
	problems := zkcompat.Compare(results[backend.FlavorZooKeeper], results[backend.FlavorPoled], e.Kazoo.Modules, true)
	want := "kazoo's suite, 1 modules, 3 servers\n" +
		"            passed  failed  skipped    time\n" +
		"zookeeper        1       1        0      3s\n" +
		"poled            1       1        0      1s\n" +
		"  test_x::T::a: passes on ZooKeeper, failed here\n"
	if got := kazooTable(e, results, took, problems); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	var n float64 = -1
	for _, m := range kazooMetrics(results, took, problems).Metrics {
		if m.Name == "problems" {
			n = m.Samples[0]
			if m.Better != benchdata.Lower {
				t.Errorf("problems: better %v", m.Better)
			}
		}
	}
	if n != 1 {
		t.Errorf("problems metric %v, want 1", n)
	}
}
