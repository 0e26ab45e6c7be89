package benchdata

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/polebench/polebench/analysis"
)

// DefaultAlpha is the significance level of Compare.
const DefaultAlpha = 0.05

// Verdict is what Compare concluded about one metric.
type Verdict string

const (
	Same       Verdict = "~"          // no significant change, or one below the minimum effect
	Improved   Verdict = "improved"   // significant, at least the minimum effect, the better way
	Regressed  Verdict = "REGRESSION" // significant, at least the minimum effect, the worse way
	LostWrites Verdict = "LOST WRITES"
	Missing    Verdict = "MISSING" // measured in old, not in new: the run lost a window or failed
	New        Verdict = "new"     // only in new
	// Changed is a deterministic (simulated) metric whose samples differ at all: the
	// simulation computes something else now. It is reported with both nights'
	// commits and does not fail; a change the worse way by at least the metric's
	// minimum effect is a Regressed instead.
	Changed Verdict = "CHANGED"
	// TooFewTrusted is a metric Options.TrustedOnly left too few runs to compare: it
	// fails, as a Missing does, since nothing was shown about it.
	TooFewTrusted Verdict = "TOO FEW TRUSTED"
	// Moved is a significant change, at least the minimum effect, of a metric that
	// is better neither way (the host's speed): it tells how to read the others, and
	// does not fail.
	Moved Verdict = "moved"
	// HostMade is a significant change, at least the minimum effect, of a metric
	// whose windows the host's verdict trusted on neither side: the host moved the
	// numbers it rests on past their limits (docs/host.md), so the change may be the
	// host's, and it does not fail.
	HostMade Verdict = "host"
)

// Fails says whether the verdict fails the comparison.
func (v Verdict) Fails() bool {
	return v == Regressed || v == LostWrites || v == Missing || v == TooFewTrusted
}

// Row is one metric of a comparison.
type Row struct {
	Name, Unit string
	Better     Better
	Old, New   []float64
	// OldMedian and NewMedian are NaN for a side without samples.
	OldMedian, NewMedian float64
	P                    float64 // two-sided Mann-Whitney U p-value; NaN without a test
	Exact                bool    // P from the exact distribution
	Verdict              Verdict
	Note                 string
}

// Delta is the change of the median relative to the old one (NaN if old is 0).
func (r Row) Delta() float64 {
	if r.OldMedian == 0 {
		return math.NaN()
	}
	return (r.NewMedian - r.OldMedian) / abs(r.OldMedian)
}

// Comparison is the outcome of Compare.
type Comparison struct {
	Alpha    float64
	Rows     []Row
	Old, New Env
	Notes    []string // incomplete experiments, baseline description
	// Fidelity is the new night's verdicts against the entries' goals, shown beside
	// the comparison; they do not change its outcome (nightly fails on a miss).
	Fidelity []Fidelity
	// Hosts counts, per experiment whose runs measured their host (or that
	// TrustedOnly left uncompared), each side's runs by the host's verdict, before any
	// filtering.
	Hosts       []ExperimentHost
	TrustedOnly bool
}

// ExperimentHost is how many runs of an experiment, on each side, the host's
// verdict trusted in every window.
type ExperimentHost struct {
	Experiment string
	Old, New   analysis.HostRuns
	// TooFew says, with TrustedOnly, that the trusted runs left are too few to
	// compare the experiment, naming the side(s) and counts; "" otherwise.
	TooFew string
}

// Options tune CompareWith.
type Options struct {
	Alpha float64
	// TrustedOnly compares only the samples of runs whose every window the host's
	// verdict trusted. A simulated metric (no host) and the lost acknowledged writes
	// (a host cannot lose a write) keep every run. An experiment left with too few
	// trusted runs for the test to reach p < Alpha is not compared: its metrics are
	// TooFewTrusted.
	TrustedOnly bool
}

// Failures counts the rows that fail the comparison.
func (c *Comparison) Failures() int {
	n := 0
	for _, r := range c.Rows {
		if r.Verdict.Fails() {
			n++
		}
	}
	return n
}

// Compare compares every metric of cur with old: a metric regresses when the
// Mann-Whitney U test rejects equal distributions at alpha (two-sided) and the median
// moved the worse way by at least the metric's minimum effect (cur's, as bench.json
// gives it). Any lost acknowledged write in cur fails whatever old says.
func Compare(old, cur *File, alpha float64) (*Comparison, error) {
	return CompareWith(old, cur, Options{Alpha: alpha})
}

