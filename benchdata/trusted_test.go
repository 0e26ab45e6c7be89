package benchdata

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/analysis"
)

// run is one repetition of a synthetic run directory: its D1 latency, the host's
// verdict on its windows ("" for none measured) and its lost writes.
type run struct {
	mean    float64
	verdict string
	lost    int
	before  string // the verdict on the before window (D1's): trusted if empty
}

// writeRuns writes the run directory root/exp as the runner leaves it: one rep<i>
// per run, each with a summary.json.
func writeRuns(t *testing.T, root, exp, backend string, runs []run) {
	t.Helper()
	dir := filepath.Join(root, exp)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sp := fmt.Sprintf(`{"Name": %q, "Repetitions": %d, "Backend": %q}`, exp, len(runs), backend)
	if err := os.WriteFile(filepath.Join(dir, "spec.resolved.json"), []byte(sp), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, r := range runs {
		s := &analysis.Summary{AchievedRate: 1000, LostAcknowledgedWrites: r.lost,
			LatencyMS: map[string]map[string]analysis.LatencyStats{"before": {"D1": {Count: 100, Mean: r.mean, P99: r.mean + 5}}}}
		if r.verdict != "" {
			s.Host = map[string]*analysis.HostWindow{"before": {Verdict: cmp.Or(r.before, analysis.Trusted)}, "after": {Verdict: r.verdict}}
		}
		rd := filepath.Join(dir, fmt.Sprintf("rep%d", i+1))
		if err := os.MkdirAll(rd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteFile(filepath.Join(rd, "summary.json")); err != nil {
			t.Fatal(err)
		}
	}
}

// untrustedBefore is rs with their before windows untrusted too.
func untrustedBefore(rs []run) []run {
	out := slices.Clone(rs)
	for i := range out {
		out[i].before = analysis.Untrusted
	}
	return out
}

// runsOf makes runs of the given means, all with one verdict.
func runsOf(verdict string, means ...float64) []run {
	var rs []run
	for _, m := range means {
		rs = append(rs, run{mean: m, verdict: verdict})
	}
	return rs
}

// TestCompareTrustedOnly compares run directories with and without --trusted-only:
// the host's verdicts are counted per side, untrusted runs leave the comparison, and
// an experiment left with too few trusted runs is not compared and fails.
func TestCompareTrustedOnly(t *testing.T) {
	quiet := runsOf(analysis.Trusted, 21.0, 21.1, 20.9, 21.2, 20.95)
	quietToo := runsOf(analysis.Trusted, 21.05, 20.98, 21.15, 20.92)
	busy := runsOf(analysis.Untrusted, 30, 31, 29, 32, 30.5, 29.5, 31.5, 30.2) // the host's stalls, not the system's
	const d1 = "two-dc/latency.mean.before.D1"
	tests := []struct {
		name        string
		old, cur    []run
		trustedOnly bool
		verdict     Verdict // of d1
		n           string  // of d1
		note        string  // in d1's note
		host        string  // the experiment's host line
		lost        Verdict // of the lost writes
	}{
		{"all trusted, unfiltered", quiet, quietToo, false, Same, "5+4", "", "two-dc: old trusted 5/5, new trusted 4/4", Same},
		{"all trusted, filtered: nothing dropped", quiet, quietToo, true, Same, "5+4", "", "two-dc: old trusted 5/5, new trusted 4/4", Same},
		{"busy runs make a regression", quiet, append(slices.Clone(quietToo), busy...), false, Regressed, "5+12", "", "new trusted 4/12", Same},
		{"busy runs left out", quiet, append(slices.Clone(quietToo), busy...), true, Same, "5+4", "", "new trusted 4/12", Same},
		{"degraded runs are not trusted either", quiet, append(slices.Clone(quietToo), runsOf(analysis.Degraded, 30, 31)...), true, Same, "5+4", "", "new trusted 4/6", Same},
		{"too few trusted in new", quiet, append(quietToo[:2:2], busy[:3]...), true, TooFewTrusted,
			"5+2", "new has 2 trusted of 5 runs; 5+2 runs cannot reach p < 0.05", "new trusted 2/5: NOT COMPARED", Same},
		{"old from before the meter", runsOf("", 21.0, 21.1, 20.9, 21.2, 20.95), quietToo, true, TooFewTrusted,
			"0+4", "old has 0 trusted of 5 runs", "two-dc: old host not measured, new trusted 4/4: NOT COMPARED", Same},
		// Every window on both sides untrusted: the host moved them past its limits,
		// so a change between them is not the code's to fail.
		{"untrusted on both sides", untrustedBefore(busy[:5]), untrustedBefore(runsOf(analysis.Untrusted, 40, 41, 39, 42, 40.5)), false, HostMade,
			"5+5", "the host's verdict trusted none of either side's windows", "old trusted 0/5, new trusted 0/5", Same},
		{"one trusted window is enough to judge", untrustedBefore(busy[:5]), append(untrustedBefore(runsOf(analysis.Untrusted, 40, 41, 39, 42)), run{mean: 40.5, verdict: analysis.Trusted}), false, Regressed,
			"5+5", "", "new trusted 1/5", Same},
		{"a lost write in a busy run still fails", quiet, append(slices.Clone(quietToo), run{mean: 30, verdict: analysis.Untrusted, lost: 1}), true, Same,
			"5+4", "", "new trusted 4/5", LostWrites},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldDir, newDir := t.TempDir(), t.TempDir()
			writeRuns(t, oldDir, "two-dc", "local", tc.old)
			writeRuns(t, newDir, "two-dc", "local", tc.cur)
			sim := runsOf("", 20.85, 20.85) // the simulator: no host, compared whole
			writeRuns(t, oldDir, "sim", "sim", sim)
			writeRuns(t, newDir, "sim", "sim", sim)
			old, err := Load(oldDir)
			if err != nil {
				t.Fatal(err)
			}
			cur, err := Load(newDir)
			if err != nil {
				t.Fatal(err)
			}
			c, err := CompareWith(old, cur, Options{Alpha: DefaultAlpha, TrustedOnly: tc.trustedOnly})
			if err != nil {
				t.Fatal(err)
			}
			rows := map[string]Row{}
			for _, r := range c.Rows {
				rows[r.Name] = r
			}
			r := rows[d1]
			if r.Verdict != tc.verdict || fmtN(r) != tc.n || !strings.Contains(r.Note, tc.note) {
				t.Errorf("%s: %s %s (%s), p %.3f; want %s %s (%s)", d1, r.Verdict, fmtN(r), r.Note, r.P, tc.verdict, tc.n, tc.note)
			}
			if l := rows["two-dc/"+LostWritesKey]; l.Verdict != tc.lost || fmtN(l) != fmt.Sprintf("%d+%d", len(tc.old), len(tc.cur)) {
				t.Errorf("lost writes: %s %s, want %s on every run", l.Verdict, fmtN(l), tc.lost)
			}
			if s := rows["sim/latency.mean.before.D1"]; s.Verdict != Same || fmtN(s) != "2+2" {
				t.Errorf("simulated metric: %s %s, want ~ on every run", s.Verdict, fmtN(s))
			}
			if fails := c.Failures() > 0; fails != (tc.verdict.Fails() || tc.lost.Fails()) {
				t.Errorf("%d failures", c.Failures())
			}
			var text, md bytes.Buffer
			if err := c.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if err := c.WriteMarkdown(&md); err != nil {
				t.Fatal(err)
			}
			for _, out := range []string{text.String(), md.String()} {
				if !strings.Contains(out, tc.host) || strings.Contains(out, "sim: ") {
					t.Errorf("output lacks %q (and should not judge the simulator's host):\n%s", tc.host, out)
				}
				if strings.Contains(out, "--trusted-only: only runs") != tc.trustedOnly {
					t.Errorf("trusted-only note with TrustedOnly %v:\n%s", tc.trustedOnly, out)
				}
			}
			if testing.Verbose() && tc.name == "too few trusted in new" {
				t.Logf("compare --trusted-only:\n%s", text.String())
			}
		})
	}
}

