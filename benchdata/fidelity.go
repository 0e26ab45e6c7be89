package benchdata

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/polebench/polebench/analysis"
)

// A nightly entry's fidelity goal says how close to the analytic model (or, for the
// write benchmark, to Apache ZooKeeper) its measurements must land on this night. It
// is judged from the night's bench.json alone, so a verdict can be recomputed from the
// file, and with its uncertainty: a check is met when the night's evidence puts the
// quantity inside the goal, MISSED only when it puts it outside, and inconclusive
// otherwise (too few windows the host trusted, an interval across a bound, a ratio
// without a significant difference). Five repetitions are few: their median alone
// would call a spread a miss.

// Goal is an entry's fidelity goal; a zero field is not checked.
type Goal struct {
	// MeasuredMinusModelMS bounds, for every window (before, after the crash) and data
	// center with requests (each on its own, not "all"), the median over the
	// repetitions of the measured mean latency minus the model's.
	MeasuredMinusModelMS *Range `json:"measured_minus_model_ms,omitempty"`
	// ThroughputRatioMin is the least poled/ZooKeeper ratio of the median writes/s of
	// each setting of a write benchmark, both measured the same night.
	ThroughputRatioMin *float64 `json:"throughput_ratio_min,omitempty"`
	// RTTErrorPctMax bounds the servers' RTT measurements' largest error against the
	// links' plan (RTTErrorKey), in %, over the repetitions the host trusted.
	RTTErrorPctMax *float64 `json:"rtt_error_pct_max,omitempty"`
	// NoTrend asks that no flavor's writes/s over a setting's windows show a trend: a
	// Mann-Kendall test at TrendAlpha finding one says the warm-up was too short.
	NoTrend bool `json:"no_trend,omitempty"`
}

// Range is a closed interval [Min, Max].
type Range struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// IsZero says the goal checks nothing.
func (g Goal) IsZero() bool {
	return g.MeasuredMinusModelMS == nil && g.ThroughputRatioMin == nil && !g.NoTrend && g.RTTErrorPctMax == nil
}

