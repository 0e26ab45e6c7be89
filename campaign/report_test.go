package campaign

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/spec"
)

// TestModelTies: the winner column's ties are the model's servers whose scores lie
// within the links' jitter of the winner's (docs/paper-facts.md has the scores).
func TestModelTies(t *testing.T) {
	for _, tc := range []struct {
		campaign, p, oracle string
		want                []int
	}{
		{"fig7b-dep1", "0", "latency", []int{2, 3, 4}}, // theta_l 14.845 (p2, p3) vs 14.820 (p4): 0.025 ms apart
		{"fig7b-dep1", "1", "latency", []int{1}},       // 53.26 vs 63.14: no tie
		{"fig7b-dep1", "0", "worst-case", []int{2, 3}}, // theta_w 63.14 twice, p4 86.94
		{"fig7b-dep3", "1", "consensus", []int{2, 3, 4}},
		{"fig7b-dep1", "0", "rotating", []int{1}},
		{"fig7b-dep3", "1", "history", []int{4}}, // ties broken by id: no measurement decides
	} {
		c, err := Shipped(tc.campaign)
		if err != nil {
			t.Fatal(err)
		}
		var sp *spec.Spec
		for _, p := range c.Points() {
			if p.Value("p") == tc.p && p.Value("oracle") == tc.oracle {
				if sp, err = c.SpecFor(p, 1); err != nil {
					t.Fatal(err)
				}
			}
		}
		if sp == nil {
			t.Fatalf("%s has no point p=%s oracle=%s", tc.campaign, tc.p, tc.oracle)
		}
		ties, err := ModelTies(sp)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ties.Servers, tc.want) || !slices.Contains(tc.want, ties.Model) {
			t.Errorf("%s p=%s %s: ties %v (model p%d), want %v", tc.campaign, tc.p, tc.oracle, ties.Servers, ties.Model, tc.want)
		}
	}
	// Within the reach, a run electing any of them reads as a tie; outside, as a miss.
	c, _ := Shipped("fig7b-dep1")
	var pt Point
	for _, p := range c.Points() {
		if p.Value("p") == "0" && p.Value("oracle") == "latency" {
			pt = p
		}
	}
	for leader, want := range map[int]string{2: "tie: p2/p3/p4, p2 elected", 4: "tie: p2/p3/p4, p4 elected", 1: "no: p1 elected, model tie p2/p3/p4"} {
		g := Group{Point: pt, Leader: leader, Rows: []Row{{Point: pt, Rep: 1}}, Of: 1}
		if got, _, err := c.Winner("", g); err != nil || got != want {
			t.Errorf("latency at p = 0 electing p%d: %q (%v), want %q", leader, got, err, want)
		}
	}
}

