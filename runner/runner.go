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
	"math/rand/v2"
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
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trial"
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
	// Workers steps each simulated repetition's DCs on that many goroutines
	// (sim.Config.Workers: the outputs do not depend on it); 0 or 1: one loop.
	Workers int
	// ZooKeeperWarmUp is how long a ZooKeeper cluster serves writes before the run
	// (0: zookeeper.WarmUp, so its JIT has compiled the write path; negative:
	// none, for a run that checks correctness only).
	ZooKeeperWarmUp time.Duration
	// Faults, if set, replace the spec's schedule in every repetition (a check's
	// random one: sim.RandomFaults).
	Faults []nemesis.Fault
	// Fsync runs poled with fsync on: what it acknowledged is durable, so the nemesis
	// can lose the rest (nemesis.LoseUnsynced).
	Fsync bool
	// AfterLoad, if set, is called on a real cluster once the load and the faults are
	// over and before the read-back (a check's convergence); its error is the run's.
	AfterLoad func(ctx context.Context, cl cluster.Cluster) error
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
	dir, err := trial.Dir(o.Out, o.Spec.Name)
	if err != nil {
		return nil, err
	}
	res := &Result{Dir: dir}
	if err := trial.WriteSpec(dir, o.Spec); err != nil {
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
			errs = append(errs, trial.WriteAggregate(dir, agg))
		}
	}
	return res, errors.Join(errs...)
}

// repetitionRun is one repetition of the spec, running.
type repetitionRun struct {
	o     Options
	n     int
	dir   string
	log   *slog.Logger
	start time.Time
	nodes nodeEvents
	// harness is what the harness did (load, faults, servers serving again).
	harness harnessLog
	traces  *traceCollector // the servers' trace marks (the latency anatomy)
	host    *hostMeter      // what the host did meanwhile (hiccups, CPU)
}

func (r *repetitionRun) run(ctx context.Context) (*Repetition, error) {
	t, err := trial.New(r.o.Spec, r.n)
	if err != nil {
		return nil, err
	}
	if r.o.Faults != nil {
		t.Faults = r.o.Faults
	}
	st, err := trial.Create(r.dir, t)
	if err != nil {
		return nil, err
	}
	var h *trial.History
	var herr error
	if t.Spec.Backend == backend.Sim {
		h, herr = r.simulate(ctx, t)
	} else {
		h, herr = r.execute(ctx, t, st)
	}
	if h == nil {
		return nil, herr
	}
	d, err := trial.Derive(h)
	if err != nil {
		return nil, errors.Join(herr, err)
	}
	if err := st.Write(h, d); err != nil {
		return nil, errors.Join(herr, err)
	}
	sum, err := trial.Analyse(r.dir, t, h, d, r.log)
	if err != nil {
		return nil, errors.Join(herr, err)
	}
	rep := &Repetition{N: r.n, Dir: r.dir, Summary: sum, Verification: h.Verification}
	if herr == nil && h.Verification != nil {
		if err := h.Verification.Err(); err != nil {
			herr = fmt.Errorf("verification: %w", err)
		}
	}
	switch {
	case ctx.Err() != nil && t.Spec.Backend == backend.Sim:
		herr = errors.Join(herr, fmt.Errorf("interrupted: what was simulated is in %s", r.dir))
	case ctx.Err() != nil:
		herr = errors.Join(herr, fmt.Errorf("interrupted at %v: what was measured is in %s", time.Since(r.start).Round(time.Second), r.dir))
	}
	return rep, herr
}

