package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/sim"
	"github.com/polebench/polebench/trial"
)

// simRun is the executor of a test in the simulator: the same servers' code in
// virtual time, and the same history as a real run.
type simRun struct{ *repetitionRun }

var _ trial.Executor = simRun{}

func (r simRun) Execute(ctx context.Context, t *trial.Test, _ *trial.Store) (*trial.History, error) {
	r.status("simulating %s (%d servers, %v)", t.Spec.Name, t.Topology.N(), t.Spec.Duration)
	t0 := time.Now()
	cfg := t.Sim(r.log.With("part", "sim"))
	cfg.Workers = r.o.Workers
	res, err := sim.Run(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.log.Info("simulated", "events", res.Events, "virtual", res.Virtual, "wall", time.Since(t0).Round(time.Millisecond),
		"workers", cfg.Workers, "windows", res.Windows)
	if res.OneLoop != "" {
		r.log.Info("simulated again on one loop", "why", res.OneLoop)
	}
	return Simulated(t, res), nil
}

// interrupted says where what an interrupted simulation left is.
func (r simRun) interrupted() error {
	return fmt.Errorf("interrupted: what was simulated is in %s", r.dir)
}

// Simulated is the history of a simulated run of t.
func Simulated(t *trial.Test, res *sim.Result) *trial.History {
	h := &trial.History{Backend: t.Spec.Backend, Links: "simulated", Timeline: res.Timeline, Records: res.Records,
		Marks: res.Marks, MarksStart: res.MarksStart, RTTs: res.RTTs, Verification: res.Verification}
	for _, id := range t.Topology.Servers() {
		h.Servers = append(h.Servers, cluster.Server{ID: id, DC: t.Topology.DC(id)})
	}
	return h
}
