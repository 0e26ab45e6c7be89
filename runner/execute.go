package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/trial"
	"github.com/polebench/polebench/workload"
)

// clusterRun is the executor of a test on a real cluster, whatever backend starts it:
// it starts the cluster, waits for the initial leader, drives the workload while the
// nemesis and the link schedules play, and collects what the servers and the host
// recorded. One runs one repetition.
type clusterRun struct {
	*repetitionRun
	start time.Time
	nodes nodeEvents
	// harness is what the harness did (load, faults, servers serving again).
	harness harnessLog
	traces  *traceCollector // the servers' trace marks (the latency anatomy)
	host    *hostMeter      // what the host did meanwhile (hiccups, CPU)
}

var _ trial.Executor = (*clusterRun)(nil)

// Execute runs t on a real cluster and returns the history (nil if the run got
// nowhere), with what went wrong on the way.
func (r *clusterRun) Execute(ctx context.Context, t *trial.Test, st *trial.Store) (*trial.History, error) {
	sp := t.Spec
	// Refused before anything starts, rather than at the fault: the schedule given
	// in place of the spec's (a check's) was not validated with it.
	for _, f := range t.Faults {
		if err := backend.Refuses(sp.Backend, sp.Flavor, f.Kind); err != nil {
			return nil, fmt.Errorf("%s (%s backend, flavor %s): %w", f.Source, sp.Backend, sp.Flavor, err)
		}
	}
	r.status("starting %s cluster (%d servers)", sp.Backend, t.Topology.N())
	// The label marks what the backend creates, for `polebench cluster down LABEL`.
	label := newLabel()
	opts := t.Cluster(st.Path("data"), label, r.log, r.o.WarmUp)
	opts.Fsync, opts.Broken = r.o.Fsync, r.o.Broken
	cl, err := cluster.New(ctx, sp.Backend, opts)
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	defer r.teardown(ctx, cl)
	if err := reaches(sp.Backend, sp.Flavor, cl); err != nil {
		return nil, err
	}
	r.host = startHostMeter(ctx, cl)
	defer r.host.stop()
	h := &trial.History{Backend: sp.Backend, Flavor: sp.Flavor, Label: label, Links: cl.Links(), Servers: cl.Servers()}
	if err := st.WriteServers(h); err != nil {
		return nil, err
	}
	if err := r.waitInitialLeader(ctx, cl); err != nil {
		return nil, err
	}
	w, err := workload.Open(t.Spec.Flavor, t.Workload(h.Servers, st.RecordsPath(), r.log.With("part", "workload")))
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if err := w.Prepare(ctx); err != nil {
		return nil, fmt.Errorf("prepare workload: %w", err)
	}
	wres, werr := r.load(ctx, t, cl, w)
	if wres == nil {
		return nil, fmt.Errorf("workload: %w", werr)
	}
	// Everything below works with a fresh context: an interrupted run still keeps
	// and analyses what it measured.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	return h, r.collect(actx, h, cl, w, wres, werr)
}

// load drives the workload from now while the nemesis, the link schedules and the
// progress line go on beside it; it returns the workload's result (nil if it got
// nowhere) and error once the load and all of them are over.
func (r *clusterRun) load(ctx context.Context, t *trial.Test, cl cluster.Cluster, w workload.Driver) (*workload.Result, error) {
	schedules, _ := cl.(cluster.LinkSchedules)
	if len(t.Plan.Schedules) == 0 {
		schedules = nil
	}
	servers := cl.Servers()
	r.start = time.Now()
	r.harness.add(record.Harness(0, event.LoadStart, 0, nil))
	pl, err := r.startPlacer(ctx, t, servers)
	defer pl.stop(false) // gone whatever happens: nothing is left behind
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	var beside sync.WaitGroup
	if pl != nil {
		beside.Go(func() { pl.play(runCtx, t.Spec.ControllerFaults()) })
	}
	nem := newTarget(cl)
	beside.Go(func() {
		nemesis.Play(runCtx, nemesis.Wall{Start: r.start}, nem, t.Faults, r.observer(cl, w, servers))
	})
	if schedules != nil {
		beside.Go(func() { r.playSchedules(runCtx, schedules) })
	}
	beside.Go(func() { r.traces.poll(runCtx, servers, cl.Alive) })
	beside.Go(func() { r.progressLoop(runCtx, w) })
	wres, werr := w.RunFrom(ctx, r.start)
	r.harness.add(record.Harness(time.Since(r.start), event.LoadEnd, 0, werr))
	stop()
	pl.stop(false)
	beside.Wait()
	r.restore(ctx, nem, t.Faults)
	r.o.Progress.Done()
	return wres, werr
}

