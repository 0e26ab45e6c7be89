package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/polebench/polebench/benchdata"
)

// simNightSuite is two simulator entries, short: the simulator is deterministic, so
// one night equals the next and any change is the code's (or a planted setting's).
const simNightSuite = `name: sim-e2e
experiments:
  - name: two-dc
    spec: two-dc
    set: [backend=sim, duration=20s, crash-at=8s, warmup=2s, repetitions=4]
    goal: {measured_minus_model_ms: 1.0}
  - name: recovery
    spec: two-dc-recovery
    set: [backend=sim, preload-mb=2, outdate=1:2s:6s, duration=20s, crash-at=8s, warmup=1s, repetitions=4]
    goal: {measured_minus_model_ms: 1.0}
`

// TestNightlySimulated runs `polebench nightly` three times on simulator entries: a
// night, the same night again, and one with --set intra-dc-rtt=3 (a planted
// regression: 3 ms inside each data center instead of 0.1). The planted night is judged
// by the model of the suite's own specs, so both entries miss their goal and it exits 1; compare
// passes the rerun with every simulated metric identical and fails the planted night,
// flagging the mean latency before the crash; history keeps the planted night out.
// Deterministic: no real cluster, no timing bound.
func TestNightlySimulated(t *testing.T) {
	dir := t.TempDir()
	suite := filepath.Join(dir, "sim.yaml")
	if err := os.WriteFile(suite, []byte(simNightSuite), 0o644); err != nil {
		t.Fatal(err)
	}
	night := func(name string, want int, last string, flags ...string) (string, *benchdata.File) {
		t.Helper()
		out := filepath.Join(dir, name)
		code, stdout, stderr := runCLI(append([]string{"nightly", "--suite", suite, "--out", out}, flags...)...)
		if code != want {
			t.Fatalf("nightly %s: exit %d, want %d\n%s\n%s", name, code, want, stdout, stderr)
		}
		if !strings.Contains(stdout, "fidelity (met, MISSED or inconclusive") {
			t.Errorf("nightly %s prints no fidelity table:\n%s", name, stdout)
		}
		if lines := strings.Split(strings.TrimSpace(stdout), "\n"); lines[len(lines)-1] != last {
			t.Errorf("nightly %s: last line %q, want %q", name, lines[len(lines)-1], last)
		}
		f, err := benchdata.ReadFile(filepath.Join(out, benchdata.FileName))
		if err != nil {
			t.Fatal(err)
		}
		return out, f
	}
	first, f1 := night("n1", 0, "night: 2 met")
	rerun, f2 := night("n2", 0, "night: 2 met")
	planted, f3 := night("n3", 1, "night: 2 MISSED (two-dc, recovery)", "--set", "intra-dc-rtt=3")

	// bench.json: simulated metrics are marked, each entry has its verdict.
	if len(f1.Metrics) == 0 {
		t.Fatal("no metrics")
	}
	for _, m := range f1.Metrics {
		if !m.Deterministic {
			t.Errorf("%s is not marked deterministic", m.Name)
		}
	}
	if len(f1.Fidelity) != 2 {
		t.Fatalf("fidelity %+v, want one verdict per entry", f1.Fidelity)
	}
	for _, fd := range f1.Fidelity {
		if fd.Verdict != benchdata.FidelityMet || fd.Host.Verdict != benchdata.HostNotMeasured || len(fd.Checks) == 0 {
			t.Errorf("%s: fidelity %s, host %q, %d checks", fd.Entry, fd.Verdict, fd.Host.Verdict, len(fd.Checks))
		}
	}
	// Planted: 2.9 ms more inside each DC moves both entries' measured means before the
	// crash (same layout), not the model of the suite's specs they are judged by.
	for _, fd := range f3.Fidelity {
		if fd.Verdict != benchdata.FidelityMissed {
			t.Errorf("planted %s: fidelity %s, want %s: %+v", fd.Entry, fd.Verdict, benchdata.FidelityMissed, fd.Checks)
		}
	}
	if md, err := os.ReadFile(filepath.Join(first, "fidelity.md")); err != nil || !strings.Contains(string(md), "| `two-dc` | sim | met |") {
		t.Errorf("fidelity.md: %v\n%s", err, md)
	}
	if f1.Env.Suite != "sim-e2e" || len(f1.Env.Planted) != 0 || f3.Env.Planted == nil || f3.Env.Planted[0] != "intra-dc-rtt=3" {
		t.Errorf("environment: first %+v, planted %+v", f1.Env, f3.Env)
	}
	// The simulator is deterministic: the same samples, night after night.
	if !reflect.DeepEqual(f1.Metrics, f2.Metrics) {
		t.Errorf("two simulated nights differ")
	}

	code, stdout, stderr := runCLI("compare", first, rerun)
	if code != 0 {
		t.Errorf("identical rerun: exit %d, want 0: %s\n%s", code, stderr, stdout)
	}
	for _, m := range f1.Metrics {
		if row := compareRow(stdout, m.Name); !strings.Contains(row, "identical (simulated)") {
			t.Errorf("rerun: %s is not reported identical: %q", m.Name, row)
		}
	}
	if !strings.Contains(stdout, "fidelity of the new night (2 of 2 entries met their goal, 0 missed)") {
		t.Errorf("compare shows no fidelity verdicts:\n%s", stdout)
	}

	md := filepath.Join(dir, "compare.md")
	code, stdout, stderr = runCLI("compare", "--markdown", md, first, planted)
	t.Logf("planted night:\n%s", stdout)
	if code != 1 || !strings.Contains(stderr, "failing metric(s)") {
		t.Errorf("planted night: exit %d, want 1: %s", code, stderr)
	}
	// Both DCs reach their quorum inside D2 (leader p5, then p4): 2.9 ms more each.
	flagged := 0
	for _, dc := range []string{"D1", "D2"} {
		if strings.Contains(compareRow(stdout, "two-dc/latency.mean.before."+dc), "REGRESSION (simulated; planted --set intra-dc-rtt=3)") {
			flagged++
		}
	}
	if flagged == 0 {
		t.Errorf("neither D1's nor D2's mean latency before the crash is flagged")
	}
	// A simulated number that moved less than its minimum effect is still reported.
	if !strings.Contains(stdout, "CHANGED (simulated; planted --set intra-dc-rtt=3; below the minimum effect") {
		t.Errorf("no simulated change below its minimum effect is reported as CHANGED")
	}
	if b, err := os.ReadFile(md); err != nil || !strings.Contains(string(b), "**REGRESSION (simulated; planted") || !strings.Contains(string(b), "PLANTED intra-dc-rtt=3") ||
		!strings.Contains(string(b), "#### Fidelity of the new night") {
		t.Errorf("markdown: %v\n%s", err, b)
	}

	// The history keeps the planted night out; against the two others it fails.
	hist := filepath.Join(dir, "history.jsonl")
	for _, n := range []string{first, rerun, planted} {
		code, stdout, stderr := runCLI("history", "add", "--file", hist, n)
		if code != 0 {
			t.Fatalf("history add %s: %s", n, stderr)
		}
		if n == planted && !strings.Contains(stdout, "not added") {
			t.Errorf("the planted night was added to the history: %s", stdout)
		}
	}
	if nights, err := benchdata.ReadHistory(hist); err != nil || len(nights) != 2 {
		t.Errorf("history: %d nights, %v", len(nights), err)
	}
	if code, stdout, _ := runCLI("compare", "--history", hist, "--last", "2", planted); code != 1 || !strings.Contains(compareRow(stdout, "two-dc/latency.mean.before.D2"), "REGRESSION") {
		t.Errorf("planted night against the history: exit %d\n%s", code, stdout)
	}
	if code, stdout, stderr := runCLI("compare", "--history", hist, rerun); code != 0 {
		t.Errorf("rerun against the history: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestNightlyFlagErrors: --set and --quick errors name the flag.
func TestNightlyFlagErrors(t *testing.T) {
	dir := t.TempDir()
	suite := filepath.Join(dir, "sim.yaml")
	if err := os.WriteFile(suite, []byte(simNightSuite), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--set", "bogus=1"}, 1, `--set bogus=1: unknown override "bogus" (known: p, `},
		{[]string{"--set", "intra-dc-rtt=x"}, 1, `--set intra-dc-rtt=x: entry two-dc (` + suite + `:3): override intra-dc-rtt=x: intra_dc_rtt_ms: "x" is not a number`},
		{[]string{"--set", "intra-dc-rtt"}, 2, `invalid value "intra-dc-rtt" for flag -set: override "intra-dc-rtt": want name=value`},
		{[]string{"--quick"}, 1, "no entry has quick:"},
	}
	for _, tc := range tests {
		args := append([]string{"nightly", "--suite", suite, "--out", filepath.Join(dir, "out")}, tc.args...)
		if code, _, stderr := runCLI(args...); code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("polebench %v: exit %d, stderr %q; want %d, ~%q", args, code, stderr, tc.code, tc.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a night with a bad flag ran")
	}
}

// compareRow is the line of compare's text table for metric.
func compareRow(table, metric string) string {
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == metric {
			return l
		}
	}
	return ""
}
