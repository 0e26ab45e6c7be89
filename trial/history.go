package trial

import (
	"fmt"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/hiccup"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/workload"
)

// History is what an execution of a Test recorded: a real cluster's and the
// simulator's alike. The Store keeps it; the analysis reads it.
type History struct {
	Backend string
	Flavor  string // a real cluster's replicas
	Label   string // what a real backend labelled its leftovers with
	Links   string // how the links were emulated: "kernel", "user-space", "simulated"
	Servers []cluster.Server

	Timeline []record.Record   // the servers' and the harness's events
	Records  []workload.Record // every request
	// Marks are each server's trace marks, in order, in pieces (the simulator's
	// chunks); MarksStart is the run's zero on their clock.
	Marks        map[int][][]trace.Mark
	MarksStart   int64
	RTTs         map[string]any // what the servers measured (or their links did)
	Verification *workload.Verification
	Host         *Host // nil where no host was measured (the simulator)
}

// Derived is what the analysis reads of a history beside the history itself, computed
// from it once (Derive). The store keeps it and reads it back, since the trace marks the
// join comes from are not kept; so a stored run analyses as it did live.
type Derived struct {
	Paths []analysis.Path // the acknowledged writes' ways through the servers
	Join  analysis.JoinStats
	Host  *analysis.HostInput // nil where no host was measured
}

// Derive joins h's records with its trace marks (the latency anatomy's paths) and turns
// what its host did into what the analysis reads, rounded as the store writes it.
func Derive(h *History) (*Derived, error) {
	d := &Derived{}
	d.Paths, d.Join = analysis.Join(h.Records, h.Marks, h.MarksStart)
	if h.Host != nil {
		var err error
		if d.Host, err = hostInput(h.Host); err != nil {
			return nil, fmt.Errorf("host: %w", err)
		}
	}
	return d, nil
}

// Host is what the host did while the run went on: the hiccup meters' reports per
// process (one per life) and the host sampler's samples, on the wall clock; the run
// started at Start.
type Host struct {
	Start   time.Time
	Reports map[string][]hiccup.Report
	Samples []hiccup.HostSample
}
