// Package backend is the registry: for each backend (where replicas run) and each
// flavor (which replicas run), its name and what it declares it carries (Carries:
// fault kinds, link modes, pause, disk faults, leader transfer). It is a leaf so that
// the spec checks a spec against the declarations without importing the backends
// themselves (and, through them, the replica and its cores). Each backend and each
// flavor registers once, from its own package's init (through cluster.Register and
// cluster.RegisterFlavor, which keep their constructors in the same entry, Impl; the
// simulator through Register here), so what a program knows is what it links
// (package cluster/all links every one). docs/backends.md says how to add one.
package backend

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/polebench/polebench/nemesis"
)

// The names of the backends and flavors this project has: the registry's table, for
// the packages that register them and the tools that name one on purpose (doctor,
// nightly). spec, runner and nemesis ask the registry instead.
const (
	Local  = "local" // the embedded default: poled nodes in the harness process
	Netns  = "netns"
	Docker = "docker"
	Swarm  = "swarm" // one service per server on a Docker Swarm, across machines
	// Sim runs the servers' code in virtual time (package sim): it has no processes
	// or sockets to offer, and runs with the runner's simulator executor.
	Sim = "sim"

	FlavorPoled     = "poled"     // this project's replica (the default)
	FlavorZooKeeper = "zookeeper" // Apache ZooKeeper 3.8, Debian's package, as the baseline
)

// The defaults a spec gets when it names no backend or flavor.
const (
	Default       = Local
	DefaultFlavor = FlavorPoled
)

// Carries is what a backend or a flavor declares it can do. A run gets what both its
// backend and its flavor carry (Carried).
type Carries struct {
	// Faults are the fault kinds it plays (nemesis.Kinds for all). Pause is
	// nemesis.Pause and Resume; the disk faults are LoseUnsynced, TornTail, SlowDisk.
	Faults []nemesis.Kind
	Links  Links
	// LeaderTransfer: it can move leadership to a server on request (what a
	// placement controller needs: spec's placement; Why["placement"] says why not).
	LeaderTransfer bool
	// Simulated: the backend runs in virtual time (the runner's simulator executor,
	// not a cluster); its runs share nothing with the host, so they go side by side.
	Simulated bool
	// Why says why it lacks what it lacks, in its own words, for the errors that
	// refuse a spec: by fault kind ("pause"), by spec field ("oracle", "preload_mb",
	// "initial_leader", "outdate"), or "faults" for any fault kind not named.
	Why map[string]string
}

// Links is how a backend emulates the link plan; a flavor may lack Schedules.
type Links struct {
	// Kernel: tc-netem in the servers' network namespaces (where the host's kernel
	// has sch_netem; else the backend falls back to UserSpace and checks the plan).
	Kernel bool
	// UserSpace: delay lines per message or per connection, carrying TCP streams:
	// no duplicates, no reordering, no loss or delay correlation.
	UserSpace bool
	// Schedules: it changes links during a run (the plan's schedules).
	Schedules bool
	// RateLoss: a rate limit and random loss per link.
	RateLoss bool
	// Streams (a flavor's): its servers' connections go through the backend's links
	// as TCP streams (delaying proxies), which lose nothing where those links are
	// user space.
	Streams bool
}

// Backend is a backend's entry.
type Backend struct {
	Name string
	// Rank orders Names, lowest first (ties by name): the order help texts and errors
	// list the backends in (local 10, netns 20, docker 30, swarm 40, sim 90).
	Rank    int
	Carries Carries
	// Impl is what starts it, held for the package that reads it (package cluster's
	// Backend: its constructor, cleanup and check); nil for the simulator.
	Impl any
}

// Flavor is a flavor's entry.
type Flavor struct {
	Name string
	// On are the backends it runs on (registered by their own packages, before or
	// after it); nil for the default flavor, which every backend runs itself.
	On      []string
	Carries Carries
	// Oracles are the oracles its election can follow (nil: every one).
	Oracles []string
	// HighestFirst: its first election picks the highest id among servers in sync,
	// whatever the spec's initial leader (Carries.Why["initial_leader"] says why).
	HighestFirst bool
	// Preload: it can preload state before a run (preload_mb).
	Preload bool
	// Settings, if set, resolves the spec's flavor.settings: the given ones checked,
	// the missing ones defaulted from widestRTT (the spec's widest RTT between two
	// servers). A bad one is a *SettingError naming it. Nil: it has none.
	Settings func(given map[string]string, widestRTT time.Duration) (map[string]string, error)
	// CanWin, if set, is its own election's rule: which of the survivors (of n
	// servers) may be elected, given what is known of their logs (by server; missing:
	// as up to date as any). Rule says it in a line.
	CanWin func(survivors []int, n int, logs map[int]uint64) []int
	Rule   string
	// Impl is what starts it on each backend, for package cluster (its Flavor).
	Impl any
}

// SettingError is a flavor setting out of range or unknown.
type SettingError struct {
	Key, Msg string
}

func (e *SettingError) Error() string { return e.Key + ": " + e.Msg }

var registry struct {
	sync.Mutex
	backends map[string]Backend
	flavors  map[string]Flavor
}

