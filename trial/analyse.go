package trial

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/polebench/polebench/analysis"
)

// Bucket is the width of the time series' buckets.
const Bucket = 500 * time.Millisecond

// Analyse analyses h, a history of t, and d, derived from it, into dir: summary.json,
// the time series, the histograms and the plots. It reads nothing but t, h and d, so a
// run analysed live (d from Derive) and its stored copy analysed later (d from Read)
// agree.
func Analyse(dir string, t *Test, h *History, d *Derived, log *slog.Logger) (*analysis.Summary, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sp := t.Spec
	ev := analysis.FindEvents(h.Timeline, analysis.Events{WarmupEnd: sp.Workload.Warmup, End: sp.Duration, InitialLeader: sp.InitialLeader})
	join := d.Join
	in := analysis.Input{Records: h.Records, Events: ev, OfferedRate: sp.Rates.Total, PayloadBytes: sp.Workload.PayloadBytes,
		Host: d.Host, Paths: d.Paths, Join: &join, RTT: analysis.CheckRTTs(h.RTTs, t.Plan.At(sp.Duration).RTT)}
	if pm, err := t.PathModel(); err != nil {
		log.Warn("no model for the latency anatomy", "err", err)
	} else {
		in.PathModel = pm
	}
	for _, o := range sp.Outdate {
		in.Outdated = append(in.Outdated, o.Server)
	}
	if pred, err := t.Prediction(); err != nil {
		log.Warn("no model prediction", "err", err)
	} else {
		p := analysis.Predict(pred, sp.Oracle.Name, t.Rates, ev, sp.CrashAt > 0)
		in.Model, in.ModelNote = p.MS, p.Note
	}
	if h.Verification != nil {
		in.LostAcknowledgedWrites = h.Verification.LostAcknowledgedWrites
	}
	sum, _, err := analysis.Report(dir, in, Bucket, analysis.PlotOptions{Title: t.Title(), YMaxMS: analysis.YClip(in.Model)})
	if err != nil {
		return nil, fmt.Errorf("analysis: %w", err)
	}
	return sum, nil
}