// TestHostVerdictsRoundTrip: the verdicts reach bench.json and the history, pool in a
// baseline (a night without them as not measured), and bad ones are refused naming
// the file and the metric.
func TestHostVerdictsRoundTrip(t *testing.T) {
	root := t.TempDir()
	writeRuns(t, root, "two-dc", "local", []run{{21, analysis.Trusted, 0, ""}, {22, analysis.Degraded, 0, ""}, {23, analysis.Untrusted, 0, ""}})
	writeRuns(t, root, "sim", "sim", runsOf("", 20.85))
	f, err := Collect(root)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := f.Metric("two-dc/latency.mean.before.D1")
	if want := []string{analysis.Trusted, analysis.Degraded, analysis.Untrusted}; !slices.Equal(m.Host, want) {
		t.Errorf("host %v, want %v", m.Host, want)
	}
	if s, _ := f.Metric("sim/latency.mean.before.D1"); s.Host != nil {
		t.Errorf("simulated metric has host verdicts %v", s.Host)
	}
	p := filepath.Join(root, FileName)
	if err := f.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	g, err := ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if m2, _ := g.Metric(m.Name); !slices.Equal(m2.Host, m.Host) {
		t.Errorf("round trip: %v", m2.Host)
	}

	// A night from before the meter pools as not measured.
	day := time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC)
	before := fileOf(latency(m.Name, []float64{20, 20.5}))
	before.Env.Date, f.Env.Date = day, day.AddDate(0, 0, 1)
	base, err := Baseline([]Night{NightOf(before), NightOf(f)}, 5)
	if err != nil {
		t.Fatal(err)
	}
	pooled, _ := base.Metric(m.Name)
	if want := []string{"", "", analysis.Trusted, analysis.Degraded, analysis.Untrusted}; !slices.Equal(pooled.Host, want) || len(pooled.Samples) != 5 {
		t.Errorf("pooled %v host %v, want host %v", pooled.Samples, pooled.Host, want)
	}

	for _, bad := range []struct{ host, want string }{
		{`["trusted"]`, "metric x/latency.mean.before.D1: host has 1 verdicts for 2 samples"},
		{`["trusted", "fine"]`, `metric x/latency.mean.before.D1: host[1] is "fine"`},
	} {
		b, _ := json.Marshal(map[string]any{"format": 1, "metrics": []any{map[string]any{"name": "x/latency.mean.before.D1", "samples": []float64{1, 2}, "host": json.RawMessage(bad.host)}}})
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("host %s: %v, want an error naming %s and %q", bad.host, err, p, bad.want)
		}
		line := fmt.Sprintf(`{"date":"2026-11-01T00:00:00Z","metrics":{"x/latency.mean.before.D1":{"samples":[1,2],"host":%s}}}`, bad.host)
		hist := filepath.Join(root, "h.jsonl")
		if err := os.WriteFile(hist, []byte(line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadHistory(hist); err == nil || !strings.Contains(err.Error(), hist+":1:") || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("history host %s: %v, want an error naming %s:1 and %q", bad.host, err, hist, bad.want)
		}
	}
}

