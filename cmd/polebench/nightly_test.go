package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTimingNightlyCompareEndToEnd runs three short nights on the local backend (real
// poled processes, user-space links): a baseline, an identical rerun and one with 3 ms more
// RTT between the data centers. compare flags the slower night with exit status 1 and
// passes the rerun with 0. Four repetitions per night: the fewest with which the exact
// Mann-Whitney test can reach p < 0.05 (2/C(8,4) = 0.029). A timing test (make test
// runs it alone): beside other packages' tests, identical nights' D1 means differed by
// 0.9 ms and the +3 ms night's shift reached only p = 0.114.
func TestTimingNightlyCompareEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three short nights of real runs (about 2 minutes)")
	}
	dir := t.TempDir()
	base, err := os.ReadFile("../../experiments/two-dc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// tud-cern is 20.75 ms in Table 2; the spec's rtt list overrides it.
	for _, v := range []struct {
		name string
		rtt  float64
	}{{"base", 20.75}, {"slow", 23.75}} {
		text := string(base) + fmt.Sprintf("rtt:\n  - {between: [D1, D2], ms: %g}\n", v.rtt)
		if err := os.WriteFile(filepath.Join(dir, v.name+"-spec.yaml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		// No crash: a run this short has no steady "after" window, and the latency
		// before the crash is what the RTT moves.
		suite := fmt.Sprintf("name: e2e\nexperiments:\n  - name: two-dc\n    spec: %s-spec.yaml\n    set: [duration=8s, crash-at=none, warmup=1s, rate=200, repetitions=4]\n", v.name)
		if err := os.WriteFile(filepath.Join(dir, v.name+".yaml"), []byte(suite), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	night := func(suite, out string) string {
		t.Helper()
		out = filepath.Join(dir, out)
		code, stdout, stderr := runCLI("nightly", "--suite", filepath.Join(dir, suite+".yaml"), "--out", out)
		if code != 0 {
			t.Fatalf("nightly %s: exit %d\n%s\n%s", suite, code, stdout, stderr)
		}
		return out
	}
	first := night("base", "n1")
	rerun := night("base", "n2")
	slow := night("slow", "n3")

	code, stdout, stderr := runCLI("compare", first, rerun)
	t.Logf("identical rerun:\n%s", stdout)
	if code != 0 {
		t.Errorf("identical rerun: exit %d, want 0: %s", code, stderr)
	}
	md := filepath.Join(dir, "compare.md")
	code, stdout, stderr = runCLI("compare", "--markdown", md, first, slow)
	t.Logf("+3 ms RTT:\n%s", stdout)
	if code != 1 || !strings.Contains(stderr, "failing metric(s)") {
		t.Errorf("+3 ms RTT: exit %d, want 1: %s", code, stderr)
	}
	// D1's clients reach the leader (in D2) over the slower link.
	if !regressed(stdout, "two-dc/latency.mean.before.D1") {
		t.Errorf("D1's mean latency is not flagged")
	}
	if b, err := os.ReadFile(md); err != nil || !strings.Contains(string(b), "| `two-dc/latency.mean.before.D1` |") {
		t.Errorf("markdown: %v\n%s", err, b)
	}

	// The same through the history: the two base nights are the baseline.
	hist := filepath.Join(dir, "history.jsonl")
	for _, n := range []string{first, rerun} {
		if code, _, stderr := runCLI("history", "add", "--file", hist, n); code != 0 {
			t.Fatalf("history add: %s", stderr)
		}
	}
	if code, stdout, _ := runCLI("compare", "--history", hist, "--last", "2", slow); code != 1 || !regressed(stdout, "two-dc/latency.mean.before.D1") {
		t.Errorf("slow night against the history: exit %d\n%s", code, stdout)
	}
	if code, _, stderr := runCLI("history", "plot", "--file", hist, "--out", filepath.Join(dir, "plots")); code != 0 {
		t.Errorf("history plot: %s", stderr)
	}
}

func regressed(table, metric string) bool {
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == metric {
			return strings.Contains(l, "REGRESSION")
		}
	}
	return false
}