// String is the goal as a table shows it.
func (g Goal) String() string {
	var parts []string
	if r := g.MeasuredMinusModelMS; r != nil {
		parts = append(parts, fmt.Sprintf("measured−model in [%+g, %+g] ms", r.Min, r.Max))
	}
	if g.RTTErrorPctMax != nil {
		parts = append(parts, fmt.Sprintf("RTT measured within %g %% of the plan", *g.RTTErrorPctMax))
	}
	if g.ThroughputRatioMin != nil {
		parts = append(parts, fmt.Sprintf("poled/zookeeper writes/s ≥ %g", *g.ThroughputRatioMin))
	}
	if g.NoTrend {
		parts = append(parts, "no trend over the windows")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// Fidelity verdicts.
const (
	FidelityMet          = "met"
	FidelityMissed       = "MISSED"
	FidelityInconclusive = "inconclusive" // neither met nor missed with confidence: the checks say why
	FidelityNoData       = "no data"      // the entry failed, or measured nothing its goal looks at
	FidelityNoGoal       = "no goal"
	FidelitySkipped      = "skipped" // this machine cannot run the entry: the note says what it lacks
)

// Alpha is the significance level of the fidelity rules' tests (Mann-Whitney,
// Mann-Kendall), and one minus the level of their intervals (analysis.Aggregate's
// 95 %).
const Alpha = 0.05

// TrendAlpha is the significance level of the NoTrend check.
const TrendAlpha = Alpha

// MinWindows is the fewest windows a mean's interval is computed from: a Student-t
// interval needs two values (analysis.Aggregate).
const MinWindows = 2

// HostNotMeasured is the host verdict of an entry whose runs recorded none: simulated
// runs (no host), write benchmarks.
const HostNotMeasured = "not measured"

// Fidelity is one entry's verdict on one night.
type Fidelity struct {
	Entry   string `json:"entry"`
	Kind    string `json:"kind,omitempty"`    // how the entry ran: run, bench
	Backend string `json:"backend,omitempty"` // and where (with the flavor when not poled)
	Goal    Goal   `json:"goal"`
	// Verdict is FidelityMet, FidelityMissed, FidelityInconclusive, FidelityNoData,
	// FidelityNoGoal or FidelitySkipped.
	Verdict string `json:"verdict"`
	// Checks are every interval, ratio or trend the verdict looked at.
	Checks []Check `json:"checks,omitempty"`
	Note   string  `json:"note,omitempty"` // why there is no data (the entry's error), or why it was skipped
	// Host says whether the machine was quiet enough for the timing to count: the
	// hiccup meter's verdicts on the entry's windows (summary.json's host section).
	Host HostVerdict `json:"host"`
}

// HostVerdict is the judgement of the machine a night ran on.
type HostVerdict struct {
	Verdict string `json:"verdict"`
	Note    string `json:"note,omitempty"`
}

// Check is one quantity a fidelity verdict looked at, and the rule that judged it.
type Check struct {
	What string `json:"what"` // the metric (without the entry), or what was computed from which
	// Value is the estimate judged: the mean of the windows judged (with fewer than
	// MinWindows, the median of those there are, or of all when none was trusted:
	// shown, not judged), a ratio of medians, or a trend's p-value.
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
	Bound string  `json:"bound"` // e.g. "in [-1, +1]", "≥ 1", "no trend: p ≥ 0.05"
	// Verdict is the check's own: FidelityMet, FidelityMissed or FidelityInconclusive;
	// OK is Verdict == FidelityMet (as in files from before the rule).
	Verdict string `json:"verdict"`
	OK      bool   `json:"ok"`
	// Rule says, in words, what decided Verdict.
	Rule string `json:"rule"`
	// Interval is the 95 % Student-t interval of the mean judged (measured_minus_model
	// with two windows or more); P the test's p-value (throughput_ratio: Mann-Whitney;
	// trend: Mann-Kendall, also Value).
	Interval *analysis.Interval `json:"interval,omitempty"`
	P        *float64           `json:"p,omitempty"`
	// Windows is how many samples were judged, Of how many were measured: the
	// windows the host trusted, or every one where the host was not measured
	// (HostMeasured false).
	Windows      int  `json:"windows"`
	Of           int  `json:"of"`
	HostMeasured bool `json:"host_measured,omitempty"`
	// Margin is how far inside its bound the judged interval (or value) is (negative:
	// outside), in the check's unit; the smallest margin of a kind of met check is the
	// tightest.
	Margin float64 `json:"margin"`
	Kind   string  `json:"kind"` // measured_minus_model, throughput_ratio, trend
}

func (c Check) String() string {
	v := fmtNum(c.Value, c.Unit)
	switch c.Kind {
	case "measured_minus_model":
		v = fmt.Sprintf("%+.2f ms", c.Value)
		if c.Interval != nil {
			v += fmt.Sprintf(" [%+.2f, %+.2f]", c.Interval.Low, c.Interval.High)
		}
	case "throughput_ratio":
		v = fmt.Sprintf("%.2fx", c.Value)
	case "trend":
		return fmt.Sprintf("%s (%s): %s", c.What, c.Bound, c.Rule) // the rule has the p-value
	}
	s := fmt.Sprintf("%s %s (%s): %s", c.What, v, c.Bound, c.Rule)
	if c.Kind == "measured_minus_model" && c.Windows >= MinWindows {
		s += " over " + c.WindowsString() // the rule itself names them otherwise
	}
	return s
}

// WindowsString says which windows the check judged: "4 of 5 windows trusted", or
// "5 windows, host not measured".
func (c Check) WindowsString() string {
	if !c.HostMeasured {
		return fmt.Sprintf("%d windows, host not measured", c.Windows)
	}
	return fmt.Sprintf("%d of %d windows trusted", c.Windows, c.Of)
}

// judged is a metric's samples that a rule may judge, with how many were measured:
// those whose window (or run) the host trusted, or all when the host was not measured
// (simulated runs, write benchmarks, files from before the meter).
func judged(m Metric) (xs []float64, of int, measured bool) {
	host := m.hostOfSamples()
	if host == nil {
		return m.Samples, len(m.Samples), false
	}
	for i, v := range m.Samples {
		if i < len(host) && host[i] == analysis.Trusted {
			xs = append(xs, v)
		}
	}
	return xs, len(m.Samples), true
}

// hostOfSamples is the host's verdict on each sample: the one on its own window
// where the metric has them, else the one on its run.
func (m Metric) hostOfSamples() []string {
	if m.WindowHost != nil {
		return m.WindowHost
	}
	return m.Host
}

// judgeRange judges a mean against r by its Student-t interval over the judged
// windows: met when the interval lies inside r, MISSED when it lies outside,
// inconclusive when it reaches across a bound or there are too few windows.
func judgeRange(key string, m Metric, r Range) Check {
	xs, of, measured := judged(m)
	c := Check{What: key, Unit: "ms", Kind: "measured_minus_model", Bound: fmt.Sprintf("in [%+g, %+g]", r.Min, r.Max),
		Windows: len(xs), Of: of, HostMeasured: measured, Verdict: FidelityInconclusive}
	if len(xs) < MinWindows {
		c.Value = Median(xs)
		if len(xs) == 0 {
			c.Value = m.Median() // of the windows the host did not trust: shown, not judged
		}
		c.Rule = fmt.Sprintf("%s: a mean's interval needs %d", c.WindowsString(), MinWindows)
		return c
	}
	a, err := analysis.Aggregate(xs)
	if err != nil {
		c.Value, c.Rule = nan(), err.Error()
		return c
	}
	iv := *a.CI95
	c.Value, c.Interval = a.Mean, &iv
	c.Margin = min(iv.Low-r.Min, r.Max-iv.High)
	switch {
	case c.Margin >= 0:
		c.Verdict, c.Rule = FidelityMet, "95 % interval of the mean inside the goal"
	case iv.Low > r.Max || iv.High < r.Min:
		c.Verdict, c.Rule = FidelityMissed, "95 % interval of the mean outside the goal"
	default:
		bound := r.Max
		if iv.Low < r.Min {
			bound = r.Min
		}
		c.Rule = fmt.Sprintf("95 %% interval of the mean across the bound %+g", bound)
	}
	return c
}

// judgeRatio judges poled/ZooKeeper writes/s against min: the ratio of the medians,
// with a two-sided Mann-Whitney test of poled's windows against min × ZooKeeper's.
// Met when the ratio is at least min and the test significant at Alpha, MISSED when
// below and significant, inconclusive when the test finds no difference.
func judgeRatio(what string, poled, zk Metric, ratioMin float64) Check {
	p, ofP, mP := judged(poled)
	z, ofZ, mZ := judged(zk)
	c := Check{What: what, Kind: "throughput_ratio", Bound: fmt.Sprintf("≥ %g", ratioMin),
		Windows: min(len(p), len(z)), Of: min(ofP, ofZ), HostMeasured: mP || mZ, Verdict: FidelityInconclusive}
	windows := fmt.Sprintf("%d+%d windows", len(p), len(z))
	if c.HostMeasured {
		windows = fmt.Sprintf("%d of %d + %d of %d windows trusted", len(p), ofP, len(z), ofZ)
	}
	if len(p) == 0 || len(z) == 0 {
		c.Value, c.Rule = poled.Median()/zk.Median(), windows+": nothing to test"
		return c
	}
	c.Value = Median(p) / Median(z)
	c.Margin = c.Value - ratioMin
	scaled := make([]float64, len(z))
	for i, v := range z {
		scaled[i] = ratioMin * v
	}
	t, err := MannWhitney(p, scaled)
	if err != nil {
		c.Rule = err.Error()
		return c
	}
	c.P = &t.P
	switch {
	case t.P >= Alpha:
		c.Rule = fmt.Sprintf("Mann-Whitney p = %.3g ≥ %g over %s: no evidence the ratio differs from %g", t.P, Alpha, windows, ratioMin)
	case c.Margin >= 0:
		c.Verdict, c.Rule = FidelityMet, fmt.Sprintf("above %g at Mann-Whitney p = %.3g over %s", ratioMin, t.P, windows)
	default:
		c.Verdict, c.Rule = FidelityMissed, fmt.Sprintf("below %g at Mann-Whitney p = %.3g over %s", ratioMin, t.P, windows)
	}
	return c
}

// judgeTrend judges one flavor's windows in the order measured: a Mann-Kendall trend
// at TrendAlpha is a miss (those windows are not the flavor's steady state).
func judgeTrend(what string, m Metric) (Check, bool) {
	t, err := MannKendall(m.Samples)
	if err != nil {
		return Check{}, false
	}
	c := Check{What: what + ": Sen's slope " + fmtSlope(t, m), Value: t.P, P: &t.P, Kind: "trend", Bound: fmt.Sprintf("no trend: p ≥ %g", TrendAlpha),
		Windows: len(m.Samples), Of: len(m.Samples), Margin: t.P - TrendAlpha, Verdict: FidelityMet,
		Rule: fmt.Sprintf("Mann-Kendall p = %.3g ≥ %g over %d windows: no trend", t.P, TrendAlpha, len(m.Samples))}
	if t.P < TrendAlpha {
		c.Verdict, c.Rule = FidelityMissed, fmt.Sprintf("Mann-Kendall p = %.3g < %g over %d windows: a trend", t.P, TrendAlpha, len(m.Samples))
	}
	return c, true
}

// Judge computes an entry's fidelity from a night's metrics: those named
// "<entry>/...". The entry misses its goal when a check missed, is inconclusive when
// none missed and one was inconclusive, and meets it when every check did.
func (g Goal) Judge(f *File, entry string) Fidelity {
	fd := Fidelity{Entry: entry, Goal: g, Host: HostVerdict{Verdict: HostNotMeasured}}
	if g.IsZero() {
		fd.Verdict = FidelityNoGoal
		return fd
	}
	prefix := entry + "/"
	var ms []Metric
	for _, m := range f.Metrics {
		if strings.HasPrefix(m.Name, prefix) && len(m.Samples) > 0 {
			ms = append(ms, m)
		}
	}
	// Each part of the goal must find something to check, or the night has no data
	// for it (a window or the entry lost its runs).
	var empty []string
	if r := g.MeasuredMinusModelMS; r != nil {
		n := len(fd.Checks)
		for _, m := range ms {
			key := strings.TrimPrefix(m.Name, prefix)
			// "all" is the DCs' requests together: each DC is checked on its own.
			if !strings.HasPrefix(Key(key), "measured_minus_model.") || strings.HasSuffix(key, ".all") {
				continue
			}
			fd.Checks = append(fd.Checks, judgeRange(key, m, *r))
		}
		if len(fd.Checks) == n {
			empty = append(empty, "no measured_minus_model metric")
		}
	}
	if x := g.RTTErrorPctMax; x != nil {
		if m, ok := f.Metric(prefix + RTTErrorKey); ok && len(m.Samples) > 0 {
			c := judgeRange(RTTErrorKey, m, Range{Min: -*x, Max: *x})
			c.Unit, c.Kind, c.Bound = "%", "rtt_error", fmt.Sprintf("≤ %g", *x)
			fd.Checks = append(fd.Checks, c)
		} else {
			empty = append(empty, "no "+RTTErrorKey+" metric")
		}
	}
	if g.ThroughputRatioMin != nil || g.NoTrend {
		n := len(fd.Checks)
		// A write benchmark's metrics are "<setting>/<flavor>.<metric>".
		bySetting := map[string]map[string]Metric{}
		for _, m := range ms {
			key := strings.TrimPrefix(m.Name, prefix)
			i := strings.LastIndex(key, "/")
			flavor, metric, ok := strings.Cut(key[i+1:], ".")
			if !ok || metric != "writes_per_s" {
				continue
			}
			set := key[:max(i, 0)]
			if bySetting[set] == nil {
				bySetting[set] = map[string]Metric{}
			}
			bySetting[set][flavor] = m
		}
		for _, set := range slices.Sorted(maps.Keys(bySetting)) {
			fl := bySetting[set]
			if g.ThroughputRatioMin != nil {
				if p, zk := fl["poled"], fl["zookeeper"]; len(p.Samples) > 0 && len(zk.Samples) > 0 {
					fd.Checks = append(fd.Checks, judgeRatio(join(set, "poled/zookeeper writes/s"), p, zk, *g.ThroughputRatioMin))
				}
			}
			if g.NoTrend {
				for _, flavor := range slices.Sorted(maps.Keys(fl)) {
					if c, ok := judgeTrend(join(set, flavor+" writes/s over the windows"), fl[flavor]); ok {
						fd.Checks = append(fd.Checks, c)
					}
				}
			}
		}
		if len(fd.Checks) == n {
			empty = append(empty, "no writes/s of a write benchmark")
		}
	}
	has := func(v string) bool {
		return slices.ContainsFunc(fd.Checks, func(c Check) bool { return c.Verdict == v })
	}
	for i := range fd.Checks {
		fd.Checks[i].OK = fd.Checks[i].Verdict == FidelityMet
	}
	switch {
	case has(FidelityMissed):
		fd.Verdict = FidelityMissed
	case len(empty) > 0:
		fd.Verdict = FidelityNoData
		fd.Note = strings.Join(empty, "; ")
	case has(FidelityInconclusive):
		fd.Verdict = FidelityInconclusive
	default:
		fd.Verdict = FidelityMet
	}
	return fd
}

func join(set, what string) string {
	if set == "" {
		return what
	}
	return set + ": " + what
}

func fmtSlope(t Trend, m Metric) string {
	s := fmt.Sprintf("%+.0f %s/window", t.Slope, m.Unit)
	if med := m.Median(); med != 0 {
		s += fmt.Sprintf(" (%+.1f%%)", 100*t.Slope/med)
	}
	return s
}

// Deciding returns the checks that decided the verdict: the ones that missed, else
// the inconclusive ones, else the tightest of each kind.
func (fd Fidelity) Deciding() []Check {
	for _, v := range []string{FidelityMissed, FidelityInconclusive} {
		var out []Check
		for _, c := range fd.Checks {
			if c.Verdict == v {
				out = append(out, c)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	tightest := map[string]Check{}
	var order []string
	for _, c := range fd.Checks {
		t, ok := tightest[c.Kind]
		if !ok {
			order = append(order, c.Kind)
		}
		if !ok || c.Margin < t.Margin {
			tightest[c.Kind] = c
		}
	}
	var out []Check
	for _, k := range order {
		out = append(out, tightest[k])
	}
	return out
}

// Summary is the deciding checks in a line (at most two, then how many more).
func (fd Fidelity) Summary() string {
	if fd.Verdict == FidelityNoData || fd.Verdict == FidelitySkipped {
		return cmp.Or(fd.Note, "-")
	}
	d := fd.Deciding()
	var parts []string
	for i, c := range d {
		if i == 2 {
			parts = append(parts, fmt.Sprintf("and %d more", len(d)-2))
			break
		}
		parts = append(parts, c.String())
	}
	if len(parts) == 0 {
		return "-"
	}
	s := strings.Join(parts, "; ")
	if fd.Verdict == FidelityMet {
		s = "tightest: " + s
	}
	return s
}

// FidelityMisses names the entries whose goal was missed.
func FidelityMisses(fs []Fidelity) []string { return entriesWith(fs, FidelityMissed) }

// FidelityInconclusives names the entries whose goal was neither met nor missed.
func FidelityInconclusives(fs []Fidelity) []string { return entriesWith(fs, FidelityInconclusive) }

// FidelitySkips names the entries this machine could not run.
func FidelitySkips(fs []Fidelity) []string { return entriesWith(fs, FidelitySkipped) }

func entriesWith(fs []Fidelity, verdict string) []string {
	var out []string
	for _, fd := range fs {
		if fd.Verdict == verdict {
			out = append(out, fd.Entry)
		}
	}
	return out
}

// WriteFidelityText writes one line per entry: entry, where it ran, verdict, goal,
// the checks that decided (with their rule), and the host's verdict.
func WriteFidelityText(w io.Writer, fs []Fidelity) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "entry\twhere\tfidelity\tgoal\tdecided by\thost\t")
	for _, fd := range fs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", fd.Entry, cmp.Or(fd.Backend, "-"), fd.Verdict, fd.Goal, fd.Summary(), fd.Host.Verdict)
	}
	return tw.Flush()
}

// WriteFidelityMarkdown writes the same as a Markdown table, and with detail every
// check of every entry below it, with the rule that judged it.
func WriteFidelityMarkdown(w io.Writer, fs []Fidelity, detail bool) error {
	if len(fs) == 0 {
		return nil
	}
	fmt.Fprintln(w, "| entry | where | fidelity | goal | decided by | host |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, fd := range fs {
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s | %s |\n", fd.Entry, cmp.Or(fd.Backend, "-"), mdVerdict(fd.Verdict), fd.Goal, mdEscape(fd.Summary()), fd.Host.Verdict)
	}
	if !detail {
		return nil
	}
	for _, fd := range fs {
		fmt.Fprintf(w, "\n#### %s: %s\n\nGoal: %s. Host: %s.\n", fd.Entry, fd.Verdict, fd.Goal, fd.Host.Verdict)
		if fd.Note != "" {
			fmt.Fprintf(w, "\n%s\n", fd.Note)
		}
		if len(fd.Checks) == 0 {
			continue
		}
		fmt.Fprintln(w, "\n| checked | value | 95 % interval | windows | bound | verdict | rule |\n|---|--:|---|---|---|---|---|")
		for _, c := range fd.Checks {
			v, iv := fmt.Sprintf("%.3f", c.Value), "-"
			if c.Kind == "measured_minus_model" {
				v = fmt.Sprintf("%+.2f ms", c.Value)
			}
			if c.Interval != nil {
				iv = fmt.Sprintf("[%+.2f, %+.2f]", c.Interval.Low, c.Interval.High)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(c.What), v, iv, c.WindowsString(), c.Bound, mdVerdict(c.Verdict), mdEscape(c.Rule))
		}
	}
	return nil
}

// mdVerdict makes a verdict that needs a reader's eyes bold.
func mdVerdict(v string) string {
	if v == FidelityMissed {
		return "**" + v + "**"
	}
	return v
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