// TestCompareTrustedOnlyUnmeasured: an experiment whose runs measured no host on a
// real backend (a bench entry, runs from before the meter) has no trusted run: shown
// and compared as ever without --trusted-only, not compared with it.
func TestCompareTrustedOnlyUnmeasured(t *testing.T) {
	oldDir, newDir := t.TempDir(), t.TempDir()
	writeRuns(t, oldDir, "nohost", "local", runsOf("", 21.0, 21.1, 20.9, 21.2, 20.95))
	writeRuns(t, newDir, "nohost", "local", runsOf("", 21.05, 20.98, 21.15, 20.92, 21.02))
	old, err := Load(oldDir)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := Load(newDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		trustedOnly bool
		verdict     Verdict
		note, host  string
	}{
		{false, Same, "", ""},
		{true, TooFewTrusted, "old has 0 trusted of 5 runs (5 not measured), new has 0 trusted of 5 runs (5 not measured); 0+0 runs cannot reach p < 0.05",
			"nohost: old host not measured, new host not measured: NOT COMPARED"},
	} {
		c, err := CompareWith(old, cur, Options{Alpha: DefaultAlpha, TrustedOnly: tc.trustedOnly})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(c.Rows, func(r Row) bool { return r.Name == "nohost/latency.mean.before.D1" })
		if r := c.Rows[i]; r.Verdict != tc.verdict || !strings.Contains(r.Note, tc.note) {
			t.Errorf("trusted-only %v: %s (%s), want %s (%s)", tc.trustedOnly, r.Verdict, r.Note, tc.verdict, tc.note)
		}
		var text bytes.Buffer
		if err := c.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(text.String(), "host (runs") != (tc.host != "") || !strings.Contains(text.String(), tc.host) {
			t.Errorf("trusted-only %v: want host line %q:\n%s", tc.trustedOnly, tc.host, text.String())
		}
	}
}
