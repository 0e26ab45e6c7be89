// Package runner runs an experiment end to end: it starts the spec's cluster, makes
// sure the initial leader leads, drives the workload, plays the nemesis, verifies
// every acknowledged write, and leaves one directory per run with the data and the
// analysis (Jepsen's store, one directory per run). It orchestrates only: the faults
// are package nemesis's, the analysis package analysis's, the rendering the CLI's.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster"
	_ "github.com/polebench/polebench/cluster/all" // every backend cluster.New may name
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/pool"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/workload"
)

// Options configure Run.
type Options struct {
	Spec *spec.Spec
	// Out is the run directory; default results/<spec>/<timestamp> with a
	// results/<spec>/latest link to it.
	Out string
	Log *slog.Logger
	// Progress shows what the run is doing; nil: quiet.
	Progress *progress.Line
	// OnRun, if set, hears about each repetition once it is analysed (the CLI prints
	// its table).
	OnRun func(Repetition)
	// LeaderTimeout bounds the wait for the initial leader (default 60 s).
	LeaderTimeout time.Duration
	// Jobs caps how many simulated repetitions run at once (0: Parallelism's choice).
	Jobs int
	// ZooKeeperWarmUp is how long a ZooKeeper cluster serves writes before the run
	// (0: cluster.ZooKeeperWarmUp, so its JIT has compiled the write path; negative:
	// none, for a run that checks correctness only).
	ZooKeeperWarmUp time.Duration
}

// Repetition is one analysed run of the spec.
type Repetition struct {
	N            int
	Dir          string
	Summary      *analysis.Summary
	Verification *workload.Verification // nil if the read-back failed
}

// Result is what Run produced.
type Result struct {
	Dir       string
	Runs      []Repetition
	Summaries []*analysis.Summary // one per repetition that got as far as analysis
	Aggregate *analysis.Repetitions
}

// Run runs every repetition of the spec. Measured data is written before analysis,
// and an interrupted run (ctx cancelled) still analyses what it measured.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Spec == nil {
		return nil, errors.New("runner: no spec")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.LeaderTimeout <= 0 {
		o.LeaderTimeout = 60 * time.Second
	}
	dir, err := runDir(o.Out, o.Spec.Name)
	if err != nil {
		return nil, err
	}
	res := &Result{Dir: dir}
	if err := writeSpec(dir, o.Spec); err != nil {
		return res, err
	}
	var errs []error
	pool.Ordered(ctx, o.Spec.Repetitions, Parallelism(o.Jobs, o.Spec), func(i int) outcome {
		return repetition(ctx, o, dir, i+1)
	}, func(_ int, out outcome) {
		if run := out.run; run != nil {
			res.Runs = append(res.Runs, *run)
			res.Summaries = append(res.Summaries, run.Summary)
			if o.OnRun != nil {
				o.OnRun(*run)
			}
		}
		errs = append(errs, out.err)
	})
	if len(res.Summaries) > 1 {
		agg, err := analysis.AggregateRuns(res.Summaries)
		if err != nil {
			errs = append(errs, err)
		} else {
			res.Aggregate = agg
			errs = append(errs, writeJSON(filepath.Join(dir, "aggregate.json"), agg))
		}
	}
	return res, errors.Join(errs...)
}

// trial is one repetition of the spec, running.
type trial struct {
	o     Options
	n     int
	dir   string
	log   *slog.Logger
	start time.Time
	nodes nodeEvents
	// harness is what the harness did (load, faults, servers serving again).
	harness harnessLog
	traces  *traceCollector // the servers' trace marks (the latency anatomy)
	anat    *anatomyInput
	host    *hostMeter // what the host did meanwhile (hiccups, CPU)
}

