// Package arrival names the arrival processes of the open-loop workload: how a pacer
// spaces its requests in time. It is a leaf so that the spec, which reads the name from
// YAML, and the workload, which schedules by it, share one set of names without the spec
// importing the workload (and its ZooKeeper client).
package arrival

// Kind is the shape of a pacer's schedule.
type Kind string

const (
	// Poisson spaces requests by exponential gaps of mean 1/rate (the default).
	Poisson Kind = "poisson"
	// Constant spaces requests exactly 1/rate apart.
	Constant Kind = "constant"
)

// Kinds returns every kind, the default first.
func Kinds() []Kind { return []Kind{Poisson, Constant} }
