package sim

import (
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/nemesis"
)

// The simulator is the backend a spec names to run in virtual time: every fault, its
// links the plan's delay lines (user space: per message, in order), schedules
// included. It registers no cluster: the runner's simulator executor runs it.
func init() {
	backend.Register(backend.Backend{Name: backend.Sim, Rank: 90, Carries: backend.Carries{
		Faults:    nemesis.Kinds(),
		Links:     backend.Links{UserSpace: true, Schedules: true, RateLoss: true},
		Simulated: true,
	}})
}
