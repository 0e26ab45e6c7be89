// Package doctor says what this host can measure faithfully, in under two minutes:
// its cores and clock source, how late a 1 ms sleep wakes while the harness idles,
// the loopback TCP round trip (the floor under every emulated link), whether the
// kernel runs netem, whether Docker and a swarm answer, whether Java and ZooKeeper
// are installed, which build of each other flavor's server (etcd) is, and then a short calibration: two-dc without a crash on the local
// backend, beside the simulator, at 1x, 2x and 4x the spec's rate until the hiccup
// meter's verdict is no longer trusted. What it cannot check (no Docker, no Java, not
// root, out of time) it says, and goes on: only a bug of its own is an error.
package doctor

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/progress"
)

// Defaults. The budget leaves fifteen seconds of the two minutes for a run that
// overruns its estimate (cut short budgetGrace after the budget), its teardown and
// the report; the checks take about six of the budget.
const (
	DefaultSpec            = "two-dc"
	DefaultDuration        = 10 * time.Second // per calibration run, warm-up included
	DefaultWarmup          = 2 * time.Second
	DefaultIdle            = 3 * time.Second
	DefaultLoopback        = time.Second
	DefaultBudget          = 105 * time.Second
	DefaultZooKeeperWarmUp = 10 * time.Second // runs use zookeeper.WarmUp (25 s)
	// budgetGrace is how far past the budget a calibration run may go before it is
	// cut short: the estimate of a run's length is a guess on a busy host.
	budgetGrace = 5 * time.Second
)

// DefaultRungs are the multiples of the spec's rate the calibration climbs.
func DefaultRungs() []float64 { return []float64{1, 2, 4} }

// Target is a backend and a flavor of replica.
type Target struct{ Backend, Flavor string }

func (t Target) String() string { return t.Backend + "/" + t.Flavor }

// DefaultTargets are calibrated unless told otherwise: the backends that need
// nothing of the host but Go (and Java for ZooKeeper).
func DefaultTargets() []Target {
	return []Target{{backend.Local, backend.FlavorPoled}, {backend.Local, backend.FlavorZooKeeper}}
}

// ParseTarget reads "backend/flavor" ("backend" alone: poled).
func ParseTarget(s string) (Target, error) {
	b, f, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		f = backend.FlavorPoled
	}
	t := Target{b, f}
	switch {
	case b == backend.Sim:
		return t, fmt.Errorf("%q: the simulator is the reference every run is set beside, not a target", s)
	case !slices.Contains(backend.Names(), b):
		return t, fmt.Errorf("%q: unknown backend %q (known: %s)", s, b, strings.Join(backend.Names(), ", "))
	case !slices.Contains(backend.Flavors(), f):
		return t, fmt.Errorf("%q: unknown flavor %q (known: %s)", s, f, strings.Join(backend.Flavors(), ", "))
	case !backend.Runs(b, f):
		return t, fmt.Errorf("%q: flavor %s runs only on %s", s, f, strings.Join(backend.For(f), ", "))
	}
	return t, nil
}

// Options configure Run; zero values take the defaults.
type Options struct {
	Log      *slog.Logger
	Progress *progress.Line // nil: quiet
	// Duration and Warmup are each calibration run's length and the part of it not
	// measured.
	Duration, Warmup time.Duration
	Idle             time.Duration // how long the hiccup meter runs with the harness idle
	Loopback         time.Duration // how long the loopback ping-pong runs
	// Budget bounds the whole doctor: a calibration run starts only if it is expected
	// to end within it (and is cut short a few seconds after it).
	Budget time.Duration
	Rungs  []float64 // multiples of the spec's rate, climbed in order
	// Targets are calibrated in this order, each up its ladder while it stays trusted
	// and the budget allows; nil: DefaultTargets.
	Targets         []Target
	ZooKeeperWarmUp time.Duration // how long ZooKeeper's JIT warms before a run
	// Out keeps the calibration runs' directories there; "": a temporary directory,
	// removed at the end.
	Out string
	// NoCalibration stops after the checks.
	NoCalibration bool

	// What tests replace: the clock source's sysfs directory, the netem probe.
	clockDir   string
	netemProbe func(context.Context) error
}

func (o Options) withDefaults() Options {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Duration, DefaultDuration)
	def(&o.Warmup, DefaultWarmup)
	def(&o.Idle, DefaultIdle)
	def(&o.Loopback, DefaultLoopback)
	def(&o.Budget, DefaultBudget)
	def(&o.ZooKeeperWarmUp, DefaultZooKeeperWarmUp)
	if len(o.Rungs) == 0 {
		o.Rungs = DefaultRungs()
	}
	if o.Targets == nil {
		o.Targets = DefaultTargets()
	}
	if o.clockDir == "" {
		o.clockDir = clockSourceDir
	}
	if o.netemProbe == nil {
		o.netemProbe = netem.Probe
	}
	return o
}

