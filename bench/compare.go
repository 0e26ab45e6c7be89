package bench

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
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
)

// Fails says whether the verdict fails the comparison.
func (v Verdict) Fails() bool { return v == Regressed || v == LostWrites || v == Missing }

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
	if alpha <= 0 || alpha >= 1 {
		return nil, fmt.Errorf("bench: alpha %v not in (0, 1)", alpha)
	}
	c := &Comparison{Alpha: alpha, Old: old.Env, New: cur.Env, Fidelity: cur.Fidelity}
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
		case n == nil || len(n.Samples) == 0:
			r.Verdict = Missing
			r.Note = "not measured in new"
		case o == nil || len(o.Samples) == 0:
			r.Verdict = New
		case ref.Deterministic:
			sameOrChanged(&r, ref.MinEffect, old.Env, cur.Env)
		default:
			if err := judge(&r, ref.MinEffect, alpha); err != nil {
				return nil, fmt.Errorf("bench: %s: %w", name, err)
			}
		}
		c.Rows = append(c.Rows, r)
	}
	return c, nil
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
	worse := (delta > 0) == (r.Better == Lower)
	if worse {
		r.Verdict = Regressed
	} else {
		r.Verdict = Improved
	}
	return nil
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
	switch worse := (delta > 0) == (r.Better == Lower); {
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
	if err != nil || len(c.Fidelity) == 0 {
		return err
	}
	fmt.Fprintf(w, "\nfidelity of the new night (%s):\n", fidelityCount(c.Fidelity))
	return WriteFidelityText(w, c.Fidelity)
}

// fidelityCount says how many entries met and missed their goals.
func fidelityCount(fs []Fidelity) string {
	met, missed := 0, 0
	for _, fd := range fs {
		switch fd.Verdict {
		case FidelityMet:
			met++
		case FidelityMissed:
			missed++
		}
	}
	return fmt.Sprintf("%d of %d entries met their goal, %d missed", met, len(fs), missed)
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
	_, err := fmt.Fprintln(w)
	if err != nil || len(c.Fidelity) == 0 {
		return err
	}
	fmt.Fprintf(w, "\n#### Fidelity of the new night: %s\n\n", fidelityCount(c.Fidelity))
	return WriteFidelityMarkdown(w, c.Fidelity, false)
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
