// Package backend is the registry of backend names and of the flavors each runs. It is
// a leaf so that the spec can check a backend name without importing the backends
// themselves (and, through them, the replica and its cores): each backend package
// registers its name from its init (through cluster.Register), so the names a program
// knows are those of the backends it links (package cluster/all links every one).
package backend

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
)

// Names of the backends this project has.
const (
	Local  = "local" // the embedded default: poled nodes in the harness process
	Netns  = "netns"
	Docker = "docker"
	Swarm  = "swarm" // one service per server on a Docker Swarm, across machines
	// Sim runs the servers' code in virtual time (package sim); it is a backend of
	// the runner, not of package cluster: it has no processes or sockets to offer.
	Sim = "sim"
)

// Flavors of replica a backend can run.
const (
	FlavorPoled     = "poled"     // this project's replica (the default)
	FlavorZooKeeper = "zookeeper" // Apache ZooKeeper 3.8, Debian's package, as the baseline
)

// Flavors lists every flavor a spec may name. Which backends run each is what they
// registered (For).
func Flavors() []string { return []string{FlavorPoled, FlavorZooKeeper} }

// Backend is a backend's registration.
type Backend struct {
	Name string
	// Rank orders Names, lowest first (ties by name): the order help texts and errors
	// list the backends in.
	Rank int
	// Flavors are the flavors it runs itself; a package of another flavor may add its
	// own to it (AddFlavor).
	Flavors []string
}

type entry struct {
	rank       int
	registered bool // Register ran; AddFlavor alone does not make a backend
	flavors    []string
}

var registry struct {
	sync.Mutex
	backends map[string]*entry
}

func get(name string) *entry {
	if registry.backends == nil {
		registry.backends = map[string]*entry{}
	}
	e := registry.backends[name]
	if e == nil {
		e = &entry{}
		registry.backends[name] = e
	}
	return e
}

// Register records backend b, from the init of the package that implements it. It
// panics on an empty name or a name registered twice: both are programming errors.
func Register(b Backend) {
	registry.Lock()
	defer registry.Unlock()
	if b.Name == "" {
		panic("backend: Register with an empty name")
	}
	e := get(b.Name)
	if e.registered {
		panic(fmt.Sprintf("backend: %q registered twice", b.Name))
	}
	e.registered, e.rank = true, b.Rank
	for _, f := range b.Flavors {
		if !slices.Contains(e.flavors, f) {
			e.flavors = append(e.flavors, f)
		}
	}
}

// AddFlavor records that backend name runs flavor too: a flavor's package runs its
// replicas on backends registered by others (package zookeeper on local and netns). It
// may run before or after the backend's Register; until that, the name is not listed.
func AddFlavor(name, flavor string) {
	registry.Lock()
	defer registry.Unlock()
	e := get(name)
	if !slices.Contains(e.flavors, flavor) {
		e.flavors = append(e.flavors, flavor)
	}
}

// Names lists every registered backend, by rank: the backends a spec may name in this
// program.
func Names() []string {
	registry.Lock()
	defer registry.Unlock()
	var names []string
	for name, e := range registry.backends {
		if e.registered {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(registry.backends[a].rank, registry.backends[b].rank), cmp.Compare(a, b))
	})
	return names
}

// For lists the registered backends that run flavor ("" is poled), by rank.
func For(flavor string) []string {
	flavor = cmp.Or(flavor, FlavorPoled)
	var out []string
	for _, name := range Names() {
		if Runs(name, flavor) {
			out = append(out, name)
		}
	}
	return out
}

// Runs says whether the named backend ("" is local) is registered and runs flavor
// ("" is poled).
func Runs(name, flavor string) bool {
	name, flavor = cmp.Or(name, Local), cmp.Or(flavor, FlavorPoled)
	registry.Lock()
	defer registry.Unlock()
	e := registry.backends[name]
	return e != nil && e.registered && slices.Contains(e.flavors, flavor)
}

// The simulator is a backend a spec may name (backend: sim): the runner runs the
// servers' code in virtual time (package sim), with no cluster to bring up (cluster.New
// refuses it). Every program that reads specs knows it, last in the order.
func init() {
	Register(Backend{Name: Sim, Rank: 90, Flavors: []string{FlavorPoled}})
}
