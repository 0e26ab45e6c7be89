package bench

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"strings"
	"text/tabwriter"

	"github.com/polebench/polebench/benchdata"
)

// metrics of a window, in the order tables show them.
var metrics = []struct {
	name, unit string
	better     benchdata.Better
	min        benchdata.MinEffect
	of         func(Window) float64
}{
	{"writes_per_s", "writes/s", benchdata.Higher, benchdata.MinEffect{Abs: 50, Rel: 0.05}, func(w Window) float64 { return w.WritesPerSec }},
	{"p50_ms", "ms", benchdata.Lower, benchdata.MinEffect{Abs: 0.1, Rel: 0.05}, func(w Window) float64 { return w.P50MS }},
	{"p99_ms", "ms", benchdata.Lower, benchdata.MinEffect{Abs: 0.5, Rel: 0.10}, func(w Window) float64 { return w.P99MS }},
	{"p999_ms", "ms", benchdata.Lower, benchdata.MinEffect{Abs: 1, Rel: 0.20}, func(w Window) float64 { return w.P999MS }},
}

func samples(ws []Window, of func(Window) float64) []float64 {
	out := make([]float64, len(ws))
	for i, w := range ws {
		out[i] = of(w)
	}
	return out
}

// trending names the first flavor whose writes/s over its windows show a trend
// (Mann-Kendall, p < benchdata.TrendAlpha), or "".
func trending(runs map[string][]Window, flavors []string) string {
	for _, f := range flavors {
		if t, err := benchdata.MannKendall(samples(runs[f], func(w Window) float64 { return w.WritesPerSec })); err == nil && t.P < benchdata.TrendAlpha {
			return f
		}
	}
	return ""
}

// flavors are the flavors measured in setting s, in the order given.
func (r *Result) flavors(s Setting) []string {
	return slices.DeleteFunc(slices.Clone(r.Flavors), func(f string) bool { return r.Runs[s][f] == nil })
}

// WriteTable prints the medians over the windows per setting and flavor, and the
// ratio of the first flavor to each other one with the Mann-Whitney p-value of each
// metric.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "setting\tflavor\twrites/s\tp50 ms\tp99 ms\tp999 ms\twindows\t\n")
	for _, s := range r.Order {
		fl := r.flavors(s)
		for _, f := range fl {
			ws := r.Runs[s][f]
			fmt.Fprintf(tw, "%v\t%s", s, f)
			for _, m := range metrics {
				fmt.Fprintf(tw, "\t%s", num(benchdata.Median(samples(ws, m.of))))
			}
			fmt.Fprintf(tw, "\t%d\t\n", len(ws))
		}
		for _, other := range fl[min(1, len(fl)):] {
			a, b := r.Runs[s][fl[0]], r.Runs[s][other]
			fmt.Fprintf(tw, "%v\t%s/%s", s, fl[0], other)
			// A flavor whose throughput still rises or falls over its windows is not at
			// its steady state: a ratio of it would say how far its warm-up had got.
			if f := trending(r.Runs[s], []string{fl[0], other}); f != "" {
				fmt.Fprintf(tw, "\t%s still warming up (its writes/s trend over the windows): no ratio\t\t\t\t\t\n", f)
				continue
			}
			for _, m := range metrics {
				fmt.Fprintf(tw, "\t%s", ratio(samples(a, m.of), samples(b, m.of)))
			}
			fmt.Fprintf(tw, "\t\t\n")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s loop, %d clients%s, %d-byte writes, %v windows; medians over the windows; a ratio is the first flavor's median over another's, p the two-sided Mann-Whitney U test of their windows\n",
		r.Mode, r.Clients, rateNote(r.Rate), r.Payload, r.Duration)
	return err
}

