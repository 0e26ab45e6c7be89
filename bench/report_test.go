package bench

import (
	"strings"
	"testing"
	"time"
)

// TestWriteTrends: a flavor whose windows keep rising is flagged, a steady one is not,
// and too few windows say they cannot show a trend.
func TestWriteTrends(t *testing.T) {
	ws := func(xs ...float64) []Window {
		out := make([]Window, len(xs))
		for i, x := range xs {
			out[i] = Window{WritesPerSec: x}
		}
		return out
	}
	s, short := Setting{Servers: 3}, Setting{Servers: 3, Fsync: true}
	r := &Result{Mode: Closed, Duration: 10 * time.Second, Flavors: []string{"poled", "zookeeper", "etcd"}, Order: []Setting{s, short},
		Runs: map[Setting]map[string][]Window{
			s:     {"poled": ws(21000, 21500, 20900, 21300, 21100), "zookeeper": ws(9000, 10000, 11000, 12000, 13000), "etcd": ws(3000, 3100, 2900, 3050, 2950)},
			short: {"poled": ws(10000, 10100, 10200), "zookeeper": ws(9000)},
		}}
	var b strings.Builder
	if err := r.WriteTrends(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"3 servers, fsync off poled -12 -0.1% 0 1.000 none",
		"3 servers, fsync off zookeeper +1000 +9.1% 10 0.017 RISING",
		"3 servers, fsync on poled +100 +1.0% 3 0.333 none (3 windows cannot show one)",
		"3 servers, fsync on zookeeper - - - - 1 window(s)",
	} {
		if !strings.Contains(squash(b.String()), want) {
			t.Errorf("trends lack %q:\n%s", want, b.String())
		}
	}
	// The table gives no ratio where a flavor is still warming up, and one where both
	// are steady: the first flavor over each other one measured in the setting.
	b.Reset()
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	table := squash(b.String())
	if !strings.Contains(table, "3 servers, fsync off poled/zookeeper zookeeper still warming up") {
		t.Errorf("the table gives a ratio for a flavor still warming up:\n%s", b.String())
	}
	if !strings.Contains(table, "3 servers, fsync on poled/zookeeper ") || strings.Contains(table, "fsync on poled/zookeeper zookeeper still") {
		t.Errorf("the steady setting lacks its ratio row:\n%s", b.String())
	}
	if !strings.Contains(table, "3 servers, fsync off poled/etcd 7.03x p=0.008") || strings.Contains(table, "fsync on poled/etcd") ||
		strings.Contains(table, "zookeeper/etcd") {
		t.Errorf("the table's poled/etcd ratio is not where etcd was measured, or compares others:\n%s", b.String())
	}
}

func squash(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(lines, "\n")
}
