// Package trial is one run of an experiment, as Jepsen has it: the Test a spec becomes
// (every part's configuration, built here and nowhere else), the History an execution
// records (a real cluster's or the simulator's, alike), what Derive computes from a
// History once (the join of records and trace marks, the host as analysed), the Store
// that writes all three into the run directory (its one writer) and reads them back, and
// Analyse over them, which `polebench analyze` repeats on a stored run.
package trial

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/model"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/placement"
	"github.com/polebench/polebench/sim"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/topology"
	"github.com/polebench/polebench/workload"
)

// Test is one repetition of a spec, in parts.
type Test struct {
	Spec     *spec.Spec
	N        int    // the repetition, from 1
	Seed     uint64 // the spec's seed for repetition N: the links' jitter, the workload's streams
	Topology *topology.Topology
	Plan     netem.Plan
	Faults   []nemesis.Fault
	Rates    map[string]float64 // req/s per DC
}

// New is repetition n (from 1) of sp.
func New(sp *spec.Spec, n int) (*Test, error) {
	if n < 1 {
		return nil, fmt.Errorf("run: repetition %d: they count from 1", n)
	}
	t, err := Seeded(sp, sp.Seed+uint64(n)-1)
	if err != nil {
		return nil, err
	}
	t.N = n
	return t, nil
}

// Seeded is sp run with seed (a seed of a random check rather than a repetition).
func Seeded(sp *spec.Spec, seed uint64) (*Test, error) {
	topo, err := sp.Topology()
	if err != nil {
		return nil, err
	}
	return &Test{Spec: sp, N: 1, Seed: seed, Topology: topo, Plan: sp.Plan(topo, seed), Faults: sp.FaultSchedule(), Rates: sp.RatesByDC()}, nil
}

// Cluster is the cluster's options: every server that traces traces every write (for
// the latency anatomy; a flavor without traces ignores it); where it keeps its data,
// how its leftovers are labelled, its log and a flavor's warm-up are the executor's.
func (t *Test) Cluster(dataRoot, label string, log *slog.Logger, warmUp time.Duration) cluster.Options {
	sp := t.Spec
	return cluster.Options{
		Topology: t.Topology, Oracle: sp.Oracle, InitialLeader: sp.InitialLeader, Plan: t.Plan,
		DataRoot: dataRoot, PreloadMB: sp.PreloadMB, InitLimit: sp.InitLimitFor(t.Plan), Label: label, Logger: log, Flavor: sp.Flavor,
		Trace: true, Nodes: sp.Nodes(), WarmUp: warmUp, FlavorSettings: sp.FlavorSettings,
	}
}

// Workload is the workload against servers, its records streamed to records.
func (t *Test) Workload(servers []cluster.Server, records string, log *slog.Logger) workload.Config {
	sp := t.Spec
	var ws []workload.Server
	for _, s := range servers {
		ws = append(ws, workload.Server{ID: s.ID, DC: s.DC, Addr: s.Client})
	}
	return workload.Config{
		Servers: ws, Rates: t.Rates, Arrival: sp.Workload.Arrival,
		Seed: t.Seed, Duration: sp.Duration, PayloadBytes: sp.Workload.PayloadBytes, Keys: sp.Workload.Keys,
		SessionsPerServer: sp.Workload.SessionsPerServer, RecordsPath: records, Log: log,
	}
}

// Sim is the simulation of the run, traced as poled's --trace traces.
func (t *Test) Sim(log *slog.Logger) sim.Config {
	sp := t.Spec
	return sim.Config{
		Topology: t.Topology, Plan: t.Plan, Oracle: sp.Oracle, InitialLeader: sp.InitialLeader, PreloadMB: sp.PreloadMB, InitLimit: sp.InitLimitFor(t.Plan),
		Faults: t.Faults, Rates: t.Rates, Arrival: sp.Workload.Arrival, Seed: t.Seed,
		Duration: sp.Duration, PayloadBytes: sp.Workload.PayloadBytes, Keys: sp.Workload.Keys, Log: log, Trace: true,
	}
}

// Prediction is the analytic model's for the spec.
func (t *Test) Prediction() (*model.Prediction, error) { return t.Spec.Model() }

// PathModel splits the model's latency of each write by window: before the crash every
// server is live, after it all but the initial leader.
func (t *Test) PathModel() (model.PathModel, error) {
	crashed := 0
	if t.Spec.CrashAt > 0 {
		crashed = t.Spec.InitialLeader
	}
	return model.Paths(t.Topology, t.Plan, crashed)
}

// Title names the run in its plots.
func (t *Test) Title() string {
	sp := t.Spec
	title := fmt.Sprintf("%s: %s oracle, p%d killed at %v", sp.Name, sp.Oracle.Name, sp.InitialLeader, sp.CrashAt)
	if pl := sp.Placement; pl != nil && pl.Policy != placement.None {
		// The oracle is the system's own election; the controller places after it.
		title += ", placement " + pl.Policy
		if len(pl.Priority) > 0 {
			title += fmt.Sprintf(" %v", pl.Priority)
		}
	}
	return title
}