func (r *trial) run(ctx context.Context) (*Repetition, error) {
	sp := r.o.Spec
	topo, err := sp.Topology()
	if err != nil {
		return nil, err
	}
	seed := sp.Seed + uint64(r.n) - 1
	plan := sp.Plan(topo, seed)
	if err := netem.WritePlan(filepath.Join(r.dir, "links.json"), plan); err != nil {
		return nil, err
	}
	if sp.Backend == backend.Sim {
		return r.simulate(ctx, topo, plan, seed)
	}
	r.status("starting %s cluster (%d servers)", sp.Backend, topo.N())
	// The label marks what the backend creates, for `polebench cluster down LABEL`.
	label := fmt.Sprintf("r%07d", time.Now().UnixNano()/1000%1e7)
	cl, err := cluster.New(ctx, sp.Backend, cluster.Options{
		Topology: topo, Oracle: sp.Oracle, InitialLeader: sp.InitialLeader, Plan: plan,
		DataRoot: filepath.Join(r.dir, "data"), PreloadMB: sp.PreloadMB, Label: label, Logger: r.log, Flavor: sp.Flavor,
		Trace: sp.Flavor != cluster.ZooKeeper, Nodes: sp.Nodes(), WarmUp: r.o.ZooKeeperWarmUp,
	})
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	defer r.teardown(ctx, cl)
	r.host = startHostMeter(ctx, cl)
	defer r.host.stop()
	servers := cl.Servers()
	if err := writeJSON(filepath.Join(r.dir, "servers.json"), map[string]any{"servers": servers, "links": cl.Links(), "backend": sp.Backend, "flavor": sp.Flavor, "label": label}); err != nil {
		return nil, err
	}
	if err := r.waitInitialLeader(ctx, cl); err != nil {
		return nil, err
	}

	w, err := workload.New(workload.Config{
		Servers: workloadServers(servers), Rates: sp.RatesByDC(), Arrival: workload.Arrival(sp.Workload.Arrival),
		Seed: seed, Duration: sp.Duration, PayloadBytes: sp.Workload.PayloadBytes, Keys: sp.Workload.Keys,
		SessionsPerServer: sp.Workload.SessionsPerServer,
		RecordsPath:       filepath.Join(r.dir, "requests.csv.gz"), Log: r.log.With("part", "workload"),
	})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if err := w.Prepare(ctx); err != nil {
		return nil, fmt.Errorf("prepare workload: %w", err)
	}

	r.start = time.Now()
	r.harness.add(analysis.HarnessRecord(0, event.LoadStart, 0, nil))
	runCtx, stopFaults := context.WithCancel(ctx)
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		nemesis.Play(runCtx, nemesis.Wall{Start: r.start}, target{cl}, sp.FaultSchedule(), r.observer(cl, w, servers))
	}()
	progDone := make(chan struct{})
	go func() {
		defer close(progDone)
		var polls sync.WaitGroup
		polls.Go(func() { r.traces.poll(runCtx, servers, cl.Alive) })
		r.progressLoop(runCtx, w)
		polls.Wait()
	}()
	wres, werr := w.RunFrom(ctx, r.start)
	r.harness.add(analysis.HarnessRecord(time.Since(r.start), event.LoadEnd, 0, werr))
	stopFaults()
	<-faultsDone
	<-progDone
	r.o.Progress.Done()
	if wres == nil {
		return nil, fmt.Errorf("workload: %w", werr)
	}

	// Everything below works with a fresh context: an interrupted run still keeps
	// and analyses what it measured.
	actx, cancelA := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancelA()
	r.nodes.collect(actx, cl)
	r.host.collect(actx, cl)
	r.traces.collect(actx, servers, cl.Alive)
	if r.anat, err = r.anatomy(r.traces, wres.Records, r.start, topo, plan); err != nil {
		return nil, err
	}
	tl := analysis.Timeline(r.start, r.harness.records(), r.nodes.all())
	if err := analysis.WriteEvents(filepath.Join(r.dir, "events.jsonl"), tl); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(r.dir, "rtts.json"), measuredRTTs(actx, cl)); err != nil {
		return nil, err
	}
	ver, verr := workload.Verify(actx, w.VerifyConfig(), wres.Records)
	if ver != nil {
		if err := writeJSON(filepath.Join(r.dir, "verification.json"), ver); err != nil {
			return nil, err
		}
	}
	hostIn, err := r.host.write(r.dir, r.start)
	if err != nil {
		return nil, err
	}
	sum, aerr := r.analyse(tl, wres.Records, ver, hostIn)
	if aerr != nil {
		return nil, errors.Join(werr, verr, fmt.Errorf("analysis: %w", aerr))
	}
	var errs []error
	if werr != nil {
		errs = append(errs, fmt.Errorf("workload: %w", werr))
	}
	if verr != nil {
		errs = append(errs, fmt.Errorf("verification: %w", verr))
	} else if err := ver.Err(); err != nil {
		errs = append(errs, fmt.Errorf("verification: %w", err))
	}
	if ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("interrupted at %v: what was measured is in %s", time.Since(r.start).Round(time.Second), r.dir))
	}
	return &Repetition{N: r.n, Dir: r.dir, Summary: sum, Verification: ver}, errors.Join(errs...)
}