// Report is what the doctor found. Sections it could not fill say why in Unchecked.
type Report struct {
	Started     time.Time    `json:"started"`
	WallS       float64      `json:"wall_s"`
	Host        Host         `json:"host"`
	Clock       Clock        `json:"clock"`
	Idle        *Idle        `json:"idle_hiccups,omitempty"`
	Loopback    *Loopback    `json:"loopback,omitempty"`
	Netem       Netem        `json:"kernel_netem"`
	Docker      Docker       `json:"docker"`
	Java        Java         `json:"java"`
	Flavors     []Installed  `json:"flavors,omitempty"`
	Backends    []Backend    `json:"backends"`
	Calibration *Calibration `json:"calibration,omitempty"`
	Emulates    []Emulation  `json:"emulates,omitempty"`
	Unchecked   []string     `json:"could_not_check,omitempty"`
	Interrupted bool         `json:"interrupted,omitempty"`
	BudgetS     float64      `json:"budget_s"`
}

func (r *Report) couldNot(format string, a ...any) {
	r.Unchecked = append(r.Unchecked, fmt.Sprintf(format, a...))
}

// Run examines this host. It returns an error only for a bug of its own: whatever the
// host lacks is in the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	o = o.withDefaults()
	start := time.Now()
	r := &Report{Started: start, BudgetS: o.Budget.Seconds()}
	note := func(format string, a ...any) { o.Progress.Note("doctor: "+format, a...) }
	interrupted := func(what string) bool {
		if ctx.Err() == nil {
			return false
		}
		r.couldNot("%s: interrupted", what)
		return true
	}

	r.Host = hostInfo()
	r.Clock = clockInfo(o.clockDir)
	if r.Clock.Error != "" {
		r.couldNot("clock source: %s", r.Clock.Error)
	}
	if !interrupted("idle hiccups") {
		note("idle hiccups (%v of 1 ms sleeps)", o.Idle)
		r.Idle = idleHiccups(ctx, o.Idle)
	}
	if !interrupted("loopback round trip") {
		note("loopback round trip (%v of TCP ping-pong on 127.0.0.1)", o.Loopback)
		lb, err := loopback(ctx, o.Loopback)
		if err != nil {
			r.couldNot("loopback round trip: %v", err)
		}
		r.Loopback = lb
	}
	if !interrupted("kernel netem") {
		note("kernel netem (a qdisc in a throwaway network namespace)")
		r.Netem = netemCheck(ctx, o.netemProbe)
		if r.Netem.Status == Unchecked {
			r.couldNot("kernel netem: %s", r.Netem.Detail)
		}
	}
	r.Docker.Detail, r.Java.Detail = "interrupted", "interrupted" // until checked
	if !interrupted("docker") {
		note("docker and swarm")
		r.Docker = dockerCheck(ctx)
		if !r.Docker.Reachable {
			r.couldNot("docker: %s", r.Docker.Detail)
			r.couldNot("swarm: no Docker engine to ask")
		}
	}
	if !interrupted("java") {
		note("java and ZooKeeper")
		r.Java = javaCheck(ctx)
		if !r.Java.Ready {
			r.couldNot("java/ZooKeeper: %s", r.Java.Detail)
		}
	}
	if !interrupted("flavors") {
		note("the flavors' servers")
		r.Flavors = installed(ctx)
		for _, f := range r.Flavors {
			if f.Detail != "" {
				r.couldNot("%s: %s", f.Flavor, f.Detail)
			}
		}
	}
	if !interrupted("backends") {
		r.Backends = backendsCheck(ctx, r.Docker)
	}
	if !o.NoCalibration && !interrupted("calibration") {
		if err := calibrate(ctx, o, r, start); err != nil {
			return r, fmt.Errorf("doctor: calibration: %w", err)
		}
	}
	r.Interrupted = ctx.Err() != nil
	r.WallS = time.Since(start).Seconds()
	return r, nil
}

// runnable says whether the backends check found t runnable here, and if not why.
func (r *Report) runnable(t Target) (bool, string) {
	for _, b := range r.Backends {
		if b.Target == t.String() {
			return b.Runs, b.Why
		}
	}
	return false, "not checked"
}

// check is cluster.Check, bounded: a Docker engine that does not answer must not eat
// the budget.
func check(ctx context.Context, t Target) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return cluster.Check(cctx, t.Backend, t.Flavor)
}
