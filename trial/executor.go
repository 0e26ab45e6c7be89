package trial

import "context"

// Executor turns a Test into its History: a real cluster (the runner's, whatever the
// backend that starts it) or the simulator. The registry says which a backend is
// (package cluster/backend: Carries.Simulated). st is the run directory, for what an
// execution writes as it goes (a real run's requests and servers); the History is
// written by the caller, once the execution is over.
type Executor interface {
	Execute(ctx context.Context, t *Test, st *Store) (*History, error)
}
