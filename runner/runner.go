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
	"sync"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster"
	_ "github.com/polebench/polebench/cluster/all" // every backend cluster.New may name
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/pool"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/replica"
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
	// WarmUp is how long a cluster whose flavor needs warming (a JIT to compile its
	// write path) serves writes before the run (cluster.Options.WarmUp: 0, the
	// flavor's own default; negative: none, for a run that checks correctness only).
	WarmUp time.Duration
	// Faults, if set, replace the spec's schedule in every repetition (a check's
	// random one: sim.RandomFaults).
	Faults []nemesis.Fault
	// Fsync runs the replicas with fsync on: what it acknowledged is durable, so the nemesis
	// can lose the rest (nemesis.LoseUnsynced).
	Fsync bool
	// AfterLoad, if set, is called on a real cluster once the load and the faults are
	// over and before the read-back (a check's convergence); its error is the run's.
	AfterLoad func(ctx context.Context, cl cluster.Cluster) error
	// Controller is the command that runs a placement controller on a job file (it
	// gets --job FILE after it); default: this program's own place subcommand
	// (os.Executable() place), which a test binary gives through its TestMain.
	Controller []string
	// Broken, for the checkers' tests only, breaks the named servers on purpose
	// (cluster.Options.Broken; the local backend's servers only).
	Broken map[int]replica.Variant
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

// repetitionRun is one repetition of the spec, running: its test goes to the
// executor its backend calls for, its history to the store, then to the analysis.
type repetitionRun struct {
	o   Options
	n   int
	dir string
	log *slog.Logger
}

// executor is a trial.Executor that says, once its run was interrupted, what it left.
type executor interface {
	trial.Executor
	interrupted() error
}

// executor is the one the backend calls for: the simulator for a backend that runs in
// virtual time (as the registry declares it), else a real cluster.
func (r *repetitionRun) executor() executor {
	if backend.Simulated(r.o.Spec.Backend) {
		return simRun{r}
	}
	return &clusterRun{repetitionRun: r, traces: newTraceCollector()}
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
	ex := r.executor()
	h, herr := ex.Execute(ctx, t, st)
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
	if ctx.Err() != nil {
		herr = errors.Join(herr, ex.interrupted())
	}
	return rep, herr
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
