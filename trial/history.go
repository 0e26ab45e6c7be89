package trial

import (
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

	// What the store derives from the above and keeps (Store.Write), or read back
	// (Read): the analysis reads these, so a stored run analyses as it did live.
	Paths     []analysis.Path // the acknowledged writes' ways through the servers
	Join      analysis.JoinStats
	HostInput *analysis.HostInput
}

// Host is what the host did while the run went on: the hiccup meters' reports per
// process (one per life) and the host sampler's samples, on the wall clock; the run
// started at Start.
type Host struct {
	Start   time.Time
	Reports map[string][]hiccup.Report
	Samples []hiccup.HostSample
}
