package sim

import "github.com/polebench/polebench/cluster/backend"

// The simulator is a backend a spec may name (backend: sim): the runner runs the
// servers here, in virtual time, with no cluster to bring up (cluster.New refuses it).
// Its name is registered with the others', last in their order.
func init() {
	backend.Register(backend.Backend{Name: backend.Sim, Rank: 90, Flavors: []string{backend.FlavorPoled}})
}