// WriteTrends prints, per setting and flavor, whether writes/s moved over the windows
// in the order they were measured: Sen's slope per window and the two-sided
// Mann-Kendall p-value. A trend (p < benchdata.TrendAlpha) says the warm-up was too short
// for that flavor (a JIT still compiling, a cache still filling), so its windows are
// not its steady state.
func (r *Result) WriteTrends(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "setting\tflavor\tslope writes/s per window\tof median\tMann-Kendall S\tp\ttrend\t\n")
	for _, s := range r.Order {
		for _, f := range r.flavors(s) {
			ws := samples(r.Runs[s][f], func(w Window) float64 { return w.WritesPerSec })
			t, err := benchdata.MannKendall(ws)
			if err != nil {
				fmt.Fprintf(tw, "%v\t%s\t-\t-\t-\t-\t%d window(s)\t\n", s, f, len(ws))
				continue
			}
			verdict := "none"
			switch {
			case t.P < benchdata.TrendAlpha && t.S > 0:
				verdict = "RISING"
			case t.P < benchdata.TrendAlpha:
				verdict = "FALLING"
			case len(ws) < benchdata.TrendMinN:
				verdict = fmt.Sprintf("none (%d windows cannot show one)", len(ws))
			}
			fmt.Fprintf(tw, "%v\t%s\t%+.0f\t%+.1f%%\t%d\t%.3f\t%s\t\n", s, f, t.Slope, 100*t.Slope/benchdata.Median(ws), t.S, t.P, verdict)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "trend of writes/s over the windows in the order measured: Sen's slope, two-sided Mann-Kendall test at alpha %g (at least %d windows to reach it)\n", benchdata.TrendAlpha, benchdata.TrendMinN)
	return err
}

func rateNote(rate float64) string {
	if rate > 0 {
		return fmt.Sprintf(" at %.0f writes/s in all", rate)
	}
	return ""
}

func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func ratio(a, b []float64) string {
	ma, mb := benchdata.Median(a), benchdata.Median(b)
	if mb == 0 || math.IsNaN(ma) || math.IsNaN(mb) {
		return "-"
	}
	u, err := benchdata.MannWhitney(a, b)
	if err != nil {
		return fmt.Sprintf("%.2fx", ma/mb)
	}
	return fmt.Sprintf("%.2fx p=%.3f", ma/mb, u.P)
}

// Bench is the result as bench.json for the nightly benchmark and `polebench compare`:
// one metric per setting, flavor and quantity, every window a sample. Names are
// "bench-<mode>-<servers>srv-fsync-<on|off>/<flavor>.<metric>".
// Save writes the table and the trends into dir/table.txt and the windows into
// dir/bench.json (with env), and returns the table's text.
func (r *Result) Save(dir string, env benchdata.Env) (string, error) {
	var table strings.Builder
	if err := r.WriteTable(&table); err != nil {
		return "", err
	}
	table.WriteString("\n")
	if err := r.WriteTrends(&table); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "table.txt"), []byte(table.String()), 0o644); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	return table.String(), r.Bench(env).WriteFile(filepath.Join(dir, benchdata.FileName))
}

func (r *Result) Bench(env benchdata.Env) *benchdata.File {
	f := &benchdata.File{Format: benchdata.FormatVersion, Env: env}
	for _, s := range r.Order {
		fs := "off"
		if s.Fsync {
			fs = "on"
		}
		exp := fmt.Sprintf("bench-%s-%dsrv-fsync-%s", r.Mode, s.Servers, fs)
		for _, fl := range r.flavors(s) {
			for _, m := range metrics {
				f.Metrics = append(f.Metrics, benchdata.Metric{Name: exp + "/" + fl + "." + m.name, Unit: m.unit, Better: m.better,
					MinEffect: m.min, Samples: samples(r.Runs[s][fl], m.of)})
			}
		}
	}
	slices.SortFunc(f.Metrics, func(a, b benchdata.Metric) int { return strings.Compare(a.Name, b.Name) })
	return f
}

// SplitList splits a comma-separated list of a flag or setting (flavors, server
// counts, fsync modes), dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