// CompareWith is Compare with options.
func CompareWith(old, cur *File, o Options) (*Comparison, error) {
	alpha := o.Alpha
	if alpha <= 0 || alpha >= 1 {
		return nil, fmt.Errorf("benchdata: alpha %v not in (0, 1)", alpha)
	}
	c := &Comparison{Alpha: alpha, Old: old.Env, New: cur.Env, Fidelity: cur.Fidelity, TrustedOnly: o.TrustedOnly}
	tooFew := map[string]string{} // experiment → why it is not compared
	for _, h := range hostCounts(old, cur) {
		if o.TrustedOnly {
			h.TooFew = tooFewTrusted(h.Old, h.New, alpha)
			if h.TooFew != "" {
				tooFew[h.Experiment] = h.TooFew
			}
		}
		// An experiment that measured no host on either side (a bench entry) is shown
		// only when it cannot be compared.
		if h.Old.Measured > 0 || h.New.Measured > 0 || h.TooFew != "" {
			c.Hosts = append(c.Hosts, h)
		}
	}
	if o.TrustedOnly {
		old, cur = trustedOnly(old), trustedOnly(cur)
		c.Notes = append(c.Notes, "--trusted-only: only runs whose every window the host's verdict trusted are compared; simulated metrics and lost acknowledged writes count every run")
	}
	if len(cur.Env.Planted) > 0 {
		c.Notes = append(c.Notes, "new: a planted regression (nightly --set "+strings.Join(cur.Env.Planted, " --set ")+")")
	}
	for _, s := range old.Incomplete {
		c.Notes = append(c.Notes, "old: "+s)
	}
	for _, s := range cur.Incomplete {
		c.Notes = append(c.Notes, "new: "+s)
	}
	byName := map[string][2]*Metric{}
	for i := range old.Metrics {
		m := &old.Metrics[i]
		byName[m.Name] = [2]*Metric{m, byName[m.Name][1]}
	}
	for i := range cur.Metrics {
		m := &cur.Metrics[i]
		byName[m.Name] = [2]*Metric{byName[m.Name][0], m}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		o, n := byName[name][0], byName[name][1]
		r := Row{Name: name, OldMedian: math.NaN(), NewMedian: math.NaN(), P: math.NaN()}
		ref := n
		if ref == nil {
			ref = o
		}
		r.Unit, r.Better = ref.Unit, ref.Better
		if o != nil {
			r.Old, r.OldMedian = o.Samples, Median(o.Samples)
		}
		if n != nil {
			r.New, r.NewMedian = n.Samples, Median(n.Samples)
		}
		switch {
		case Key(name) == LostWritesKey && n != nil && slices.Max(append([]float64{0}, n.Samples...)) > 0:
			r.Verdict = LostWrites
			r.Note = "acknowledged writes were lost"
		case tooFew[experiment(name)] != "" && Key(name) != LostWritesKey && !ref.Deterministic:
			r.Verdict, r.Note = TooFewTrusted, "--trusted-only: "+tooFew[experiment(name)]
		case n == nil || len(n.Samples) == 0:
			r.Verdict = Missing
			r.Note = "not measured in new"
		case o == nil || len(o.Samples) == 0:
			r.Verdict = New
		case ref.Deterministic:
			sameOrChanged(&r, ref.MinEffect, old.Env, cur.Env)
		default:
			if err := judge(&r, ref.MinEffect, alpha); err != nil {
				return nil, fmt.Errorf("benchdata: %s: %w", name, err)
			}
			hostMade(&r, o, n)
		}
		c.Rows = append(c.Rows, r)
	}
	return c, nil
}

// experiment is the part of a metric name before its key.
func experiment(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[:i]
	}
	return ""
}

// hostRuns counts each experiment's runs in f by the host's verdict, from the metric
// with the most samples (every run's summary gives writes_per_s and the lost writes;
// a window's latency only runs that measured the window). A simulated experiment has
// no host to count.
func hostRuns(f *File) map[string]analysis.HostRuns {
	longest := map[string]*Metric{}
	for i := range f.Metrics {
		m := &f.Metrics[i]
		if m.Deterministic {
			continue
		}
		if l := longest[experiment(m.Name)]; l == nil || len(m.Samples) > len(l.Samples) {
			longest[experiment(m.Name)] = m
		}
	}
	out := map[string]analysis.HostRuns{}
	for exp, m := range longest {
		var h analysis.HostRuns
		for i := range m.Samples {
			v := ""
			if i < len(m.Host) {
				v = m.Host[i]
			}
			h.Add(v == analysis.Trusted, v != "")
		}
		out[exp] = h
	}
	return out
}

