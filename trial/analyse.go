package trial

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/spec"
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
	ev := t.events(h)
	join := d.Join
	in := analysis.Input{Records: h.Records, Events: ev, Settle: sp.Workload.Settle, OfferedRate: sp.Rates.Total, PayloadBytes: sp.Workload.PayloadBytes,
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

// events are the instants of h, a history of t.
func (t *Test) events(h *History) analysis.Events {
	sp := t.Spec
	return analysis.FindEvents(h.Timeline, analysis.Events{WarmupEnd: sp.Workload.Warmup, End: sp.Duration, InitialLeader: sp.InitialLeader})
}

// Model is the analytic model's mean latency by window and DC for the run stored in
// dir had sp's model predicted it: the windows and the election are the run's own, the
// prediction is sp's. A planted nightly judges each run by the model of the experiment
// as its suite wrote it, so that the planted setting moves what is measured and not
// what it is judged by, as a regression of the system under study would.
func Model(dir string, sp *spec.Spec) (map[string]map[string]float64, error) {
	t, h, _, err := Read(dir)
	if err != nil {
		return nil, err
	}
	pred, err := sp.Model()
	if err != nil {
		return nil, fmt.Errorf("trial: %s: %w", dir, err)
	}
	return analysis.Predict(pred, sp.Oracle.Name, sp.RatesByDC(), t.events(h), sp.CrashAt > 0).MS, nil
}
