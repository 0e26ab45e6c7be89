package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/sim"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/topology"
	"github.com/polebench/polebench/workload"
)

// simulate is a repetition on the sim backend: the same servers' code in virtual
// time, and the same run directory as a real run.
func (r *trial) simulate(ctx context.Context, topo *topology.Topology, plan netem.Plan, seed uint64) (*Repetition, error) {
	sp := r.o.Spec
	r.status("simulating %s (%d servers, %v)", sp.Name, topo.N(), sp.Duration)
	t0 := time.Now()
	res, err := sim.Run(ctx, simConfig(sp, topo, plan, seed, r.log.With("part", "sim")))
	if err != nil {
		return nil, err
	}
	r.log.Info("simulated", "events", res.Events, "virtual", res.Virtual, "wall", time.Since(t0).Round(time.Millisecond))
	return r.simulated(res, topo, plan)
}

// simConfig is the simulation of sp's run on topo and plan, traced as poled's --trace
// traces, for the anatomy.
func simConfig(sp *spec.Spec, topo *topology.Topology, plan netem.Plan, seed uint64, log *slog.Logger) sim.Config {
	return sim.Config{
		Topology: topo, Plan: plan, Oracle: sp.Oracle, InitialLeader: sp.InitialLeader, PreloadMB: sp.PreloadMB,
		Faults: sp.FaultSchedule(), Rates: sp.RatesByDC(), Arrival: workload.Arrival(sp.Workload.Arrival), Seed: seed,
		Duration: sp.Duration, PayloadBytes: sp.Workload.PayloadBytes, Keys: sp.Workload.Keys, Log: log, Trace: true,
	}
}

// simulated writes and analyses what a simulated run left.
func (r *trial) simulated(res *sim.Result, topo *topology.Topology, plan netem.Plan) (*Repetition, error) {
	sp := r.o.Spec
	var servers []map[string]any
	for _, id := range topo.Servers() {
		servers = append(servers, map[string]any{"id": id, "dc": topo.DC(id)})
	}
	// The records are written while the anatomy is joined, its paths while the run is
	// analysed (both only read them): on two cores this is a third of the CLI's time.
	written := make(chan error, 1)
	joined := make(chan struct{})
	go func() {
		w, err := workload.CreateRecords(filepath.Join(r.dir, "requests.csv.gz"))
		if err == nil {
			err = errors.Join(w.Write(res.Records...), w.Close())
		}
		<-joined
		if err == nil {
			err = r.anat.write(r.dir)
		}
		written <- err
	}()
	r.anat = r.anatomyOf(res.Marks, res.Records, res.MarksStart, topo, plan)
	close(joined)
	errs := []error{
		writeJSON(filepath.Join(r.dir, "servers.json"), map[string]any{"servers": servers, "links": "simulated", "backend": sp.Backend}),
		analysis.WriteEvents(filepath.Join(r.dir, "events.jsonl"), res.Timeline),
		writeJSON(filepath.Join(r.dir, "rtts.json"), res.RTTs),
		writeJSON(filepath.Join(r.dir, "verification.json"), res.Verification)}
	if err := errors.Join(errs...); err != nil {
		<-written
		return nil, err
	}
	sum, err := r.analyse(res.Timeline, res.Records, res.Verification, nil) // no host: virtual time
	if werr := <-written; werr != nil {
		return nil, werr
	}
	if err != nil {
		return nil, fmt.Errorf("analysis: %w", err)
	}
	return &Repetition{N: r.n, Dir: r.dir, Summary: sum, Verification: res.Verification}, res.Verification.Err()
}