// execute runs t on a real cluster: it starts it, waits for the initial leader, drives
// the workload while the nemesis plays, and returns the history (nil if the run got
// nowhere), with what went wrong on the way.
func (r *repetitionRun) execute(ctx context.Context, t *trial.Test, st *trial.Store) (*trial.History, error) {
	sp := t.Spec
	r.status("starting %s cluster (%d servers)", sp.Backend, t.Topology.N())
	// The label marks what the backend creates, for `polebench cluster down LABEL`.
	label := newLabel()
	opts := t.Cluster(st.Path("data"), label, r.log, r.o.ZooKeeperWarmUp)
	opts.Fsync = r.o.Fsync
	cl, err := cluster.New(ctx, sp.Backend, opts)
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	defer r.teardown(ctx, cl)
	tg := newTarget(cl)
	for _, f := range t.Faults {
		if err := tg.supports(f.Kind); err != nil {
			return nil, fmt.Errorf("%s (%s backend, flavor %s): %w", f.Source, sp.Backend, sp.Flavor, err)
		}
	}
	r.host = startHostMeter(ctx, cl)
	defer r.host.stop()
	servers := cl.Servers()
	h := &trial.History{Backend: sp.Backend, Flavor: sp.Flavor, Label: label, Links: cl.Links(), Servers: servers}
	if err := st.WriteServers(h); err != nil {
		return nil, err
	}
	if err := r.waitInitialLeader(ctx, cl); err != nil {
		return nil, err
	}

	w, err := workload.New(t.Workload(servers, st.RecordsPath(), r.log.With("part", "workload")))
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if err := w.Prepare(ctx); err != nil {
		return nil, fmt.Errorf("prepare workload: %w", err)
	}

	var schedules cluster.LinkSchedules
	if len(t.Plan.Schedules) > 0 {
		var ok bool
		if schedules, ok = cl.(cluster.LinkSchedules); !ok {
			return nil, fmt.Errorf("the %s backend cannot change links during a run (the spec's link schedules)", sp.Backend)
		}
	}
	r.start = time.Now()
	r.harness.add(record.Harness(0, event.LoadStart, 0, nil))
	runCtx, stopFaults := context.WithCancel(ctx)
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		nemesis.Play(runCtx, nemesis.Wall{Start: r.start}, tg, t.Faults, r.observer(cl, w, servers))
	}()
	schedDone := make(chan struct{})
	go func() {
		defer close(schedDone)
		if schedules == nil {
			return
		}
		err := schedules.PlayLinkSchedules(runCtx, r.start, func(in netem.Instant) {
			at := in.At
			if !in.Applied.IsZero() {
				at = in.Applied.Sub(r.start)
			}
			r.harness.add(record.Harness(at, event.LinkChange, in.Self, in.Err))
		})
		if err != nil && runCtx.Err() == nil {
			r.log.Warn("link schedules", "err", err)
			r.harness.add(record.Harness(time.Since(r.start), event.LinkChange, 0, err))
		}
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
	r.harness.add(record.Harness(time.Since(r.start), event.LoadEnd, 0, werr))
	stopFaults()
	<-faultsDone
	<-schedDone
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
	var afterErr error
	if r.o.AfterLoad != nil {
		afterErr = r.o.AfterLoad(actx, cl)
	}
	marks, lost := r.traces.result()
	if lost > 0 {
		r.log.Warn("trace marks overwritten before they were read", "lost", lost)
	}
	h.Timeline = record.Timeline(r.start, r.harness.records(), r.nodes.all())
	h.Records, h.Marks, h.MarksStart = wres.Records, marks, netem.At(r.start)
	h.RTTs = measuredRTTs(actx, cl)
	h.Host = r.host.result(r.start)
	ver, verr := workload.Verify(actx, w.VerifyConfig(), wres.Records)
	h.Verification = ver
	var errs []error
	if werr != nil {
		errs = append(errs, fmt.Errorf("workload: %w", werr))
	}
	if verr != nil {
		errs = append(errs, fmt.Errorf("verification: %w", verr))
	}
	if afterErr != nil {
		errs = append(errs, afterErr)
	}
	return h, errors.Join(errs...)
}

// teardown removes the cluster whatever happened, with a context of its own: the
// caller's may be cancelled (Ctrl-C).
func (r *repetitionRun) teardown(ctx context.Context, cl cluster.Cluster) {
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
func (r *repetitionRun) waitInitialLeader(ctx context.Context, cl cluster.Cluster) error {
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

// labels are the cluster labels this process has given out.
var labels struct {
	sync.Mutex
	used map[string]bool
}

// newLabel is a cluster label no other run of this process has: random, and never
// one given out before. Labels taken from the clock's microseconds collided between
// runs that parallel tests started together, which then took down each other's
// clusters.
func newLabel() string {
	labels.Lock()
	defer labels.Unlock()
	if labels.used == nil {
		labels.used = map[string]bool{}
	}
	for {
		l := fmt.Sprintf("r%07d", rand.IntN(1e7))
		if !labels.used[l] {
			labels.used[l] = true
			return l
		}
	}
}