// hostCounts pairs both sides' host counts per experiment that is not simulated.
func hostCounts(old, cur *File) []ExperimentHost {
	o, n := hostRuns(old), hostRuns(cur)
	exps := maps.Clone(o)
	maps.Copy(exps, n)
	var out []ExperimentHost
	for _, exp := range slices.Sorted(maps.Keys(exps)) {
		out = append(out, ExperimentHost{Experiment: exp, Old: o[exp], New: n[exp]})
	}
	return out
}

// tooFewTrusted says why an experiment whose runs were filtered down to the trusted
// ones cannot be compared, or "" if it can: the filter dropped runs and what is left
// is too few for the test to reach p < alpha (or nothing at all on a side).
func tooFewTrusted(old, cur analysis.HostRuns, alpha float64) string {
	dropped := old.Trusted < old.Runs || cur.Trusted < cur.Runs
	if old.Runs == 0 || cur.Runs == 0 || !dropped || MinP(old.Trusted, cur.Trusted) < alpha {
		return ""
	}
	var sides []string
	for _, s := range []struct {
		name string
		h    analysis.HostRuns
	}{{"old", old}, {"new", cur}} {
		if s.h.Trusted < s.h.Runs {
			side := fmt.Sprintf("%s has %d trusted of %d runs", s.name, s.h.Trusted, s.h.Runs)
			if n := s.h.Runs - s.h.Measured; n > 0 {
				side += fmt.Sprintf(" (%d not measured)", n)
			}
			sides = append(sides, side)
		}
	}
	return fmt.Sprintf("%s; %d+%d runs cannot reach p < %g", strings.Join(sides, ", "), old.Trusted, cur.Trusted, alpha)
}

// trustedOnly is f with only the samples of trusted runs, but for simulated metrics
// (no host) and the lost acknowledged writes (a host cannot lose a write).
func trustedOnly(f *File) *File {
	g := *f
	g.Metrics = make([]Metric, 0, len(f.Metrics))
	for _, m := range f.Metrics {
		if !m.Deterministic && Key(m.Name) != LostWritesKey {
			var samples []float64
			var host []string
			for i, v := range m.Samples {
				if i < len(m.Host) && m.Host[i] == analysis.Trusted {
					samples, host = append(samples, v), append(host, m.Host[i])
				}
			}
			m.Samples, m.Host = samples, host
		}
		g.Metrics = append(g.Metrics, m)
	}
	return &g
}

func judge(r *Row, eff MinEffect, alpha float64) error {
	t, err := MannWhitney(r.Old, r.New)
	if err != nil {
		return err
	}
	r.P, r.Exact = t.P, t.Exact
	r.Verdict = Same
	if MinP(len(r.Old), len(r.New)) >= alpha {
		r.Note = fmt.Sprintf("n too small to reach p < %g", alpha)
		return nil
	}
	if t.P >= alpha {
		return nil
	}
	delta := r.NewMedian - r.OldMedian
	if th := eff.Threshold(r.OldMedian); abs(delta) < th {
		r.Note = fmt.Sprintf("below the minimum effect %s", fmtNum(th, r.Unit))
		return nil
	}
	switch {
	case r.Better == Neither:
		r.Verdict, r.Note = Moved, "better neither way: the host's, not judged"
	case (delta > 0) == (r.Better == Lower):
		r.Verdict = Regressed
	default:
		r.Verdict = Improved
	}
	return nil
}

// hostMade turns a regression or an improvement into HostMade when the host trusted
// none of the metric's samples on either side: for a window's metric its verdict on
// that window, else on the runs. Samples without a host verdict (runs from before the
// meter) count as trusted: nothing says otherwise.
func hostMade(r *Row, old, cur *Metric) {
	if r.Verdict != Regressed && r.Verdict != Improved {
		return
	}
	if trusted(old) == 0 && trusted(cur) == 0 {
		r.Note = fmt.Sprintf("%s; the host's verdict trusted none of either side's windows: the host moved them past its limits", r.Verdict)
		r.Verdict = HostMade
	}
}

