package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/nemesis"
)

// Constructor starts a cluster on a backend and returns once every server listens. On
// error it removes whatever it created.
type Constructor func(ctx context.Context, opts Options) (Cluster, error)

// DownFunc removes what crashed harnesses left behind of a backend or flavor, the runs
// labelled label ("" every polebench run's), and lists what it removed.
type DownFunc func(ctx context.Context, label string) ([]string, error)

// CheckFunc says why this machine cannot run a backend or flavor, without starting
// anything; nil if it can.
type CheckFunc func(ctx context.Context) error

// PrepareFunc makes this machine able to run a backend for a while, where the backend
// can do that and undo it; note says what it did, release undoes it. An error says
// why it could not.
type PrepareFunc func(ctx context.Context) (note string, release func(context.Context) error, err error)

// ErrUnprepared marks a Check error that the backend's Prepare mends (Unprepared).
var ErrUnprepared = errors.New("the backend's Prepare makes this machine ready")

// Unprepared marks err, a Check error, as one that Prepare mends; its text is err's.
func Unprepared(err error) error { return unprepared{err} }

type unprepared struct{ error }

func (u unprepared) Unwrap() []error { return []error{u.error, ErrUnprepared} }

// Backend is what a backend package registers (Register, from its init): its name
// and declarations, and how to start, clean up and check it.
type Backend struct {
	Name string // as specs and --backend name it
	// Rank orders backend.Names, lowest first (local 10, netns 20, docker 30, swarm
	// 40; the simulator, which registers no cluster, 90).
	Rank int
	// Carries is what it declares it can do with poled (the spec is checked against
	// it; docs/backends.md, "What each backend carries").
	Carries backend.Carries
	// New starts a cluster of poled replicas, the default flavor.
	New Constructor
	// Down, if set, removes what crashed harnesses left of this backend.
	Down DownFunc
	// Check, if set, says whether this machine can run the backend.
	Check CheckFunc
	// Prepare, if set, readies this machine for the backend until released (the
	// swarm backend makes the local engine a single-node swarm manager when it is in
	// no swarm); its Check marks what Prepare mends with Unprepared.
	Prepare PrepareFunc
}

// Flavor is what a package that runs another replica than poled registers
// (RegisterFlavor, from its init): its name and declarations, and its constructor on
// each backend it runs on, the backends being registered by their own packages.
type Flavor struct {
	Name string                 // as specs and --flavor name it
	On   map[string]Constructor // backend name -> constructor
	// Carries is what it declares it can do (a run gets what both it and its backend
	// carry); Oracles, HighestFirst and Preload are the limits of its election and
	// state (backend.Flavor says each).
	Carries      backend.Carries
	Oracles      []string
	HighestFirst bool
	Preload      bool
	// Settings, CanWin and Rule are its own settings and election rule (backend.Flavor
	// says each).
	Settings func(given map[string]string, widestRTT time.Duration) (map[string]string, error)
	CanWin   func(survivors []int, n int, logs map[int]uint64) []int
	Rule     string
	// Down, if set, removes what crashed harnesses left of this flavor (beyond what
	// its backends' Down removes).
	Down DownFunc
	// Check, if set, says whether this machine can run the flavor at all (on any of
	// its backends, whose own Check is asked too).
	Check CheckFunc
	// Version, if set, says which build of the flavor's server this machine has and
	// where (polebench doctor prints it), or why it has none.
	Version func(ctx context.Context) (string, error)
}

// Register adds backend b to the registry (package backend's, which holds b itself
// for New, Down and Check). It panics on a backend without a name or a constructor,
// and on a name registered twice: programming errors, found at start.
func Register(b Backend) {
	if b.Name == "" || b.New == nil {
		panic(fmt.Sprintf("cluster: Register(%q) without a name or a constructor", b.Name))
	}
	backend.Register(backend.Backend{Name: b.Name, Rank: b.Rank, Carries: b.Carries, Impl: b})
}

// RegisterFlavor adds flavor f to the registry. It panics on a flavor without a name,
// on poled (every backend runs poled itself), on a flavor that runs on no backend, and
// on a flavor registered twice.
func RegisterFlavor(f Flavor) {
	if f.Name == "" || f.Name == Poled || len(f.On) == 0 {
		panic(fmt.Sprintf("cluster: RegisterFlavor(%q): a flavor needs a name other than %s and a backend to run on", f.Name, Poled))
	}
	backend.RegisterFlavor(backend.Flavor{Name: f.Name, On: slices.Sorted(maps.Keys(f.On)), Carries: f.Carries,
		Oracles: f.Oracles, HighestFirst: f.HighestFirst, Preload: f.Preload,
		Settings: f.Settings, CanWin: f.CanWin, Rule: f.Rule, Impl: f})
}

// poled is the default flavor, which every backend runs itself (Backend.New): it
// carries every fault, its links are whatever its backend makes them.
func init() {
	backend.RegisterFlavor(backend.Flavor{Name: Poled, Preload: true, Carries: backend.Carries{
		Faults: nemesis.Kinds(), Links: backend.Links{Schedules: true},
		Why: map[string]string{"placement": "poled places its leader itself, by the spec's oracle (POLE's election): give oracle: instead"}}})
}

// Backends lists the backends New knows (and the simulator's, which it refuses).
func Backends() []string { return backend.Names() }

