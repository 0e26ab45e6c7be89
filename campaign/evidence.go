package campaign

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/polebench/polebench/analysis"
)

// evidenceRun is the run a campaign's evidence figures show: a run of the point the
// paper's claim is about (the expectation's higher series, at its first x value or
// else the last one; the campaign's first measured point without an expectation),
// among its runs those that elected the most common leader, the one whose first
// metric is the median.
func (c *Campaign) evidenceRun(rows []Row) (Point, Group, Row, bool) {
	xField, sField := c.axes()
	var want []Point
	if e := c.Expect; e != nil {
		if sField == "" {
			want = c.pointsAt(xField, e.Higher, "", "")
		} else {
			xs := c.values(xField)
			x := ""
			if len(e.At) > 0 {
				x = e.At[0]
			} else if len(xs) > 0 {
				x = xs[len(xs)-1]
			}
			want = c.pointsAt(xField, x, sField, e.Higher)
		}
	}
	want = append(want, c.Points()...)
	metric := "latency_ms.after.all.mean"
	if specs := c.figSpecs(); len(specs) > 0 {
		metric = specs[0].metrics[0]
	}
	for _, p := range want {
		if gs := Groups(rows, p, metric); len(gs) > 0 {
			return p, gs[0], gs[0].Representative(metric), true
		}
	}
	return Point{}, Group{}, Row{}, false
}

// pointWords names a point in words: "rotating, 50 MB".
func pointWords(p Point) string {
	var parts []string
	for _, s := range p.Settings {
		parts = append(parts, valueLabel(s.Name, s.Value))
	}
	return strings.Join(parts, ", ")
}

// drawEvidence draws the representative run's latency over time with its faults, and
// its percentiles per DC.
func (c *Campaign) drawEvidence(dir string, rows []Row) ([]Figure, error) {
	p, g, r, ok := c.evidenceRun(rows)
	if !ok {
		return nil, nil
	}
	link := runLink(p, r.Rep)
	rd, err := analysis.ReadRun(filepath.Join(dir, filepath.FromSlash(link)))
	if err != nil {
		return nil, fmt.Errorf("campaign %s: the evidence run: %w", c.Name, err)
	}
	who := ""
	if g.Leader != 0 {
		who = fmt.Sprintf(", p%d elected", g.Leader)
	}
	name := pointWords(p)
	if name == "" {
		name = c.Name
	}
	name += fmt.Sprintf(" (run %d%s)", r.Rep, who)
	var figs []Figure

	title := "One run over time: " + name
	base := c.Name + "-evidence-timeline"
	tl, err := analysis.PlotRunTimeline(rd, title, filepath.Join(dir, base))
	if err != nil {
		return nil, fmt.Errorf("campaign %s: %w", c.Name, err)
	}
	shaded := "nothing (no fault recorded)"
	if len(tl.Faults) > 0 {
		shaded = strings.Join(tl.Faults, "; ")
	}
	host := "The simulator has no host: no host stalls to shade."
	if rd.HostMeasured {
		host = fmt.Sprintf("Pink: the host's stalls of %g ms or more (hiccups.csv), when the numbers are the host's rather than the system's.", analysis.StallMS)
	}
	caption := fmt.Sprintf("The run behind the point %s: each DC's mean latency per %s (solid) against the model's mean for the leader in office (dashed); shaded: %s. %s The brackets are the windows the figures' numbers come from.",
		name, analysis.BucketWords(rd.Series.Bucket), shaded, host)
	if tl.Note != "" {
		caption += " " + tl.Note
	}
	figs = append(figs, Figure{Kind: KindTimeline, Title: title, XLabel: "time since the load started (s)", YLabel: tl.YLabel,
		Caption: caption, PNG: base + ".png", SVG: base + ".svg", Run: link})

	title = "Latency percentiles per DC: " + name
	base = c.Name + "-evidence-percentiles"
	if _, err := analysis.PlotRunPercentiles(rd, title, filepath.Join(dir, base)); err != nil {
		return nil, fmt.Errorf("campaign %s: %w", c.Name, err)
	}
	caption = fmt.Sprint("The same run's latency percentiles per DC from its HDR logs (hdr-<window>-<dc>.hlog), dashed before the crash and solid after it, over the windows the figures' numbers come from; the x axis is 1/(1-p) on a log scale, so the tail (99 %, 99.9 %) gets as much room as the median.")
	figs = append(figs, Figure{Kind: KindPercentiles, Title: title, XLabel: "percentile (log scale of 1/(1-p))", YLabel: "latency (ms)",
		Caption: caption, PNG: base + ".png", SVG: base + ".svg", Run: link})
	return figs, nil
}