// trusted counts m's samples whose window (or run) the host trusted, or that have no
// verdict.
func trusted(m *Metric) int {
	v := m.WindowHost
	if v == nil {
		v = m.Host
	}
	n := 0
	for i := range m.Samples {
		if i >= len(v) || v[i] == "" || v[i] == analysis.Trusted {
			n++
		}
	}
	return n
}

// sameOrChanged judges a deterministic metric: its samples are what the simulation
// computed for fixed seeds, so equal samples are Same and any difference is a change,
// with no test; it fails only as a Regressed (the worse way by the minimum effect).
func sameOrChanged(r *Row, eff MinEffect, old, cur Env) {
	if slices.Equal(r.Old, r.New) {
		r.Verdict, r.Note = Same, "identical (simulated)"
		return
	}
	note := "simulated; " + commits(old, cur)
	delta := r.NewMedian - r.OldMedian
	th := eff.Threshold(r.OldMedian)
	switch worse := r.Better != Neither && (delta > 0) == (r.Better == Lower); {
	case delta != 0 && abs(delta) >= th && worse:
		r.Verdict = Regressed
	case delta != 0 && abs(delta) >= th:
		r.Verdict, note = Changed, note+"; better"
	default:
		r.Verdict, note = Changed, note+fmt.Sprintf("; below the minimum effect %s", fmtNum(th, r.Unit))
	}
	r.Note = note
}

// commits says what changed a simulated number: a planted setting, or the build
// (both nights' commits).
func commits(old, cur Env) string {
	o, n := cmp.Or(short(old.Commit), "unknown commit"), cmp.Or(short(cur.Commit), "unknown commit")
	switch {
	case len(cur.Planted) > 0:
		return "planted --set " + strings.Join(cur.Planted, " --set ")
	case o == n:
		return "same commit " + n + ": another environment, or not deterministic"
	}
	return o + " → " + n
}

// MinP is the smallest two-sided p-value the exact test can give for samples of n1 and
// n2 without ties: 2 / C(n1+n2, n1). With 3+3 it is 0.1, so at alpha 0.05 a
// comparison needs 4+4 samples at least (0.029); 5+5 give 0.0079.
func MinP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return min(1, 2/c)
}

