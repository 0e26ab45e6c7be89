package doctor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/runner"
	"github.com/polebench/polebench/spec"
)

// Calibration is the two-dc runs without a crash: each target at each rung it got to,
// and the simulator at every rate a target ran.
type Calibration struct {
	Spec             string  `json:"spec"`
	DurationS        float64 `json:"duration_s"`
	WarmupS          float64 `json:"warmup_s"`
	BaseRate         float64 `json:"base_rate"` // the spec's total req/s
	ZooKeeperWarmUpS float64 `json:"zookeeper_warmup_s"`
	Dir              string  `json:"dir,omitempty"` // the runs' directories, when kept
	Points           []Point `json:"points"`        // in the order they ran
}

// Point is one calibration run.
type Point struct {
	Target   string  `json:"target"` // backend/flavor, or "sim"
	Multiple float64 `json:"multiple"`
	Rate     float64 `json:"rate"` // total req/s
	DCs      []DC    `json:"dcs,omitempty"`
	// Verdict is the host's on the run's measured window (analysis.Trusted,
	// Degraded, Untrusted; "" for the simulator, which has no host).
	Verdict string   `json:"verdict,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	// Moved is what the verdict rests on: how far the host moved the window's mean,
	// p99, p999 and send lag (analysis.HostWindow.Moved).
	Moved        string  `json:"host_moved,omitempty"`
	StalledPct   float64 `json:"stalled_requests_pct"`
	StallMaxMS   float64 `json:"stall_max_ms"`
	AchievedRate float64 `json:"achieved_rate"`
	SendLagP99MS float64 `json:"send_lag_p99_ms"`
	WallS        float64 `json:"wall_s"`
	Error        string  `json:"error,omitempty"`
}

// DC is one data center's latency in a run's measured window, ms.
type DC struct {
	Name    string   `json:"dc"`
	MeanMS  float64  `json:"mean_ms"`
	P99MS   float64  `json:"p99_ms"`
	ModelMS *float64 `json:"model_ms,omitempty"`
	SimMS   *float64 `json:"sim_ms,omitempty"` // the simulator's mean at the same rate
}

// Trusted says whether the host's verdict trusted the run.
func (p Point) Trusted() bool { return p.Verdict == analysis.Trusted }

// Emulation is what this host emulates faithfully on one target.
type Emulation struct {
	Target     string `json:"target"`
	Calibrated bool   `json:"calibrated"`
	// Overhead is, per DC at the first rung's rate (the spec's by default), the
	// measured mean above the simulator's and the model's.
	Overhead   []Overhead `json:"overhead,omitempty"`
	OverheadAt float64    `json:"overhead_at_rate,omitempty"`
	// TrustedUpTo is the highest rate (req/s) the ladder ran trusted, climbing from
	// its first rung; 0: not even that one.
	TrustedUpTo      float64 `json:"trusted_up_to"`
	TrustedMultiple  float64 `json:"trusted_multiple"`
	HighestRungTried bool    `json:"highest_rung_tried"` // trusted at the top of the ladder: the limit lies above
	Stop             string  `json:"stop,omitempty"`     // why the ladder stopped below its top
	NotCalibratedWhy string  `json:"not_calibrated,omitempty"`
}

// Overhead is one DC's measured mean above the references, ms.
type Overhead struct {
	DC          string   `json:"dc"`
	OverSimMS   *float64 `json:"over_sim_ms,omitempty"`
	OverModelMS *float64 `json:"over_model_ms,omitempty"`
}

// creates says what a backend's runs leave on the host while they run: why the
// doctor calibrates none of them unless asked.
var creates = map[string]string{
	backend.Netns:  "create network namespaces and processes",
	backend.Docker: "create containers (and build the poled image first)",
	backend.Swarm:  "create swarm services",
}

// ladder is one target climbing the rungs.
type ladder struct {
	t    Target
	em   *Emulation
	done bool
	// overhead is a run's wall time beyond its duration (start, prepare, verify,
	// analyse), as last measured or guessed.
	overhead time.Duration
}

// estimate is how long the target's next run should take.
func (l *ladder) estimate(o Options) time.Duration { return o.Duration + l.overhead }

// initialOverhead is the guess before a target's first run: a local poled cluster
// starts, prepares, verifies and analyses in seconds; five JVMs take longer to start,
// then warm up (what this guess came from: docs/performance.md).
func (l *ladder) initialOverhead(o Options) time.Duration {
	switch {
	case l.t.Flavor == backend.FlavorZooKeeper:
		return 20*time.Second + o.ZooKeeperWarmUp
	case l.t.Backend == backend.Local:
		return 5 * time.Second
	}
	return 20 * time.Second // processes, namespaces, containers
}

// calibrate climbs every target's ladder in turn (the first target's, local poled by
// default, is what matters most), within the budget, and fills r.Calibration and
// r.Emulates. Its error is a bug (the shipped spec does not resolve); a run that
// fails is in the report.
func calibrate(ctx context.Context, o Options, r *Report, start time.Time) error {
	base, err := spec.Resolve(DefaultSpec)
	if err != nil {
		return err
	}
	base, err = base.With(
		spec.Setting{Name: "crash-at", Value: spec.NoCrash},
		spec.Setting{Name: "duration", Value: o.Duration.String()},
		spec.Setting{Name: "warmup", Value: o.Warmup.String()},
		spec.Setting{Name: "repetitions", Value: "1"},
	)
	if err != nil { // the settings given (a warm-up not before the end, say)
		r.couldNot("calibration: %v", err)
		return nil
	}
	cal := &Calibration{Spec: base.Name, DurationS: o.Duration.Seconds(), WarmupS: o.Warmup.Seconds(),
		BaseRate: base.Rates.Total, ZooKeeperWarmUpS: o.ZooKeeperWarmUp.Seconds()}
	r.Calibration = cal

	dir := o.Out
	if dir == "" {
		if dir, err = os.MkdirTemp("", "polebench-doctor-"); err != nil {
			r.couldNot("calibration: no directory for its runs: %v", err)
			return nil
		}
		defer os.RemoveAll(dir)
	} else {
		cal.Dir = dir
	}

	// Every target asked for that runs here climbs; the others say why not.
	var ladders []*ladder
	asked := map[string]bool{}
	for _, t := range o.Targets {
		if asked[t.String()] {
			continue
		}
		asked[t.String()] = true
		if ok, why := r.runnable(t); !ok {
			r.Emulates = append(r.Emulates, Emulation{Target: t.String(), NotCalibratedWhy: "cannot run here: " + why})
			r.couldNot("calibration of %s: cannot run here: %s", t, why)
			continue
		}
		r.Emulates = append(r.Emulates, Emulation{Target: t.String()})
		l := &ladder{t: t}
		l.overhead = l.initialOverhead(o)
		ladders = append(ladders, l)
	}
	for _, b := range r.Backends {
		if b.Runs && !asked[b.Target] {
			why := "it runs here, but was not asked for"
			if c, ok := creates[strings.Split(b.Target, "/")[0]]; ok {
				why = "it runs here, but not by default: its runs " + c
			}
			r.Emulates = append(r.Emulates, Emulation{Target: b.Target,
				NotCalibratedWhy: fmt.Sprintf("%s (--calibrate %s --budget 5m)", why, b.Target)})
		}
	}
	// The emulations of the ladders, by target, to fill as they climb.
	ems := map[string]*Emulation{}
	for i := range r.Emulates {
		ems[r.Emulates[i].Target] = &r.Emulates[i]
	}
	for _, l := range ladders {
		l.em = ems[l.t.String()]
	}

	// A run is cut short a little after the budget, whatever its estimate said.
	hard, cancel := context.WithDeadline(ctx, start.Add(o.Budget+budgetGrace))
	defer cancel()
	sims := map[float64]*Point{}
	n := 0
	for _, l := range ladders {
		for i, k := range o.Rungs {
			if l.done {
				break
			}
			rate := base.Rates.Total * k
			if ctx.Err() != nil {
				l.stop(fmt.Sprintf("%s not run: interrupted", rungs(o.Rungs[i:], base.Rates.Total)))
				continue
			}
			if est := l.estimate(o); time.Since(start)+est > o.Budget {
				l.stop(fmt.Sprintf("%s not run: each takes about %v, over the %v budget", rungs(o.Rungs[i:], base.Rates.Total), est.Round(time.Second), o.Budget))
				continue
			}
			sim, ok := sims[rate]
			if !ok {
				n++
				o.Progress.Note("doctor: calibration %d: the simulator at %g req/s (%gx)", n, rate, k)
				sim = runPoint(hard, o, base, Target{backend.Sim, backend.FlavorPoled}, k, dir)
				sims[rate] = sim
				cal.Points = append(cal.Points, *sim)
			}
			n++
			o.Progress.Note("doctor: calibration %d: %s at %g req/s (%gx), %v", n, l.t, rate, k, o.Duration)
			p := runPoint(hard, o, base, l.t, k, dir)
			for j := range p.DCs {
				for _, s := range sim.DCs {
					if s.Name == p.DCs[j].Name && sim.Error == "" {
						m := s.MeanMS
						p.DCs[j].SimMS = &m
					}
				}
			}
			l.overhead = max(0, time.Duration(p.WallS*float64(time.Second))-o.Duration)
			// A run cut short measured less than the others: shown, not counted.
			switch {
			case ctx.Err() != nil:
				p.Error = "interrupted"
				l.stop(fmt.Sprintf("interrupted at %g req/s (%gx)", rate, k))
			case hard.Err() != nil:
				p.Error = fmt.Sprintf("cut short %v after the %v budget", budgetGrace, o.Budget)
				l.stop(fmt.Sprintf("the run at %g req/s (%gx) was cut short at the budget", rate, k))
			default:
				l.record(*p, i == 0, i == len(o.Rungs)-1)
			}
			cal.Points = append(cal.Points, *p)
		}
	}
	return nil
}

// rungs names rungs like "2000 req/s (2x), 4000 req/s (4x)".
func rungs(ks []float64, base float64) string {
	var s []string
	for _, k := range ks {
		s = append(s, fmt.Sprintf("%g req/s (%gx)", base*k, k))
	}
	return strings.Join(s, ", ")
}

func (l *ladder) stop(why string) {
	l.done = true
	if l.em.Stop == "" {
		l.em.Stop = why
	}
}

// record takes a run into the target's emulation: the overhead at the first rung, the
// highest trusted rate so far, and the end of the climb at a failure or a verdict
// other than trusted.
func (l *ladder) record(p Point, first, top bool) {
	if first && len(p.DCs) > 0 {
		l.em.Calibrated, l.em.OverheadAt = true, p.Rate
		for _, dc := range p.DCs {
			o := Overhead{DC: dc.Name}
			if dc.SimMS != nil {
				v := dc.MeanMS - *dc.SimMS
				o.OverSimMS = &v
			}
			if dc.ModelMS != nil {
				v := dc.MeanMS - *dc.ModelMS
				o.OverModelMS = &v
			}
			l.em.Overhead = append(l.em.Overhead, o)
		}
	}
	switch {
	case p.Error != "" && len(p.DCs) == 0:
		if first {
			l.em.NotCalibratedWhy = "the run failed: " + p.Error
		}
		l.stop(fmt.Sprintf("the run at %g req/s (%gx) failed: %s", p.Rate, p.Multiple, p.Error))
	case !p.Trusted():
		// The verdict's reasons are the point's (the table shows what they rest on).
		stop := fmt.Sprintf("no verdict at %g req/s (%gx): the host was not measured", p.Rate, p.Multiple)
		if p.Verdict != "" {
			stop = fmt.Sprintf("%s at %g req/s (%gx)", p.Verdict, p.Rate, p.Multiple)
		}
		l.stop(stop)
	case p.Error != "":
		// Trusted numbers, but the run reported an error (verification, say): the
		// climb stops, the numbers stand.
		l.em.TrustedUpTo, l.em.TrustedMultiple = p.Rate, p.Multiple
		l.stop(fmt.Sprintf("the run at %g req/s (%gx) reported: %s", p.Rate, p.Multiple, p.Error))
	default:
		l.em.TrustedUpTo, l.em.TrustedMultiple = p.Rate, p.Multiple
		if top {
			l.em.HighestRungTried = true
			l.done = true
		}
	}
}

// runPoint runs the spec on target at k times its rate through runner.Run, as
// `polebench run` does, in a directory of its own under dir.
func runPoint(ctx context.Context, o Options, base *spec.Spec, t Target, k float64, dir string) *Point {
	rate := base.Rates.Total * k
	p := &Point{Target: t.String(), Multiple: k, Rate: rate}
	if t.Backend == backend.Sim {
		p.Target = backend.Sim
	}
	sp, err := base.With(
		spec.Setting{Name: "rate", Value: strconv.FormatFloat(rate, 'f', -1, 64)},
		spec.Setting{Name: "backend", Value: t.Backend},
		spec.Setting{Name: "flavor", Value: t.Flavor},
	)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	out := filepath.Join(dir, fmt.Sprintf("%s-%s-%gx", t.Backend, t.Flavor, k))
	t0 := time.Now()
	res, err := runner.Run(ctx, runner.Options{Spec: sp, Out: out, Progress: o.Progress, WarmUp: o.ZooKeeperWarmUp,
		Log: o.Log.With("doctor", p.Target, "rate", rate)})
	p.WallS = time.Since(t0).Seconds()
	if err != nil {
		p.Error = oneLine(err)
	}
	if res == nil || len(res.Summaries) == 0 || res.Summaries[0] == nil {
		if p.Error == "" {
			p.Error = "no summary"
		}
		return p
	}
	sum := res.Summaries[0]
	lat := sum.LatencyMS["before"]
	for _, dc := range sp.DataCenters {
		st, ok := lat[dc.Name]
		if !ok {
			continue
		}
		p.DCs = append(p.DCs, DC{Name: dc.Name, MeanMS: st.Mean, P99MS: st.P99, ModelMS: st.ModelMS})
	}
	p.AchievedRate, p.SendLagP99MS = sum.AchievedRate, sum.SendLagMS.P99
	if hw := sum.Host["before"]; hw != nil {
		p.Verdict, p.Reasons, p.Moved, p.StalledPct, p.StallMaxMS = hw.Verdict, hw.Reasons, hw.Moved(), hw.StalledPct, hw.StallMaxMS
	}
	return p
}

// oneLine joins a (joined) error's lines.
func oneLine(err error) string {
	var msgs []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			msgs = append(msgs, l)
		}
	}
	return strings.Join(msgs, "; ")
}