// registered is backend name's registration, if it registered one through Register.
func registered(name string) (Backend, bool) {
	e, _ := backend.Lookup(name)
	b, ok := e.Impl.(Backend)
	return b, ok
}

// flavorOf is flavor name's registration, if it registered one through RegisterFlavor.
func flavorOf(name string) (Flavor, bool) {
	e, _ := backend.LookupFlavor(name)
	f, ok := e.Impl.(Flavor)
	return f, ok
}

// constructor is what starts flavor on backend name, if anything registered one.
func constructor(name, flavor string) Constructor {
	if flavor == Poled {
		b, _ := registered(name)
		return b.New
	}
	f, _ := flavorOf(flavor)
	return f.On[name]
}

// New starts a cluster on the named backend ("" is local, the embedded default) with
// opts.Flavor's replicas ("" is poled).
func New(ctx context.Context, name string, opts Options) (Cluster, error) {
	name = cmp.Or(name, backend.Default)
	flavor := cmp.Or(opts.Flavor, Poled)
	if !slices.Contains(backend.Names(), name) {
		return nil, fmt.Errorf("unknown backend %q (known: %v)", name, Backends())
	}
	if !backend.Runs(name, flavor) {
		if len(backend.For(flavor)) == 0 {
			return nil, fmt.Errorf("unknown flavor %q (known: %s)", flavor, strings.Join(backend.Flavors(), ", "))
		}
		return nil, fmt.Errorf("flavor %s does not run on backend %q: only on %s (see docs/backends.md, flavors)", flavor, name, strings.Join(backend.For(flavor), ", "))
	}
	start := constructor(name, flavor)
	if start == nil {
		if backend.Simulated(name) {
			return nil, fmt.Errorf("backend %q simulates a run (polebench run --backend %s); it has no cluster to bring up", name, name)
		}
		return nil, fmt.Errorf("backend %q registered no cluster of flavor %s", name, flavor)
	}
	// The servers of some backends run in another working directory (a network
	// namespace's process, a container's mount): a relative data root means nothing there.
	if opts.DataRoot != "" {
		abs, err := filepath.Abs(opts.DataRoot)
		if err != nil {
			return nil, fmt.Errorf("data root: %w", err)
		}
		opts.DataRoot = abs
	}
	return start(ctx, opts)
}

// Down removes what crashed harnesses left behind on every registered backend and
// flavor (network namespaces, links and processes of the netns backend, ZooKeeper JVMs
// of the local backend, containers, networks and volumes of the docker backend,
// services, configs, overlay networks and the nodes' containers and volumes of the
// swarm backend; the local backend lives and dies with the process): the backends by
// rank, then the flavors by name. Label "" means every polebench run's. It goes on past
// an error, which names the backend or flavor.
func Down(ctx context.Context, label string) ([]string, error) {
	type down struct {
		name string
		f    DownFunc
	}
	var downs []down
	for _, name := range backend.Names() {
		if b, ok := registered(name); ok && b.Down != nil {
			downs = append(downs, down{name, b.Down})
		}
	}
	for _, name := range backend.Flavors() {
		if f, ok := flavorOf(name); ok && f.Down != nil {
			downs = append(downs, down{name, f.Down})
		}
	}
	var removed []string
	var errs []error
	for _, d := range downs {
		r, err := d.f(ctx, label)
		removed = append(removed, r...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.name, err))
		}
	}
	return removed, errors.Join(errs...)
}

// Check says whether this machine can run the named backend ("" is local) with flavor
// ("" is poled), without starting anything, so a suite of runs can fail an entry at
// once and say why instead of after each repetition's attempt: what the flavor needs
// (Java with ZooKeeper's jars for zookeeper), then what the backend needs (root for
// netns and docker, a Docker engine that answers for docker and swarm, a swarm manager
// for swarm). nil for local and sim.
func Check(ctx context.Context, name, flavor string) error {
	name, flavor = cmp.Or(name, backend.Default), cmp.Or(flavor, Poled)
	if !backend.Runs(name, flavor) {
		return fmt.Errorf("flavor %s does not run on backend %q: only on %s", flavor, name, strings.Join(backend.For(flavor), ", "))
	}
	f, _ := flavorOf(flavor)
	b, _ := registered(name)
	if f.Check != nil {
		if err := f.Check(ctx); err != nil {
			return err
		}
	}
	if b.Check != nil {
		return b.Check(ctx)
	}
	return nil
}

// Installed is Version of flavor's registration: ok is false for a flavor that
// registered none (poled is this build).
func Installed(ctx context.Context, flavor string) (version string, ok bool, err error) {
	f, _ := flavorOf(flavor)
	if f.Version == nil {
		return "", false, nil
	}
	version, err = f.Version(ctx)
	return version, true, err
}

// Prepare readies this machine to run the named backend ("" is local) for a while,
// where the backend registered a Prepare; release puts the machine back as it was. A
// backend without one needs nothing: note is "" and release does nothing.
func Prepare(ctx context.Context, name string) (note string, release func(context.Context) error, err error) {
	b, _ := registered(cmp.Or(name, backend.Default))
	if b.Prepare == nil {
		return "", func(context.Context) error { return nil }, nil
	}
	return b.Prepare(ctx)
}
