package benchdata

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// A nightly entry's fidelity goal says how close to the analytic model (or, for the
// write benchmark, to Apache ZooKeeper) its measurements must land on this night. It
// is judged from the night's bench.json alone, on the medians over the repetitions, so
// a verdict can be recomputed from the file.

// Goal is an entry's fidelity goal; a zero field is not checked.
type Goal struct {
	// MeasuredMinusModelMS bounds, for every window (before, after the crash) and data
	// center with requests (each on its own, not "all"), the median over the
	// repetitions of the measured mean latency minus the model's.
	MeasuredMinusModelMS *Range `json:"measured_minus_model_ms,omitempty"`
	// ThroughputRatioMin is the least poled/ZooKeeper ratio of the median writes/s of
	// each setting of a write benchmark, both measured the same night.
	ThroughputRatioMin *float64 `json:"throughput_ratio_min,omitempty"`
	// NoTrend asks that no flavor's writes/s over a setting's windows show a trend: a
	// Mann-Kendall test at TrendAlpha finding one says the warm-up was too short.
	NoTrend bool `json:"no_trend,omitempty"`
}

// TrendAlpha is the significance level of the NoTrend check.
const TrendAlpha = 0.05

// Range is a closed interval [Min, Max].
type Range struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// IsZero says the goal checks nothing.
func (g Goal) IsZero() bool {
	return g.MeasuredMinusModelMS == nil && g.ThroughputRatioMin == nil && !g.NoTrend
}