// restore undoes what the faults left before the read-back (target.restore); what
// it could not undo is a harness record.
func (r *clusterRun) restore(ctx context.Context, nem *target, faults []nemesis.Fault) {
	if len(faults) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := nem.restore(ctx, faults); err != nil {
		r.log.Warn("restoring what the faults left before the read-back", "err", err)
		r.harness.add(record.Harness(time.Since(r.start), event.Heal, 0, fmt.Errorf("after the load: %w", err)))
	}
}

// playSchedules changes the links as the plan's schedules say, each change a harness
// record (LINK_CHANGE) at the instant it was applied.
func (r *clusterRun) playSchedules(ctx context.Context, schedules cluster.LinkSchedules) {
	err := schedules.PlayLinkSchedules(ctx, r.start, func(in netem.Instant) {
		at := in.At
		if !in.Applied.IsZero() {
			at = in.Applied.Sub(r.start)
		}
		r.harness.add(record.Harness(at, event.LinkChange, in.Self, in.Err))
	})
	if err != nil && ctx.Err() == nil {
		r.log.Warn("link schedules", "err", err)
		r.harness.add(record.Harness(time.Since(r.start), event.LinkChange, 0, err))
	}
}

// collect fills h with what the servers, the host and the read-back have once the
// load is over, and returns what went wrong: the workload's error werr, the
// verification's, the AfterLoad hook's.
func (r *clusterRun) collect(ctx context.Context, h *trial.History, cl cluster.Cluster, w workload.Driver, wres *workload.Result, werr error) error {
	r.nodes.collect(ctx, cl)
	r.host.collect(ctx, cl)
	r.traces.collect(ctx, h.Servers, cl.Alive)
	var afterErr error
	if r.o.AfterLoad != nil {
		afterErr = r.o.AfterLoad(ctx, cl)
	}
	marks, lost := r.traces.result()
	if lost > 0 {
		r.log.Warn("trace marks overwritten before they were read", "lost", lost)
	}
	h.Timeline = record.Timeline(r.start, r.harness.records(), r.nodes.all())
	h.Records, h.Marks, h.MarksStart = wres.Records, marks, netem.At(r.start)
	h.RTTs = measuredRTTs(ctx, cl)
	h.Host = r.host.result(r.start)
	ver, verr := w.Verify(ctx, wres.Records)
	h.Verification = ver
	var errs []error
	if werr != nil {
		errs = append(errs, fmt.Errorf("workload: %w", werr))
	}
	if verr != nil {
		errs = append(errs, fmt.Errorf("verification: %w", verr))
	}
	return errors.Join(append(errs, afterErr)...)
}

// interrupted says where what an interrupted run measured is.
func (r *clusterRun) interrupted() error {
	return fmt.Errorf("interrupted at %v: what was measured is in %s", time.Since(r.start).Round(time.Second), r.dir)
}

// teardown removes the cluster whatever happened, with a context of its own: the
// caller's may be cancelled (Ctrl-C).
func (r *clusterRun) teardown(ctx context.Context, cl cluster.Cluster) {
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
func (r *clusterRun) waitInitialLeader(ctx context.Context, cl cluster.Cluster) error {
	want := r.o.Spec.InitialLeader
	lctx, cancel := context.WithTimeout(ctx, r.o.LeaderTimeout)
	defer cancel()
	leader, err := cluster.WaitLeaderOf(lctx, cl)
	if err == nil {
		err = cluster.WaitServingOf(lctx, cl, cl.Servers(), cl.Alive)
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