// splitCampaign is Fig. 7b, Deployment 3, at p = 1, with consensus and latency: the
// point where consensus ties p2, p3 and p4 and repetitions elect different leaders.
func splitCampaign(t *testing.T) *Campaign {
	t.Helper()
	c, err := Parse("split.yaml", []byte(`name: fig7b-dep3
spec: three-dc-dep3
settings: [duration=30s, crash-at=15s, backend=sim]
vary:
  - {field: p, values: ["1"]}
  - {field: oracle, values: [consensus, latency]}
repetitions: 5
plot: {x: p, series: oracle, metrics: [latency_ms.after.all.mean]}
expect: {metric: latency_ms.after.all.mean, higher: consensus, lower: latency}
`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSplitWinners: repetitions of one point that elected different leaders (consensus
// electing p2 three times and p4 twice) are a row and a point each, with their count;
// no table row, figure point or verdict holds their mean.
func TestSplitWinners(t *testing.T) {
	c := splitCampaign(t)
	dir := t.TempDir()
	// What a leader gives at p = 1 in Deployment 3 (the model: p2 53.3 ms, p4 106.5).
	lat := map[int]float64{2: 54, 3: 54.2, 4: 107}
	model := map[int]float64{2: 53.31, 3: 53.31, 4: 106.52}
	elects := map[string][]int{"consensus": {2, 4, 2, 4, 2}, "latency": {3, 3, 3, 3, 3}}
	err := Run(t.Context(), c, Options{Dir: dir, RunOne: func(_ context.Context, sp *spec.Spec, rd string) error {
		rep, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(rd), "rep"))
		l := elects[sp.Oracle.Name][rep-1]
		m := model[l]
		s := &analysis.Summary{NewLeader: l, LatencyMS: map[string]map[string]analysis.LatencyStats{
			"after": {"all": {Count: 100, Mean: lat[l] + float64(rep)/10, ModelMS: &m}}}}
		if err := os.MkdirAll(rd, 0o755); err != nil {
			return err
		}
		return s.WriteFile(filepath.Join(rd, "summary.json"))
	}})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ReadResults(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	// The mean no leader gives: consensus over its five runs.
	var all []float64
	for _, r := range rows {
		if r.Point.Value("oracle") == "consensus" {
			all = append(all, r.Metrics["latency_ms.after.all.mean"])
		}
	}
	blend, _ := analysis.Aggregate(all)
	near := func(v float64) bool { return math.Abs(v-blend.Mean) < 1 }

	r, err := BuildReport([]string{dir}, "test")
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		leader, n int
		mean      float64
		winner    string
	}
	wants := map[string][]want{
		"Fig. 7b: Dep. 3, p = 1, consensus": {{2, 3, 54 + 0.3, "tie: p2/p3/p4, p2 elected"}, {4, 2, 107 + 0.3, "tie: p2/p3/p4, p4 elected"}},
		"Fig. 7b: Dep. 3, p = 1, latency":   {{3, 5, 54.2 + 0.3, "tie: p2/p3, p3 elected"}},
	}
	got := map[string][]want{}
	for _, row := range r.Rows {
		if row.Measured == nil || row.Group == nil {
			t.Fatalf("row %q not measured", row.Setting())
		}
		if near(row.Measured.Mean) {
			t.Errorf("row %q holds %.1f, the mean across leaders", row.Setting(), row.Measured.Mean)
		}
		got[row.What] = append(got[row.What], want{row.Group.Leader, row.Measured.N, math.Round(row.Measured.Mean*10) / 10, row.Winner})
		if row.Group.Split() && !strings.Contains(row.Setting(), fmt.Sprintf("p%d in %d of 5 runs", row.Group.Leader, row.Measured.N)) {
			t.Errorf("row %q does not name its leader and count", row.Setting())
		}
		if m := *row.Model; m != model[row.Group.Leader] {
			t.Errorf("row %q: model %.2f, want the elected p%d's %.2f", row.Setting(), m, row.Group.Leader, model[row.Group.Leader])
		}
	}
	for what, w := range wants {
		if !slices.Equal(got[what], w) {
			t.Errorf("%s: rows %+v, want %+v", what, got[what], w)
		}
	}
	if !strings.Contains(r.Sections[0].Verdict, "consensus (p2 in 3 of 5 runs) 54.3 vs latency 54.5") ||
		!strings.Contains(r.Sections[0].Verdict, "consensus (p4 in 2 of 5 runs) 107.3 vs latency 54.5") {
		t.Errorf("verdict %q, want each leader's runs compared apart", r.Sections[0].Verdict)
	}

	// The figure: a point per leader at consensus, p = 1, none at the blend.
	var fig *Figure
	for i, f := range r.Sections[0].Figures {
		if f.Kind == KindLines {
			fig = &r.Sections[0].Figures[i]
		}
	}
	if fig == nil {
		t.Fatalf("no line figure: %+v", r.Sections[0].Figures)
	}
	var consensus []string
	for _, s := range fig.Spots {
		if strings.Contains(s.Title, "oracle=consensus") {
			consensus = append(consensus, s.Title)
		}
		if m := regexp.MustCompile(`data centers ([0-9.]+) `).FindStringSubmatch(s.Title); m != nil {
			if v, _ := strconv.ParseFloat(m[1], 64); near(v) {
				t.Errorf("a point at the mean across leaders: %q", s.Title)
			}
		}
	}
	slices.Sort(consensus)
	if len(consensus) != 2 || !strings.Contains(consensus[0], "p2 in 3 of 5 runs elected") || !strings.Contains(consensus[0], "54.3 [") ||
		!strings.Contains(consensus[1], "p4 in 2 of 5 runs elected") || !strings.Contains(consensus[1], "107.3 [") {
		t.Errorf("consensus's points %q, want one for p2 (3 runs) and one for p4 (2 runs)", consensus)
	}
	svg, err := os.ReadFile(filepath.Join(dir, fig.SVG))
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"p2: 3 of 5", "p4: 2 of 5", "runs that elected another leader"} {
		if !bytes.Contains(svg, []byte(label)) {
			t.Errorf("the figure does not say %q", label)
		}
	}
	// The points table: a row per leader.
	var pts []string
	for _, pr := range r.Sections[0].Points {
		pts = append(pts, fmt.Sprintf("%s %s %d", pr.Point.Value("oracle"), pr.Group.Who(), len(pr.Runs)))
	}
	if w := []string{"consensus p2 in 3 of 5 runs 3", "consensus p4 in 2 of 5 runs 2", "latency p3 5"}; !slices.Equal(pts, w) {
		t.Errorf("the figures' data %q, want %q", pts, w)
	}
	if r.Overview.Split != 1 {
		t.Errorf("overview: %d split points, want 1", r.Overview.Split)
	}
	// Without the evidence run's files, the report says so instead of failing.
	if r.Sections[0].Evidence == "" || !strings.Contains(r.Sections[0].Evidence, "timeseries.csv") {
		t.Errorf("the section's evidence note %q, want it to name the missing file", r.Sections[0].Evidence)
	}
}

// TestPipedProgress: piped, a campaign prints one line per finished run with its ETA,
// and never "ETA ?" (or no ETA) once a run has finished, across the figures of a
// reproduction too (their runs share one tally).
func TestPipedProgress(t *testing.T) {
	var out bytes.Buffer
	c1, c2 := splitCampaign(t), splitCampaign(t)
	c2.Name = "second"
	c1.Repetitions, c2.Repetitions = 2, 3
	tally := progress.NewTally(4 + 6)
	dirs := []string{filepath.Join(t.TempDir(), "first"), filepath.Join(t.TempDir(), "second")}
	fail := true
	runOne := func(_ context.Context, sp *spec.Spec, rd string) error {
		time.Sleep(20 * time.Millisecond)
		if fail && strings.HasPrefix(rd, dirs[1]) {
			fail = false
			return errors.New("planted failure")
		}
		if err := os.MkdirAll(rd, 0o755); err != nil {
			return err
		}
		return (&analysis.Summary{NewLeader: 4}).WriteFile(filepath.Join(rd, "summary.json"))
	}
	for i, c := range []*Campaign{c1, c2} {
		err := Run(t.Context(), c, Options{Dir: dirs[i], Progress: &out, RunOne: runOne, Tally: tally, Jobs: 1})
		if (err != nil) != (i == 1) {
			t.Fatalf("campaign %d: %v", i, err)
		}
	}
	text := out.String()
	if strings.ContainsAny(text, "\r\033") {
		t.Fatalf("piped progress has control characters: %q", text)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	finished, seen := 0, false
	eta := regexp.MustCompile(`campaign ETA [0-9hms.]+; all: \d+ of 10 runs, ETA [0-9hms.]+$`)
	for _, l := range lines {
		done := strings.Contains(l, " done: ") || strings.Contains(l, " failed: ")
		if done {
			finished++
			if !eta.MatchString(l) {
				t.Errorf("a finished run's line without the ETAs: %q", l)
			}
			if strings.Contains(l, " done: ") && !strings.Contains(l, "elected p4") {
				t.Errorf("a finished run's line does not say whom it elected: %q", l)
			}
		}
		if seen && (strings.Contains(l, "ETA ?") || strings.Contains(l, "after the first")) {
			t.Errorf("after the first finished run: %q", l)
		}
		seen = seen || done
	}
	if finished != 10 {
		t.Errorf("%d lines of finished runs, want 10 (one per run):\n%s", finished, text)
	}
	if !strings.Contains(text, "[second] run 1 of 6 failed: ") {
		t.Errorf("the planted failure is not reported:\n%s", text)
	}
}

// TestLabels: every metric and field the shipped campaigns plot reads as words with a
// unit, never as a key.
func TestLabels(t *testing.T) {
	for _, name := range append(slices.Clone(Figures), Placements...) {
		c, err := Shipped(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, fs := range c.figSpecs() {
			if l := yLabel(fs.metrics); looksLikeKey(l) || !strings.HasSuffix(l, "(ms)") {
				t.Errorf("%s: y axis %q", name, l)
			}
		}
		for _, a := range c.Vary {
			if l := FieldLabel(a.Field, a.Values); looksLikeKey(l) || l == a.Field && a.Field != "oracle" {
				t.Errorf("%s: x axis %q for %s", name, l, a.Field)
			}
		}
	}
	for metric, want := range map[string]string{
		"latency_ms.after.D3.mean":    "mean latency after the crash, D3 (ms)",
		"latency_ms.before.all.p99":   "99th percentile latency before the crash, all data centers (ms)",
		"recovery_ms":                 "recovery time (ms)",
		"send_lag_ms.p99":             "send lag p99 (ms)",
		"latency_ms.after.all.failed": "failed requests after the crash, all data centers",
	} {
		if got := MetricLabel(metric); got != want {
			t.Errorf("MetricLabel(%s) = %q, want %q", metric, got, want)
		}
	}
	if got := FieldLabel("rtt", []string{"D1-D2=10", "D1-D2=77.06"}); got != "RTT between D1 and D2 (ms)" {
		t.Errorf("rtt axis %q", got)
	}
	if pos, ok := numericX("rtt", []string{"D1-D2=10", "D1-D2=77.06"}); !ok || pos["D1-D2=77.06"] != 77.06 {
		t.Errorf("rtt values on a numeric axis: %v %v", pos, ok)
	}
	if _, ok := numericX("oracle", []string{"history", "rotating"}); ok {
		t.Error("oracles placed on a numeric axis")
	}
}

// quickFigures is what each figure of reproduce --quick draws: its result figures'
// kinds (the paper's form: bars for Fig. 6 and 7c, lines over p for 7a and 7b, over
// snapshot size and RTT for 8a and 8b).
var quickFigures = map[string][]string{
	"fig4b": {KindBars, KindBars}, "fig6": {KindBars}, "fig7a": {KindLines}, "fig7b-dep1": {KindLines}, "fig7b-dep3": {KindLines},
	"fig7c": {KindBars}, "fig8a": {KindLines, KindLines}, "fig8a-rtt": {KindLines}, "fig8b": {KindLines},
}

// TestQuickReportInBrowser runs reproduce --quick on the simulator and reads its
// report.html in Chromium: every figure of every section in the paper's form, each
// with its evidence (one run over time, its percentiles), every image loaded, a row
// per number of the paper and leader elected, words on every axis, and no legend that
// says "measured model".
func TestQuickReportInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("38 simulated runs; -short skips them")
	}
	out := t.TempDir()
	var prog bytes.Buffer
	r, err := Reproduce(t.Context(), ReproduceOptions{Out: out, Backend: "sim", Quick: true, Version: "test", Progress: &prog})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(prog.String(), " done: "); n != 38 {
		t.Errorf("%d finished runs in the progress, want 38", n)
	}
	images, rows := 0, 0
	svgText := regexp.MustCompile(`<text[^>]*>([^<]*)</text>`)
	for _, s := range r.Sections {
		var kinds []string
		for _, f := range s.Figures {
			kinds = append(kinds, f.Kind)
			b, err := os.ReadFile(filepath.Join(s.Dir, f.SVG))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range svgText.FindAllSubmatch(b, -1) {
				txt := stdhtmlUnescape(string(m[1]))
				if looksLikeKey(txt) || strings.Contains(txt, "measured model") || strings.Contains(txt, "measured paper") {
					t.Errorf("%s: %s says %q", s.Campaign.Name, f.SVG, txt)
				}
			}
			if f.Run == "" && len(f.Spots) == 0 {
				t.Errorf("%s: %s links no point to a run", s.Campaign.Name, f.PNG)
			}
			for _, sp := range f.Spots {
				if !Done(filepath.Join(s.Dir, sp.Link)) {
					t.Errorf("%s: a point links to %s, not a finished run", s.Campaign.Name, sp.Link)
				}
			}
		}
		want := append(slices.Clone(quickFigures[s.Campaign.Name]), KindTimeline, KindPercentiles)
		if !slices.Equal(kinds, want) {
			t.Errorf("%s: figures %q, want %q", s.Campaign.Name, kinds, want)
		}
		images += len(want)
		// The paper's rows: one per number at a point, per leader its runs elected.
		res, err := ReadResults(s.Dir, s.Campaign)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range paperNumbers {
			if n.Campaign != s.Campaign.Name {
				continue
			}
			leaders := map[float64]bool{}
			for _, row := range res {
				ok := true
				for f, v := range n.At {
					ok = ok && row.Point.Value(f) == v
				}
				if ok {
					leaders[row.Metrics[NewLeader]] = true
				}
			}
			rows += max(1, len(leaders))
		}
	}
	if len(r.Sections) != len(Figures) || rows < len(paperNumbers) {
		t.Fatalf("%d sections, %d paper rows expected: the check would check too little", len(r.Sections), rows)
	}
	checkInBrowser(t, filepath.Join(out, "report.html"), browserWant{images: images, rows: rows, sections: len(Figures)})
}

func stdhtmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#39;", "'", "&quot;", `"`).Replace(s)
}

// TestFinalWindow: the window under the leader a run ended with is the placed one
// where the controller moved the leader, else the after window.
func TestFinalWindow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		m      map[string]float64
		want   float64
		leader float64 // final_leader
	}{
		{"moved", map[string]float64{"latency_ms.after.all.mean": 80, "latency_ms.placed.all.mean": 55, "transfer_ms": 300, "new_leader": 4, "placed_leader": 1}, 55, 1},
		{"kept", map[string]float64{"latency_ms.after.all.mean": 80, "new_leader": 1, "placed_leader": 1}, 80, 1},
		{"none", map[string]float64{"latency_ms.after.all.mean": 80, "new_leader": 4}, 80, 4},
		{"moved, placed window too short", map[string]float64{"latency_ms.after.all.mean": 80, "transfer_ms": 300, "new_leader": 4, "placed_leader": 1}, 0, 1},
	} {
		finalWindow(tc.m)
		if got := tc.m["latency_ms.final.all.mean"]; got != tc.want {
			t.Errorf("%s: final %v, want %v", tc.name, got, tc.want)
		}
		if got := tc.m[FinalLeader]; got != tc.leader {
			t.Errorf("%s: final leader p%v, want p%v", tc.name, got, tc.leader)
		}
	}
}