// Register adds backend b. It panics on an empty name or a name registered twice:
// programming errors, found at start.
func Register(b Backend) {
	registry.Lock()
	defer registry.Unlock()
	if b.Name == "" {
		panic("backend: Register with an empty name")
	}
	if _, dup := registry.backends[b.Name]; dup {
		panic(fmt.Sprintf("backend: %q registered twice", b.Name))
	}
	if registry.backends == nil {
		registry.backends = map[string]Backend{}
	}
	registry.backends[b.Name] = b
}

// RegisterFlavor adds flavor f. It panics on an empty name, a name registered twice,
// and a flavor other than the default that runs on no backend.
func RegisterFlavor(f Flavor) {
	registry.Lock()
	defer registry.Unlock()
	switch _, dup := registry.flavors[f.Name]; {
	case f.Name == "":
		panic("backend: RegisterFlavor with an empty name")
	case dup:
		panic(fmt.Sprintf("backend: flavor %q registered twice", f.Name))
	case f.On == nil && f.Name != DefaultFlavor:
		panic(fmt.Sprintf("backend: flavor %q runs on no backend (On)", f.Name))
	}
	if registry.flavors == nil {
		registry.flavors = map[string]Flavor{}
	}
	registry.flavors[f.Name] = f
}

// Lookup is the entry of backend name ("" is the default), if it registered.
func Lookup(name string) (Backend, bool) {
	registry.Lock()
	defer registry.Unlock()
	b, ok := registry.backends[cmp.Or(name, Default)]
	return b, ok
}

// LookupFlavor is the entry of flavor name ("" is the default), if it registered.
func LookupFlavor(name string) (Flavor, bool) {
	registry.Lock()
	defer registry.Unlock()
	f, ok := registry.flavors[cmp.Or(name, DefaultFlavor)]
	return f, ok
}

// Names lists every registered backend, by rank: the backends a spec may name in this
// program.
func Names() []string {
	registry.Lock()
	defer registry.Unlock()
	var names []string
	for name := range registry.backends {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(registry.backends[a].Rank, registry.backends[b].Rank), cmp.Compare(a, b))
	})
	return names
}

// Flavors lists every registered flavor, the default first, then by name.
func Flavors() []string {
	registry.Lock()
	defer registry.Unlock()
	var names []string
	for name := range registry.flavors {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(-cmp.Compare(boolInt(a == DefaultFlavor), boolInt(b == DefaultFlavor)), cmp.Compare(a, b))
	})
	return names
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// For lists the registered backends that run flavor ("" is the default), by rank.
func For(flavor string) []string {
	var out []string
	for _, name := range Names() {
		if Runs(name, flavor) {
			out = append(out, name)
		}
	}
	return out
}

// Runs says whether backend name and flavor are registered and the flavor runs on
// the backend ("" is the default of each).
func Runs(name, flavor string) bool {
	b, okB := Lookup(name)
	f, okF := LookupFlavor(flavor)
	return okB && okF && (f.On == nil || slices.Contains(f.On, b.Name))
}

// Simulated says whether backend name runs in virtual time (Carries.Simulated).
func Simulated(name string) bool {
	b, _ := Lookup(name)
	return b.Carries.Simulated
}

// Carried is what a run on backend name with flavor carries: the fault kinds both
// play, the backend's link modes with the schedules only if the flavor has them too,
// leader transfer if the flavor has it.
func Carried(name, flavor string) Carries {
	b, _ := Lookup(name)
	f, _ := LookupFlavor(flavor)
	c := b.Carries
	c.Faults = slices.DeleteFunc(slices.Clone(c.Faults), func(k nemesis.Kind) bool { return !f.Carries.Plays(k) })
	c.Links.Schedules = c.Links.Schedules && f.Carries.Links.Schedules
	c.LeaderTransfer = f.Carries.LeaderTransfer
	c.Why = nil
	return c
}

// Plays says whether c holds fault kind k.
func (c Carries) Plays(k nemesis.Kind) bool { return slices.Contains(c.Faults, k) }

// Reason is c's reason for lacking what (a fault kind or a spec field).
func (c Carries) Reason(what string) string {
	if w := c.Why[what]; w != "" {
		return w
	}
	if w := c.Why["faults"]; w != "" && slices.Contains(nemesis.Kinds(), nemesis.Kind(what)) {
		return w
	}
	return "it does not declare it (docs/backends.md)"
}

// Refuses says why backend name and flavor cannot play fault kind k, nil if they can:
// the flavor's reason first, then the backend's.
func Refuses(name, flavor string, k nemesis.Kind) error {
	b, _ := Lookup(name)
	f, _ := LookupFlavor(flavor)
	switch {
	case !f.Carries.Plays(k):
		return fmt.Errorf("%w: flavor %s: %s", nemesis.Unsupported{Kind: k}, f.Name, f.Carries.Reason(string(k)))
	case !b.Carries.Plays(k):
		return fmt.Errorf("%w: the %s backend: %s", nemesis.Unsupported{Kind: k}, b.Name, b.Carries.Reason(string(k)))
	}
	return nil
}

// List joins names as a sentence does: "a", "a and b", "a, b and c".
func List(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// AllBut is every fault kind but those named: what a backend that lacks a few carries.
func AllBut(lacks ...nemesis.Kind) []nemesis.Kind {
	return slices.DeleteFunc(nemesis.Kinds(), func(k nemesis.Kind) bool { return slices.Contains(lacks, k) })
}