// teardown removes the cluster whatever happened, with a context of its own: the
// caller's may be cancelled (Ctrl-C).
func (r *trial) teardown(ctx context.Context, cl cluster.Cluster) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	logs := filepath.Join(r.dir, "logs")
	os.MkdirAll(logs, 0o755)
	if err := cl.CollectLogs(cctx, logs); err != nil {
		r.log.Warn("collect logs", "err", err)
	}
	if err := cl.Close(cctx); err != nil {
		r.log.Warn("close cluster", "err", err)
	}
	os.RemoveAll(filepath.Join(r.dir, "data"))
}

// waitInitialLeader waits until the spec's initial leader leads and every server serves.
func (r *trial) waitInitialLeader(ctx context.Context, cl cluster.Cluster) error {
	want := r.o.Spec.InitialLeader
	lctx, cancel := context.WithTimeout(ctx, r.o.LeaderTimeout)
	defer cancel()
	leader, err := cluster.WaitLeader(lctx, cl.Servers(), cl.Alive)
	if err == nil {
		err = cluster.WaitServing(lctx, cl.Servers(), cl.Alive)
	}
	if err != nil {
		return fmt.Errorf("waiting for the initial leader p%d: %w", want, err)
	}
	if leader != want {
		return fmt.Errorf("the cluster elected p%d first, but the spec's initial leader is p%d: the run would not measure what the spec describes", leader, want)
	}
	r.status("p%d leads; preparing the workload", leader)
	return nil
}

// analyse writes summary.json, the series, histograms and the plot.
func (r *trial) analyse(tl []analysis.Record, recs []workload.Record, ver *workload.Verification, host *analysis.HostInput) (*analysis.Summary, error) {
	sp := r.o.Spec
	ev := analysis.FindEvents(tl, analysis.Events{WarmupEnd: sp.Workload.Warmup, End: sp.Duration, InitialLeader: sp.InitialLeader})
	in := analysis.Input{Records: recs, Events: ev, OfferedRate: sp.Rates.Total, PayloadBytes: sp.Workload.PayloadBytes, Host: host}
	if a := r.anat; a != nil {
		in.Paths, in.PathModel, in.Join = a.paths, a.model, &a.join
	}
	for _, o := range sp.Outdate {
		in.Outdated = append(in.Outdated, o.Server)
	}
	if pred, err := sp.Model(); err != nil {
		r.log.Warn("no model prediction", "err", err)
	} else {
		p := analysis.Predict(pred, sp.Oracle.Name, sp.RatesByDC(), ev, sp.CrashAt > 0)
		in.Model, in.ModelNote = p.MS, p.Note
	}
	if ver != nil {
		in.LostAcknowledgedWrites = ver.LostAcknowledgedWrites
	}
	title := fmt.Sprintf("%s: %s oracle, p%d killed at %v", sp.Name, sp.Oracle.Name, sp.InitialLeader, sp.CrashAt)
	sum, _, err := analysis.Report(r.dir, in, 500*time.Millisecond, analysis.PlotOptions{Title: title, YMaxMS: analysis.YClip(in.Model)})
	return sum, err
}