// WriteText writes the comparison as an aligned table in benchstat's manner.
func (c *Comparison) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\told\tnew\tdelta\tp\tn\t")
	for _, r := range c.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, fmtNum(r.OldMedian, r.Unit), fmtNum(r.NewMedian, r.Unit),
			fmtDelta(r), fmtP(r.P), fmtN(r), verdictText(r))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, c.footer())
	for _, n := range c.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(c.Hosts) > 0 {
		fmt.Fprintln(w, "\nhost (runs with every window trusted):")
		for _, l := range c.hostLines() {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	if err != nil || len(c.Fidelity) == 0 {
		return err
	}
	fmt.Fprintf(w, "\nfidelity of the new night (%s):\n", fidelityCount(c.Fidelity))
	return WriteFidelityText(w, c.Fidelity)
}

// fidelityCount says how many entries met, missed and could not judge their goals.
func fidelityCount(fs []Fidelity) string {
	met := len(entriesWith(fs, FidelityMet))
	s := fmt.Sprintf("%d of %d entries met their goal, %d missed", met, len(fs), len(FidelityMisses(fs)))
	if n := len(FidelityInconclusives(fs)); n > 0 {
		s += fmt.Sprintf(", %d inconclusive", n)
	}
	if n := len(FidelitySkips(fs)); n > 0 {
		s += fmt.Sprintf(", %d skipped", n)
	}
	return s
}

// WriteMarkdown writes the comparison as a Markdown table (a CI job summary): failing
// rows first, then the rest.
func (c *Comparison) WriteMarkdown(w io.Writer) error {
	title := "no regression"
	if f := c.Failures(); f > 0 {
		title = fmt.Sprintf("%d failing metric(s)", f)
	}
	if m := len(FidelityMisses(c.Fidelity)); m > 0 {
		title += fmt.Sprintf("; %d fidelity miss(es)", m)
	}
	fmt.Fprintf(w, "### Nightly benchmarks: %s\n\n", title)
	fmt.Fprintf(w, "Old: %s  \nNew: %s\n\n", EnvLine(c.Old), EnvLine(c.New))
	fmt.Fprintln(w, "| metric | old | new | delta | p | n | verdict |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|---|")
	rows := slices.Clone(c.Rows)
	slices.SortStableFunc(rows, func(a, b Row) int {
		switch {
		case a.Verdict.Fails() && !b.Verdict.Fails():
			return -1
		case b.Verdict.Fails() && !a.Verdict.Fails():
			return 1
		}
		return 0
	})
	for _, r := range rows {
		v := verdictText(r)
		if r.Verdict.Fails() {
			v = "**" + v + "**"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s | %s | %s |\n", r.Name, fmtNum(r.OldMedian, r.Unit), fmtNum(r.NewMedian, r.Unit),
			fmtDelta(r), fmtP(r.P), fmtN(r), v)
	}
	fmt.Fprintf(w, "\n%s\n", c.footer())
	for _, n := range c.Notes {
		fmt.Fprintf(w, "\n- %s", n)
	}
	if len(c.Hosts) > 0 {
		fmt.Fprint(w, "\n\nHost (runs with every window trusted):\n")
		for _, l := range c.hostLines() {
			fmt.Fprintf(w, "\n- %s", l)
		}
	}
	_, err := fmt.Fprintln(w)
	if err != nil || len(c.Fidelity) == 0 {
		return err
	}
	fmt.Fprintf(w, "\n#### Fidelity of the new night: %s\n\n", fidelityCount(c.Fidelity))
	return WriteFidelityMarkdown(w, c.Fidelity, false)
}

// hostLines says per experiment how many runs of each side the host's verdict
// trusted, and which experiments TrustedOnly left uncompared.
func (c *Comparison) hostLines() []string {
	var out []string
	for _, h := range c.Hosts {
		l := fmt.Sprintf("%s: old %s, new %s", h.Experiment, h.Old, h.New)
		if h.TooFew != "" {
			l += ": NOT COMPARED, too few trusted runs (" + h.TooFew + ")"
		}
		out = append(out, l)
	}
	return out
}

func (c *Comparison) footer() string {
	return fmt.Sprintf("old and new are medians; p: two-sided Mann-Whitney U (exact without ties, else normal with tie correction), alpha %g; a significant change smaller than the metric's minimum effect is ~; a simulated metric has no test: any change is CHANGED, a REGRESSION if worse by the minimum effect; %d failing", c.Alpha, c.Failures())
}

// EnvLine describes where a night ran, in one line.
func EnvLine(e Env) string {
	var parts []string
	if !e.Date.IsZero() {
		parts = append(parts, e.Date.Format("2006-01-02 15:04Z"))
	}
	for _, p := range []string{e.Version, short(e.Commit), e.Kernel, e.Go} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if e.CPUs > 0 {
		parts = append(parts, fmt.Sprintf("%d CPUs", e.CPUs))
	}
	if len(e.Links) > 0 {
		parts = append(parts, "links "+strings.Join(e.Links, "+"))
	}
	if e.Suite != "" {
		s := "suite " + e.Suite
		if e.Quick {
			s += " --quick"
		}
		parts = append(parts, s)
	}
	if len(e.Planted) > 0 {
		parts = append(parts, "PLANTED "+strings.Join(e.Planted, " "))
	}
	if len(parts) == 0 {
		return "(unknown)"
	}
	return strings.Join(parts, ", ")
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func verdictText(r Row) string {
	s := string(r.Verdict)
	if r.Note != "" {
		s += " (" + r.Note + ")"
	}
	return s
}

func fmtNum(v float64, unit string) string {
	if math.IsNaN(v) {
		return "-"
	}
	var s string
	switch a := abs(v); {
	case a >= 100 || (unit == "writes" && v == math.Trunc(v)):
		s = fmt.Sprintf("%.0f", v)
	case a >= 10:
		s = fmt.Sprintf("%.1f", v)
	default:
		s = fmt.Sprintf("%.2f", v)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

func fmtDelta(r Row) string {
	d := r.Delta()
	switch {
	case math.IsNaN(r.OldMedian) || math.IsNaN(r.NewMedian):
		return "-"
	case r.NewMedian == r.OldMedian:
		return "0"
	case math.IsNaN(d):
		return fmt.Sprintf("%+g", r.NewMedian-r.OldMedian)
	}
	return fmt.Sprintf("%+.1f%%", 100*d)
}

func fmtP(p float64) string {
	if math.IsNaN(p) {
		return "-"
	}
	return fmt.Sprintf("%.3f", p)
}

func fmtN(r Row) string { return fmt.Sprintf("%d+%d", len(r.Old), len(r.New)) }
