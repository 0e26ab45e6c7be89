package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polebench/polebench/bench"
)

// TestCompareCLI checks compare's exit status and outputs on synthetic bench.json files
// (nightly_sim_test.go runs real nights of the simulator through it).
func TestCompareCLI(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, d1, lost []float64) string {
		t.Helper()
		f := &bench.File{Format: bench.FormatVersion, Metrics: []bench.Metric{
			{Name: "e/latency.mean.before.D1", Unit: "ms", Better: bench.Lower, MinEffect: bench.MinEffect{Abs: 1, Rel: 0.05}, Samples: d1},
			{Name: "e/" + bench.LostWritesKey, Unit: "writes", Better: bench.Lower, Samples: lost},
		}}
		p := filepath.Join(dir, name)
		if err := f.WriteFile(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	zero := []float64{0, 0, 0, 0, 0}
	base := write("base.json", []float64{21.0, 21.1, 20.9, 21.2, 20.95}, zero)
	same := write("same.json", []float64{21.05, 20.98, 21.15, 20.92, 21.02}, zero)
	slow := write("slow.json", []float64{24.0, 24.1, 23.9, 24.2, 23.95}, zero)
	lost := write("lost.json", []float64{21.05, 20.98, 21.15, 20.92, 21.02}, []float64{0, 0, 1, 0, 0})
	md := filepath.Join(dir, "out.md")
	tests := []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"compare", base, same}, 0, "e/latency.mean.before.D1", ""},
		{[]string{"compare", base, slow}, 1, "REGRESSION", "polebench compare: 1 failing metric(s)"},
		{[]string{"compare", "--format", "markdown", base, slow}, 1, "| `e/latency.mean.before.D1` | 21.0 ms | 24.0 ms | +14.3% | 0.008 | 5+5 | **REGRESSION** |", ""},
		{[]string{"compare", base, lost}, 1, "LOST WRITES", "1 failing"},
		{[]string{"compare", "--alpha", "0.001", base, slow}, 0, "n too small to reach p < 0.001", ""},
		{[]string{"compare", "--markdown", md, "--history", filepath.Join(dir, "none.jsonl"), slow}, 0, "no baseline yet", ""},
		{[]string{"compare", base}, 2, "", "Usage: polebench compare"},
		{[]string{"compare", "--format", "html", base, slow}, 2, "", "Usage: polebench compare"},
		{[]string{"compare", base, filepath.Join(dir, "missing")}, 1, "", "no such file"},
		{[]string{"history", "add", "--file", filepath.Join(dir, "h.jsonl"), base}, 0, "added", ""},
		{[]string{"history", "add", "--file", filepath.Join(dir, "h.jsonl"), same}, 0, "added", ""},
		{[]string{"compare", "--history", filepath.Join(dir, "h.jsonl"), "--last", "2", slow}, 1, "old: the last 2 of 2 nights", ""},
		{[]string{"history", "plot", "--file", filepath.Join(dir, "h.jsonl"), "--out", filepath.Join(dir, "plots")}, 0, "2 plots of 2 nights", ""},
		{[]string{"history"}, 2, "", "Usage: polebench history add"},
		{[]string{"help", "history"}, 0, "", ""},
		{[]string{"nightly", "--suite", filepath.Join(dir, "nope.yaml")}, 1, "", "no such file"},
	}
	for _, tc := range tests {
		code, out, errs := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
			t.Errorf("polebench %v: exit %d\nstdout: %s\nstderr: %s\nwant exit %d, stdout ~ %q, stderr ~ %q",
				tc.args, code, out, errs, tc.code, tc.stdout, tc.stderr)
		}
	}
	if b, err := os.ReadFile(md); err != nil || !strings.Contains(string(b), "no baseline yet") {
		t.Errorf("markdown without a baseline: %v %s", err, b)
	}
}