// String is the goal as a table shows it.
func (g Goal) String() string {
	var parts []string
	if r := g.MeasuredMinusModelMS; r != nil {
		parts = append(parts, fmt.Sprintf("measured−model in [%+g, %+g] ms", r.Min, r.Max))
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
	FidelityMet    = "met"
	FidelityMissed = "MISSED"
	FidelityNoData = "no data" // the entry failed, or measured nothing its goal looks at
	FidelityNoGoal = "no goal"
)

// HostNotMeasured is the host verdict of an entry whose runs recorded none: simulated
// runs (no host), write benchmarks.
const HostNotMeasured = "not measured"

// Fidelity is one entry's verdict on one night.
type Fidelity struct {
	Entry   string `json:"entry"`
	Kind    string `json:"kind,omitempty"`    // how the entry ran: run, bench
	Backend string `json:"backend,omitempty"` // and where (with the flavor when not poled)
	Goal    Goal   `json:"goal"`
	Verdict string `json:"verdict"` // FidelityMet, FidelityMissed, FidelityNoData, FidelityNoGoal
	// Checks are every median, ratio or trend the verdict looked at.
	Checks []Check `json:"checks,omitempty"`
	Note   string  `json:"note,omitempty"` // why there is no data: the entry's error
	// Host says whether the machine was quiet enough for the timing to count: the
	// hiccup meter's verdicts on the entry's windows (summary.json's host section).
	Host HostVerdict `json:"host"`
}

// HostVerdict is the judgement of the machine a night ran on.
type HostVerdict struct {
	Verdict string `json:"verdict"`
	Note    string `json:"note,omitempty"`
}

// Check is one number a fidelity verdict looked at.
type Check struct {
	What  string  `json:"what"`  // the metric (without the entry), or what was computed from which
	Value float64 `json:"value"` // a median, a ratio of medians, or a p-value
	Unit  string  `json:"unit,omitempty"`
	Bound string  `json:"bound"` // e.g. "≤ +1", "≥ 1.2", "p ≥ 0.05"
	OK    bool    `json:"ok"`
	// Margin is how far inside its bound the value is (negative: outside), in the
	// check's unit; the smallest margin of a kind of check decides the verdict.
	Margin float64 `json:"margin"`
	Kind   string  `json:"kind"` // measured_minus_model, throughput_ratio, trend
}

func (c Check) String() string {
	v := fmtNum(c.Value, c.Unit)
	switch c.Kind {
	case "measured_minus_model":
		v = fmt.Sprintf("%+.2f ms", c.Value)
	case "throughput_ratio":
		v = fmt.Sprintf("%.2fx", c.Value)
	case "trend":
		v = fmt.Sprintf("p=%.3f", c.Value)
	}
	return fmt.Sprintf("%s %s (%s)", c.What, v, c.Bound)
}

// Judge computes an entry's fidelity from a night's metrics: those named
// "<entry>/...". Goals look at medians over the repetitions (or windows), so one bad
// repetition does not decide.
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
			v := m.Median()
			fd.Checks = append(fd.Checks, Check{What: key, Value: v, Unit: "ms", Kind: "measured_minus_model",
				Bound: fmt.Sprintf("in [%+g, %+g]", r.Min, r.Max), OK: v >= r.Min && v <= r.Max, Margin: min(v-r.Min, r.Max-v)})
		}
		if len(fd.Checks) == n {
			empty = append(empty, "no measured_minus_model metric")
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
				p, zk := fl["poled"], fl["zookeeper"]
				if len(p.Samples) > 0 && len(zk.Samples) > 0 {
					r := p.Median() / zk.Median()
					fd.Checks = append(fd.Checks, Check{What: join(set, "poled/zookeeper writes/s"), Value: r, Kind: "throughput_ratio",
						Bound: fmt.Sprintf("≥ %g", *g.ThroughputRatioMin), OK: r >= *g.ThroughputRatioMin, Margin: r - *g.ThroughputRatioMin})
				}
			}
			if g.NoTrend {
				for _, flavor := range slices.Sorted(maps.Keys(fl)) {
					t, err := MannKendall(fl[flavor].Samples)
					if err != nil {
						continue
					}
					fd.Checks = append(fd.Checks, Check{What: join(set, flavor+" writes/s over the windows: Sen's slope "+fmtSlope(t, fl[flavor])),
						Value: t.P, Kind: "trend", Bound: fmt.Sprintf("no trend: p ≥ %g", TrendAlpha), OK: t.P >= TrendAlpha, Margin: t.P - TrendAlpha})
				}
			}
		}
		if len(fd.Checks) == n {
			empty = append(empty, "no writes/s of a write benchmark")
		}
	}
	switch {
	case slices.ContainsFunc(fd.Checks, func(c Check) bool { return !c.OK }):
		fd.Verdict = FidelityMissed
	case len(empty) > 0:
		fd.Verdict = FidelityNoData
		fd.Note = strings.Join(empty, "; ")
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
// the tightest of each kind.
func (fd Fidelity) Deciding() []Check {
	var out []Check
	for _, c := range fd.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	if len(out) > 0 {
		return out
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
	for _, k := range order {
		out = append(out, tightest[k])
	}
	return out
}

// Summary is the deciding checks in a line (at most two, then how many more missed).
func (fd Fidelity) Summary() string {
	if fd.Verdict == FidelityNoData {
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
func FidelityMisses(fs []Fidelity) []string {
	var out []string
	for _, fd := range fs {
		if fd.Verdict == FidelityMissed {
			out = append(out, fd.Entry)
		}
	}
	return out
}

// WriteFidelityText writes one line per entry: entry, where it ran, verdict, goal,
// the checks that decided, and the host's verdict.
func WriteFidelityText(w io.Writer, fs []Fidelity) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "entry\twhere\tfidelity\tgoal\tdecided by\thost\t")
	for _, fd := range fs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", fd.Entry, cmp.Or(fd.Backend, "-"), fd.Verdict, fd.Goal, fd.Summary(), fd.Host.Verdict)
	}
	return tw.Flush()
}

// WriteFidelityMarkdown writes the same as a Markdown table, and with detail every
// check of every entry below it.
func WriteFidelityMarkdown(w io.Writer, fs []Fidelity, detail bool) error {
	if len(fs) == 0 {
		return nil
	}
	fmt.Fprintln(w, "| entry | where | fidelity | goal | decided by | host |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, fd := range fs {
		v := fd.Verdict
		if v == FidelityMissed {
			v = "**" + v + "**"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s | %s |\n", fd.Entry, cmp.Or(fd.Backend, "-"), v, fd.Goal, mdEscape(fd.Summary()), fd.Host.Verdict)
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
		fmt.Fprintln(w, "\n| checked | value | bound | ok |\n|---|--:|---|---|")
		for _, c := range fd.Checks {
			v := fmt.Sprintf("%.3f", c.Value)
			if c.Kind == "measured_minus_model" {
				v = fmt.Sprintf("%+.2f ms", c.Value)
			}
			ok := "yes"
			if !c.OK {
				ok = "**no**"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", mdEscape(c.What), v, c.Bound, ok)
		}
	}
	return nil
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
