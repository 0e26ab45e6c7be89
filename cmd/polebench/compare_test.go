package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/benchdata"
)

// TestCompareCLI checks compare's exit status and outputs on synthetic bench.json files
// (nightly_sim_test.go runs real nights of the simulator through it).
func TestCompareCLI(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, d1, lost []float64) string {
		t.Helper()
		f := &benchdata.File{Format: benchdata.FormatVersion, Metrics: []benchdata.Metric{
			{Name: "e/latency.mean.before.D1", Unit: "ms", Better: benchdata.Lower, MinEffect: benchdata.MinEffect{Abs: 1, Rel: 0.05}, Samples: d1},
			{Name: "e/" + benchdata.LostWritesKey, Unit: "writes", Better: benchdata.Lower, Samples: lost},
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

// TestCompareTrustedOnlyCLI compares run directories whose runs the host's verdict
// trusted or not: the host line per side, --trusted-only leaving the busy runs out,
// and a side left with too few trusted runs named on stdout and in the exit status.
func TestCompareTrustedOnlyCLI(t *testing.T) {
	// runs writes a run directory of two-dc, one repetition per verdict, its D1
	// latency 21 ms when trusted, 30 ms (the host's stalls) when not; offset keeps
	// one side's samples from tying with the other's.
	runs := func(offset float64, verdicts ...string) string {
		t.Helper()
		root := t.TempDir()
		dir := filepath.Join(root, "two-dc")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "spec.resolved.json"), []byte(`{"Name": "two-dc", "Repetitions": `+strconv.Itoa(len(verdicts))+`, "Backend": "local"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		for i, v := range verdicts {
			mean := 21 + offset + 0.05*float64(i)
			if v != analysis.Trusted {
				mean += 9
			}
			s := &analysis.Summary{AchievedRate: 1000, Host: map[string]*analysis.HostWindow{"before": {Verdict: analysis.Trusted}, "after": {Verdict: v}},
				LatencyMS: map[string]map[string]analysis.LatencyStats{"before": {"D1": {Count: 100, Mean: mean, P99: mean + 5}}}}
			rd := filepath.Join(dir, "rep"+strconv.Itoa(i+1))
			if err := os.MkdirAll(rd, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := s.WriteFile(filepath.Join(rd, "summary.json")); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	T, D, U := analysis.Trusted, analysis.Degraded, analysis.Untrusted
	quiet := runs(0, T, T, T, T, T)
	busy := runs(0.01, T, T, T, T, U, U, D, U, U, U, D, U) // 4 quiet runs among 8 slowed by the host
	busier := runs(0.01, T, T, U, U, U)
	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr []string
	}{
		{"busy runs regress", []string{quiet, busy}, 1,
			[]string{"  REGRESSION", "host (runs with every window trusted):", "two-dc: old trusted 5/5, new trusted 4/12"}, []string{"failing metric(s)"}},
		{"busy runs left out", []string{"--trusted-only", quiet, busy}, 0,
			[]string{"5+4", "--trusted-only: only runs whose every window", "two-dc: old trusted 5/5, new trusted 4/12"}, nil},
		{"too few trusted", []string{quiet, busier, "--trusted-only"}, 1,
			[]string{"TOO FEW TRUSTED (--trusted-only: new has 2 trusted of 5 runs; 5+2 runs cannot reach p < 0.05)",
				"two-dc: old trusted 5/5, new trusted 2/5: NOT COMPARED, too few trusted runs"},
			[]string{"too few trusted runs to compare two-dc"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"compare"}, tc.args...)...)
			ok := code == tc.code
			for _, s := range tc.stdout {
				ok = ok && strings.Contains(out, s)
			}
			for _, s := range tc.stderr {
				ok = ok && strings.Contains(errs, s)
			}
			if !ok || (tc.code == 0 && strings.Contains(out, "  REGRESSION")) {
				t.Errorf("polebench compare %v: exit %d\nstdout: %s\nstderr: %s\nwant exit %d, stdout ~ %q, stderr ~ %q", tc.args, code, out, errs, tc.code, tc.stdout, tc.stderr)
			}
			if testing.Verbose() {
				t.Logf("polebench compare %v: exit %d\n%s%s", tc.args, code, out, errs)
			}
		})
	}
}
