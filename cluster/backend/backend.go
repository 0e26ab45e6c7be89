// Package backend names the cluster backends. It is a leaf so that the spec can check
// a backend name without importing the backends themselves (and, through them, the
// replica and its cores).
package backend

import "slices"

const (
	Local  = "local" // the embedded default: poled nodes in the harness process
	Netns  = "netns"
	Docker = "docker"
	Swarm  = "swarm" // one service per server on a Docker Swarm, across machines
	// Sim runs the servers' code in virtual time (package sim); it is a backend of
	// the runner, not of package cluster: it has no processes or sockets to offer.
	Sim = "sim"
)

// Names lists every backend a spec may name.
func Names() []string { return []string{Local, Netns, Docker, Swarm, Sim} }

// Flavors of replica a backend can run.
const (
	FlavorPoled     = "poled"     // this project's replica (the default)
	FlavorZooKeeper = "zookeeper" // Apache ZooKeeper 3.8, Debian's package, as the baseline
)

// Flavors lists every flavor a spec may name.
func Flavors() []string { return []string{FlavorPoled, FlavorZooKeeper} }

// For lists the backends that run flavor: poled runs on every backend; ZooKeeper's
// JVMs on the local and netns backends only (docker has no image for them without a
// registry, swarm neither, and the simulator runs poled's code, not ZooKeeper's).
func For(flavor string) []string {
	if flavor == FlavorZooKeeper {
		return []string{Local, Netns}
	}
	return Names()
}

// Runs says whether the named backend ("" is local) runs flavor.
func Runs(name, flavor string) bool {
	if name == "" {
		name = Local
	}
	return slices.Contains(For(flavor), name)
}
