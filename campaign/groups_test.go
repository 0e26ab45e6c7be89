package campaign

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polebench/polebench/analysis"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// On recorded etcd runs (testdata/placed: Raft elected p4 and p1, both runs ended
// under p1), the after window's runs are split by Raft's winner and the final
// window's by the leader the runs ended with: the final mean is one group of two, not
// two groups of one. The run-level aggregate splits the same way.
func TestGroupsByPlacedLeader(t *testing.T) {
	dir := filepath.Join("testdata", "placed")
	c, err := Load(filepath.Join(dir, "campaign.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Rows(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, metric := range []string{"latency_ms.after.all.mean", "latency_ms.placed.all.mean", "latency_ms.final.all.mean"} {
		for _, p := range c.Points() {
			fmt.Fprintf(&b, "%s, point %d, by %s:\n", metric, p.Index, LeaderColumn(metric))
			for _, g := range Groups(rows, p, metric) {
				fmt.Fprintf(&b, "  p%d: reps %v of %d, mean %s\n", g.Leader, g.Reps(), g.Of, fmtAgg(g.Agg(metric)))
			}
		}
	}
	var sums []*analysis.Summary
	for rep := 1; rep <= c.Repetitions; rep++ {
		s, err := analysis.ReadSummary(filepath.Join(RunDir(dir, c.Points()[0], rep), "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, s)
	}
	r, err := analysis.AggregateRuns(sums)
	if err != nil {
		t.Fatal(err)
	}
	split, err := json.MarshalIndent(map[string]any{"by_leader": r.ByLeader, "by_placed_leader": r.ByPlacedLeader}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "aggregate.json's split:\n%s\n", split)
	golden := filepath.Join(dir, "groups.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("groups:\n%s\nwant (%s):\n%s", b.String(), golden, want)
	}
}
