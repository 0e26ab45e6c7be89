package campaign

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	stdhtml "html"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/runner"
	"github.com/polebench/polebench/spec"
)

// TestBadCampaigns loads every testdata/bad/X.yaml and expects the error to start
// with X.want (the part that names file, line and field).
func TestBadCampaigns(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad campaigns: %v", err)
	}
	for _, f := range files {
		want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".want")
		if err != nil {
			t.Fatal(err)
		}
		_, err = Load(f)
		if err == nil || !strings.HasPrefix(err.Error(), strings.TrimSpace(string(want))) {
			t.Errorf("%s:\n got: %v\nwant: %s...", f, err, strings.TrimSpace(string(want)))
		}
	}
}

func TestGrid(t *testing.T) {
	c, err := Parse("g.yaml", []byte("name: g\nspec: two-dc\nvary:\n  - {field: preload-mb, values: [\"0\", \"50\"]}\n  - {field: oracle, values: [history, rotating, latency]}\nrepetitions: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	pts := c.Points()
	if len(pts) != 6 {
		t.Fatalf("%d points, want 2 x 3", len(pts))
	}
	var got []string
	for _, p := range pts {
		got = append(got, p.Dir())
	}
	want := []string{"001,preload-mb=0,oracle=history", "002,preload-mb=0,oracle=rotating", "003,preload-mb=0,oracle=latency",
		"004,preload-mb=50,oracle=history", "005,preload-mb=50,oracle=rotating", "006,preload-mb=50,oracle=latency"}
	if !slices.Equal(got, want) {
		t.Fatalf("points %q, want %q", got, want)
	}
	sp, err := c.SpecFor(pts[4], 2)
	if err != nil {
		t.Fatal(err)
	}
	if sp.PreloadMB != 50 || sp.Oracle.Name != "rotating" || sp.Repetitions != 1 || sp.Seed != spec.DefaultSeed+1 {
		t.Fatalf("spec of point 5 rep 2: preload %d, oracle %s, repetitions %d, seed %d", sp.PreloadMB, sp.Oracle.Name, sp.Repetitions, sp.Seed)
	}
}

// TestAggregateIntervals: aggregate.json's interval is gonum's Student-t quantile.
func TestAggregateIntervals(t *testing.T) {
	c := &Campaign{Name: "a", Spec: "two-dc", Vary: []Axis{{Field: "oracle", Values: []string{"history"}}}, Repetitions: 5}
	var rows []Row
	for i, v := range []float64{30, 31, 29, 32, 28} {
		rows = append(rows, Row{Point: c.Points()[0], Rep: i + 1, Metrics: map[string]float64{"m": v}})
	}
	agg, err := Aggregate(c, rows)
	if err != nil {
		t.Fatal(err)
	}
	a := agg[0].Metrics["m"]
	// mean 30, sd sqrt(2.5), t(0.975, 4) = 2.776
	h := analysis.TQuantile(0.975, 4) * math.Sqrt(2.5) / math.Sqrt(5)
	if a.N != 5 || a.Mean != 30 || a.CI95 == nil || math.Abs(a.CI95.HalfWidth-h) > 1e-12 || math.Abs(h-1.9632) > 1e-3 {
		t.Fatalf("aggregate %+v, want mean 30 ± %.4f", a, h)
	}
}

func TestFlatten(t *testing.T) {
	m, err := Flatten([]byte(`{"new_leader":4,"election_ms":231.5,"recovery_ms":null,"election_zxids":{"1":7},
		"latency_ms":{"after":{"D1":{"mean":42.5,"model_ms":41.5}}},"warnings":["x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"new_leader": 4, "election_ms": 231.5, "latency_ms.after.D1.mean": 42.5, "latency_ms.after.D1.model_ms": 41.5}
	if len(m) != len(want) {
		t.Fatalf("flattened %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
}

// shortCampaign is a real campaign of short runs on the local backend: two-dc, 8 s
// runs with the crash at 4 s, history and rotating.
func shortCampaign(t *testing.T) *Campaign {
	t.Helper()
	if testing.Short() {
		t.Skip("real runs; -short skips them")
	}
	c, err := Parse("short.yaml", []byte(`name: short
claim: "rotating elects p1, history p4."
spec: two-dc
settings: [duration=8s, crash-at=4s, warmup=1s, rate=100]
vary:
  - {field: oracle, values: [history, rotating]}
repetitions: 2
plot: {x: oracle, metrics: [latency_ms.before.all.mean, election_ms]}
expect: {metric: new_leader, higher: history, lower: rotating}
`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// historyWinner is whom history elects in the run in runDir, by the model's own
// election over the zxids its servers proposed: p4, unless a proposal in flight at the
// kill put another ahead (it reached p3 but not p4, say).
func historyWinner(t *testing.T, sp *spec.Spec, runDir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum analysis.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	leader, err := sp.HistoryElects(sum.ElectionZxids)
	if err != nil {
		t.Fatal(err)
	}
	if leader != 4 {
		t.Logf("%s: servers out of sync at the crash (%v): history must elect p%d", runDir, sum.ElectionZxids, leader)
	}
	// As in runner's tests: a winner as up to date as the tie-by-id choice is right;
	// which of them wins is a timing claim, the simulator's (TestSimWinners).
	if z, ok := sum.ElectionZxids[sum.NewLeader]; ok && sum.NewLeader != leader && z == sum.ElectionZxids[leader] {
		t.Logf("%s: p%d elected, as up to date as p%d (zxids %v)", runDir, sum.NewLeader, leader, sum.ElectionZxids)
		return sum.NewLeader
	}
	return leader
}

// TestRunResumeAndFigures runs a real campaign, interrupts it after its first run,
// resumes it (the finished run is not run again), then checks results.csv,
// aggregate.json, the figures and the report.
func TestRunResumeAndFigures(t *testing.T) {
	c := shortCampaign(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	var ran []string
	runOne := func(ctx context.Context, sp *spec.Spec, rd string) error {
		ran = append(ran, rd)
		defer cancel() // the first run finishes, then the campaign is interrupted
		return defaultRunOne(ctx, sp, rd)
	}
	err := Run(ctx, c, Options{Dir: dir, RunOne: runOne})
	if err == nil || !strings.Contains(err.Error(), "interrupted: 1 of 4 runs done") {
		t.Fatalf("interrupted campaign: %v", err)
	}
	first := ran[0]
	ran = nil
	var progress bytes.Buffer
	if err := Run(t.Context(), c, Options{Dir: dir, Progress: &progress, RunOne: func(ctx context.Context, sp *spec.Spec, rd string) error {
		ran = append(ran, rd)
		return defaultRunOne(ctx, sp, rd)
	}}); err != nil {
		t.Fatal(err)
	}
	if len(ran) != 3 || slices.Contains(ran, first) {
		t.Fatalf("resumed campaign ran %q (the first run was %s)", ran, first)
	}
	if !strings.Contains(progress.String(), "1 of 4 runs already done: resuming") || strings.ContainsAny(progress.String(), "\r\033") {
		t.Errorf("progress when piped:\n%s", progress.String())
	}

	changed := *c
	changed.Settings = append(slices.Clone(c.Settings), "preload-mb=5")
	if err := Run(t.Context(), &changed, Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "use another directory") {
		t.Errorf("a campaign with other settings reused the runs: %v", err)
	}

	f, err := os.Open(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 {
		t.Fatalf("results.csv has %d lines, want a header and 4 runs", len(recs))
	}
	head := recs[0]
	for _, col := range []string{"point", "rep", "oracle", "new_leader", "election_ms", "recovery_ms", "latency_ms.before.all.mean", "latency_ms.before.D1.model_ms", "lost_acknowledged_writes"} {
		if !slices.Contains(head, col) {
			t.Errorf("results.csv lacks column %s: %v", col, head)
		}
	}
	leader := slices.Index(head, "new_leader")
	points := c.Points()
	for _, r := range recs[1:] {
		want := map[string]string{"history": "4", "rotating": "1"}[r[2]]
		if r[2] == "history" {
			pi, _ := strconv.Atoi(r[0])
			rep, _ := strconv.Atoi(r[1])
			sp, err := c.SpecFor(points[pi-1], rep)
			if err != nil {
				t.Fatal(err)
			}
			want = strconv.Itoa(historyWinner(t, sp, RunDir(dir, points[pi-1], rep)))
		}
		if r[leader] != want {
			t.Errorf("%s elected p%s, want p%s", r[2], r[leader], want)
		}
	}
	var agg []PointAggregate
	b, err := os.ReadFile(filepath.Join(dir, "aggregate.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &agg); err != nil {
		t.Fatal(err)
	}
	if len(agg) != 2 || agg[0].Metrics["latency_ms.before.all.mean"].N != 2 || agg[0].Metrics["latency_ms.before.all.mean"].CI95 == nil {
		t.Fatalf("aggregate.json: %s", b)
	}

	figs, err := Draw(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	// Bars of the latency before the crash and of the election time per oracle, and
	// the evidence: one run over time and its percentiles.
	var kinds []string
	for _, f := range figs {
		kinds = append(kinds, f.Kind)
	}
	if want := []string{KindBars, KindBars, KindTimeline, KindPercentiles}; !slices.Equal(kinds, want) {
		t.Fatalf("figures %q, want %q", kinds, want)
	}
	for _, fig := range figs {
		for _, name := range []string{fig.PNG, fig.SVG} {
			st, err := os.Stat(filepath.Join(dir, name))
			if err != nil || st.Size() < 1000 {
				t.Errorf("figure %s: %v", name, err)
			}
		}
	}
	r, err := BuildReport([]string{dir}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMarkdown(dir); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "## short") || !strings.Contains(string(md), "This run: ") || !strings.Contains(string(md), "![short](short-latency_ms_before_all_mean.png)") {
		t.Errorf("report.md:\n%s", md)
	}
	t.Run("browser", func(t *testing.T) {
		checkInBrowser(t, filepath.Join(dir, "report.html"), browserWant{images: 4, rows: 0, sections: 1})
	})
}

func defaultRunOne(ctx context.Context, sp *spec.Spec, dir string) error {
	return RunSpec(ctx, sp, dir, nil)
}

// browserWant is what a reader must see in the report.
type browserWant struct {
	images   int // figures, every one loaded
	rows     int // rows of the paper's numbers
	sections int // figure sections, each with its time series and percentiles loaded
}

// checkInBrowser renders the report in headless Chromium as a reader would: every
// figure must load (its naturalWidth is checked by the page's own script), the table
// must have its rows, no axis or title reads as a metric key, every figure section
// shows its evidence (one run over time, its percentiles), and a screenshot is taken
// (kept when POLEBENCH_KEEP_SCREENSHOT names a path, to look at). It returns the DOM.
func checkInBrowser(t *testing.T, html string, want browserWant) string {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no chromium: make deps installs Debian's chromium, and CI runs it")
		}
		t.Skip("no chromium (make deps installs it)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--virtual-time-budget=5000"}
	dom, err := exec.CommandContext(ctx, bin, append(flags, "--dump-dom", "file://"+html)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("chromium --dump-dom: %v: %s", err, ee.Stderr)
		}
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	page := string(dom)
	if !strings.Contains(page, `data-images-ok="`) {
		t.Fatalf("the page's check did not run: %.300s", page)
	}
	if !strings.Contains(page, `data-images-broken="0"`) || !strings.Contains(page, `data-images-ok="`+itoa(want.images)+`"`) {
		i := strings.Index(page, "<body")
		t.Errorf("figures in the browser, want %d loaded: %.200s", want.images, page[i:])
	}
	if n := strings.Count(page, `data-loaded="1"`); n != want.images {
		t.Errorf("%d images loaded, want %d", n, want.images)
	}
	if rows := strings.Count(page, `<tr class="number`); rows != want.rows {
		t.Errorf("the numbers table has %d rows in the browser, want %d", rows, want.rows)
	}
	labels := regexp.MustCompile(`data-(?:x-label|y-label|title)="([^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(labels) != 3*want.images {
		t.Errorf("%d axis labels and titles for %d figures, want 3 each", len(labels), want.images)
	}
	for _, l := range labels {
		if v := stdhtml.UnescapeString(l[1]); v == "" || looksLikeKey(v) {
			t.Errorf("a figure's axis or title reads %q: a metric key, not words", v)
		}
	}
	sections := regexp.MustCompile(`<section [^>]*class="campaign"[^>]*>`).FindAllString(page, -1)
	if len(sections) != want.sections {
		t.Errorf("%d figure sections, want %d", len(sections), want.sections)
	}
	kinds := regexp.MustCompile(`data-loaded-kinds="([^"]*)"`)
	for _, sec := range sections {
		m := kinds.FindStringSubmatch(sec)
		if m == nil || !slices.Contains(strings.Split(m[1], ","), KindTimeline) || !slices.Contains(strings.Split(m[1], ","), KindPercentiles) {
			t.Errorf("section %s: the time series and the percentiles must both load", sec)
		}
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	if p := os.Getenv("POLEBENCH_KEEP_SCREENSHOT"); p != "" {
		shot = p
	}
	if out, err := exec.CommandContext(ctx, bin, append(flags, "--window-size=1300,2400", "--screenshot="+shot, "file://"+html)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v: %s", err, out)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 20000 {
		t.Errorf("screenshot %s: %v (a blank page is a few kB)", shot, err)
	}
	return page
}

// looksLikeKey says whether a label reads as a metric key rather than words:
// latency_ms.after.all.mean, recovery_ms.
func looksLikeKey(s string) bool {
	if strings.Contains(s, "_ms") || strings.Contains(s, "latency_") || strings.Contains(s, "model_ms") {
		return true
	}
	for _, w := range strings.Fields(s) {
		w = strings.Trim(w, "().,:;")
		if strings.Count(w, ".") >= 2 && strings.IndexFunc(w, func(r rune) bool { return r >= 'a' && r <= 'z' }) >= 0 {
			return true
		}
	}
	return false
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestSimCampaignInParallel: a simulated campaign's runs go two at a time on two
// cores, and write the results.csv they write one at a time (GOMAXPROCS 1).
func TestSimCampaignInParallel(t *testing.T) {
	c := shortCampaign(t)
	c.Settings = append(c.Settings, "backend=sim")
	results := map[int][]byte{}
	for _, procs := range []int{1, 2} {
		prev := runtime.GOMAXPROCS(procs)
		sp, err := c.SpecFor(c.Points()[0], 1)
		if err != nil {
			t.Fatal(err)
		}
		if w := runner.Parallelism(0, sp); w != procs {
			t.Fatalf("GOMAXPROCS %d: runner.Parallelism says %d (the memory this machine has available bounds it)", procs, w)
		}
		var running, most atomic.Int32
		second := make(chan struct{})
		var calls atomic.Int32
		dir := t.TempDir()
		err = Run(t.Context(), c, Options{Dir: dir, RunOne: func(ctx context.Context, sp *spec.Spec, rd string) error {
			now := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			switch calls.Add(1) {
			case 1:
				if procs > 1 {
					select { // the second run starts while the first runs
					case <-second:
					case <-time.After(20 * time.Second):
						t.Errorf("GOMAXPROCS %d: the second run did not start beside the first", procs)
					}
				}
			case 2:
				close(second)
			}
			return defaultRunOne(ctx, sp, rd)
		}})
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		if m := int(most.Load()); m != procs {
			t.Errorf("GOMAXPROCS %d: %d runs at once", procs, m)
		}
		if results[procs], err = os.ReadFile(filepath.Join(dir, "results.csv")); err != nil {
			t.Fatal(err)
		}
		if procs == 2 {
			checkAnalyze(t, dir)
		}
	}
	if !bytes.Equal(results[1], results[2]) {
		t.Errorf("results.csv one at a time:\n%s\ntwo at a time:\n%s", results[1], results[2])
	}
}

// TestPlotSVGDeterministic: a figure with the paper's crosses draws the same SVG every
// time (the crosses were once drawn in a map's order).
func TestPlotSVGDeterministic(t *testing.T) {
	c, err := Shipped("fig7b-dep1")
	if err != nil {
		t.Fatal(err)
	}
	var rows []Row
	for i, p := range c.Points() {
		rows = append(rows, Row{Point: p, Rep: 1, Metrics: map[string]float64{NewLeader: float64(1 + i%4),
			"latency_ms.after.all.mean": 50 + float64(i), "latency_ms.after.all.model_ms": 49 + float64(i)}})
	}
	dir := t.TempDir()
	var first []byte
	for i := range 10 {
		f, err := c.drawLines(dir, rows, "latency_ms.after.all.mean", "t", "fig")
		if err != nil || f == nil {
			t.Fatalf("plot: %v", err)
		}
		b, err := os.ReadFile(filepath.Join(dir, f.SVG))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("the paper")) {
			t.Fatal("the figure has no paper values: the check would check nothing")
		}
		if i == 0 {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Fatalf("drawing %d differs from the first", i)
		}
	}
}

// TestHostTrusted: results.csv gets each run's host_trusted (1, 0, or empty for a run
// that measured no host), and the points and the report count the trusted runs.
func TestHostTrusted(t *testing.T) {
	// Named fig4b so the report's table has the paper's numbers at both points.
	c, err := Parse("host.yaml", []byte(`name: fig4b
spec: two-dc
vary:
  - {field: oracle, values: [history, rotating]}
repetitions: 3
`))
	if err != nil {
		t.Fatal(err)
	}
	T, D, U := analysis.Trusted, analysis.Degraded, analysis.Untrusted
	tests := []struct {
		name     string
		verdicts map[string][]string // oracle -> each rep's "after" verdict; "": no host
		column   []string            // host_trusted of the rows, in order; nil: no such column
		points   []analysis.HostRuns
		line     string
	}{
		{"all trusted", map[string][]string{"history": {T, T, T}, "rotating": {T, T, T}}, []string{"1", "1", "1", "1", "1", "1"},
			[]analysis.HostRuns{{Runs: 3, Measured: 3, Trusted: 3}, {Runs: 3, Measured: 3, Trusted: 3}},
			"host (runs with every window trusted): trusted 6/6"},
		{"a busy point", map[string][]string{"history": {T, T, T}, "rotating": {T, U, D}}, []string{"1", "1", "1", "1", "0", "0"},
			[]analysis.HostRuns{{Runs: 3, Measured: 3, Trusted: 3}, {Runs: 3, Measured: 3, Trusted: 1}},
			"host (runs with every window trusted): trusted 4/6; point 2 (oracle=rotating) trusted 1/3"},
		{"a run from before the meter", map[string][]string{"history": {T, "", T}, "rotating": {T, T, T}}, []string{"1", "", "1", "1", "1", "1"},
			[]analysis.HostRuns{{Runs: 3, Measured: 2, Trusted: 2}, {Runs: 3, Measured: 3, Trusted: 3}},
			"host (runs with every window trusted): trusted 5/5, 1 not measured; point 1 (oracle=history) trusted 2/2, 1 not measured"},
		{"simulated", map[string][]string{"history": {"", "", ""}, "rotating": {"", "", ""}}, nil,
			[]analysis.HostRuns{{Runs: 3}, {Runs: 3}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			err := Run(t.Context(), c, Options{Dir: dir, RunOne: func(_ context.Context, sp *spec.Spec, rd string) error {
				rep, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(rd), "rep"))
				s := &analysis.Summary{NewLeader: 4, LatencyMS: map[string]map[string]analysis.LatencyStats{"before": {"D1": {Count: 1, Mean: 21}}}}
				if v := tc.verdicts[sp.Oracle.Name][rep-1]; v != "" {
					s.Host = map[string]*analysis.HostWindow{"before": {Verdict: T}, "after": {Verdict: v}}
				}
				if err := os.MkdirAll(rd, 0o755); err != nil {
					return err
				}
				return s.WriteFile(filepath.Join(rd, "summary.json"))
			}})
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(filepath.Join(dir, "results.csv"))
			if err != nil {
				t.Fatal(err)
			}
			recs, err := csv.NewReader(f).ReadAll()
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			if col := slices.Index(recs[0], HostTrusted); col >= 0 {
				for _, r := range recs[1:] {
					got = append(got, r[col])
				}
			}
			if !slices.Equal(got, tc.column) {
				t.Errorf("results.csv %s %v, want %v (header %v)", HostTrusted, got, tc.column, recs[0])
			}
			rows, err := ReadResults(dir, c)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range c.Points() {
				if h := PointHost(rows, p); h != tc.points[i] {
					t.Errorf("point %d: %+v, want %+v", p.Index, h, tc.points[i])
				}
			}
			if l := HostLine(c, rows); l != tc.line {
				t.Errorf("host line %q, want %q", l, tc.line)
			}
			r, err := BuildReport([]string{dir}, "test")
			if err != nil {
				t.Fatal(err)
			}
			if err := r.WriteMarkdown(dir); err != nil {
				t.Fatal(err)
			}
			md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
			if strings.Contains(string(md), "host (") != (tc.line != "") || !strings.Contains(string(md), tc.line) {
				t.Errorf("report.md, want %q:\n%s", tc.line, md)
			}
			matched := 0
			for _, l := range strings.Split(string(md), "\n") {
				if i := slices.IndexFunc(c.Points(), func(p Point) bool { return strings.Contains(l, "after the crash, "+p.Value("oracle")) }); i >= 0 {
					matched++
					if want := "| " + tc.points[i].String() + " | [1]("; !strings.Contains(l, want) {
						t.Errorf("report.md row %q, want its host column %q and the runs linked", l, want)
					}
				}
			}
			if matched != 2 {
				t.Errorf("report.md has %d of the paper's rows after the crash, want 2:\n%s", matched, md)
			}
		})
	}
}

// checkAnalyze: the campaign in dir, its runs' analysis files and results.csv removed,
// analysed again (polebench analyze), writes every one of them back byte for byte.
func checkAnalyze(t *testing.T, dir string) {
	t.Helper()
	analysed := func(name string) bool {
		return name == "summary.json" || name == "results.csv" || name == "timeseries.csv" || strings.HasPrefix(name, "hdr-")
	}
	want := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !analysed(d.Name()) {
			return err
		}
		b, err := os.ReadFile(path)
		want[path] = b
		if err == nil {
			err = os.Remove(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 3 {
		t.Fatalf("%d analysis files in the campaign", len(want))
	}
	if _, err := Analyze(dir, nil); err != nil {
		t.Fatal(err)
	}
	for path, b := range want {
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s: analyze wrote another one (%v)", path, err)
		}
	}
}
