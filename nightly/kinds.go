package nightly

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/polebench/polebench/bench"
	"github.com/polebench/polebench/benchdata"
	"github.com/polebench/polebench/callgrind"
	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/zookeeper"
	"github.com/polebench/polebench/spec"
)

// Kinds of entry.
const (
	// KindRun runs the entry's spec with runner.Run, on the spec's backend; its set
	// is the spec's overrides, as `polebench run` takes them without the dashes.
	KindRun = "run"
	// KindBench is the write benchmark of `polebench bench` (package bench): poled
	// against other flavors on loopback; its set is that command's flags without the
	// dashes, plus zookeeper-warmup.
	KindBench = "bench"
)

// kind is how one kind of entry is checked, planned and run.
type kind struct {
	usesSpec bool
	goals    map[string]bool // the goal fields it takes
	// apply resolves e with sets (Resolved or Load); on failure it returns the index of
	// the setting to blame, or -1 when it is their combination.
	apply     func(e *Entry, sets []spec.Setting) (int, error)
	checkGoal func(e Entry, g benchdata.Goal) error
	planned   func(e Entry) time.Duration
	where     func(e Entry) string
	// check says why this machine cannot run the entry, without starting anything;
	// an error marked cluster.ErrUnprepared is one prepare mends.
	check func(ctx context.Context, e Entry) error
	// prepare, if set, readies the machine for the entry until release.
	prepare func(ctx context.Context, e Entry) (note string, release func(context.Context) error, err error)
	// run runs the entry into dir: run directories for benchdata.Collect, or a bench.json
	// of its own.
	run func(ctx context.Context, e Entry, dir string, env runEnv) error
}

var kinds = map[string]kind{
	KindRun: {
		usesSpec: true,
		goals:    map[string]bool{"measured_minus_model_ms": true, "rtt_error_pct_max": true},
		apply:    applyRun,
		planned:  plannedRun,
		where: func(e Entry) string {
			w := cmp.Or(e.Resolved.Backend, backend.Local)
			if f := e.Resolved.Flavor; f != "" && f != backend.FlavorPoled {
				w += " " + f
			}
			return w
		},
		check: func(ctx context.Context, e Entry) error {
			return cluster.Check(ctx, e.Resolved.Backend, e.Resolved.Flavor)
		},
		prepare: func(ctx context.Context, e Entry) (string, func(context.Context) error, error) {
			return cluster.Prepare(ctx, e.Resolved.Backend)
		},
		run: runRun,
	},
	KindBench: {
		goals:     map[string]bool{"throughput_ratio_min": true, "no_trend": true},
		apply:     applyBench,
		checkGoal: checkBenchGoal,
		planned:   plannedBench,
		where: func(e Entry) string {
			return "loopback " + strings.Join(e.Load.Flavors, " vs ")
		},
		check: func(ctx context.Context, e Entry) error {
			for _, f := range e.Load.Flavors {
				if err := cluster.Check(ctx, backend.Local, f); err != nil {
					return err
				}
			}
			return nil
		},
		run: runBench,
	},
	KindSimSpeed: {
		usesSpec: true,
		goals:    map[string]bool{},
		apply:    applySimSpeed,
		planned:  plannedSimSpeed,
		where:    simSpeedWhere,
		check:    func(context.Context, Entry) error { return nil },
		run:      runSimSpeed,
	},
	KindSimInstructions: {
		usesSpec: true,
		goals:    map[string]bool{},
		apply:    applySimInstructions,
		planned:  plannedSimInstructions,
		where:    simInstructionsWhere,
		check:    func(context.Context, Entry) error { return callgrind.Available() },
		run:      runSimInstructions,
	},
	KindKazoo: {
		goals:   map[string]bool{},
		apply:   applyKazoo,
		planned: plannedKazoo,
		where:   kazooWhere,
		check:   checkKazoo,
		run:     runKazoo,
	},
}

func kindNames() []string { return sorted(slices.Collect(maps.Keys(kinds))) }

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}

func applyRun(e *Entry, sets []spec.Setting) (int, error) {
	r, err := e.Base.With(sets...)
	if err == nil {
		e.Resolved = r
		return -1, nil
	}
	for i, st := range sets {
		if _, err := e.Base.With(st); err != nil && (strings.Contains(err.Error(), "override "+st.String()+":") || strings.Contains(err.Error(), fmt.Sprintf("unknown override %q", st.Name))) {
			return i, err
		}
	}
	return -1, err
}

// Setup times of a real run's repetition beside its duration: the cluster's start and
// the wait for its leader, the keyspace, the read-back and the analysis.
var setup = map[string]time.Duration{
	backend.Local:  8 * time.Second,
	backend.Netns:  10 * time.Second,
	backend.Docker: 15 * time.Second,
	backend.Swarm:  30 * time.Second, // services are scheduled, the image pushed to the node
}

func plannedRun(e Entry) time.Duration {
	sp := e.Resolved
	reps := time.Duration(max(sp.Repetitions, 1))
	if sp.Backend == backend.Sim {
		// Virtual time: a repetition takes a small part of its duration.
		return reps * (sp.Duration/50 + time.Second)
	}
	b := cmp.Or(sp.Backend, backend.Local)
	s := setup[b]
	if sp.Flavor == backend.FlavorZooKeeper {
		s += 10*time.Second + zookeeper.WarmUp // the JVMs' start, then their JIT's warm-up
	}
	var once time.Duration
	if b != backend.Local {
		once = 30 * time.Second // poled built (and its image) for the first repetition
	}
	return once + reps*(sp.Duration+s)
}

// benchSettings are a bench entry's settings: `polebench bench`'s flags.
var benchSettings = map[string]func(c *bench.Config, v string) error{
	"flavor": func(c *bench.Config, v string) error {
		c.Flavors = bench.SplitList(v)
		return nil
	},
	"servers": func(c *bench.Config, v string) error {
		c.Servers = nil
		for _, s := range bench.SplitList(v) {
			n, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("%q is not a number of servers", s)
			}
			c.Servers = append(c.Servers, n)
		}
		return nil
	},
	"fsync": func(c *bench.Config, v string) error {
		c.Fsync = nil
		for _, s := range bench.SplitList(v) {
			switch s {
			case "on":
				c.Fsync = append(c.Fsync, true)
			case "off":
				c.Fsync = append(c.Fsync, false)
			default:
				return fmt.Errorf("%q: want on, off, or off,on", s)
			}
		}
		return nil
	},
	"mode":    func(c *bench.Config, v string) error { c.Mode = v; return nil },
	"rate":    func(c *bench.Config, v string) error { return parseFloat(v, &c.Rate) },
	"clients": func(c *bench.Config, v string) error { return parseInt(v, &c.Clients) },
	"payload": func(c *bench.Config, v string) error { return parseInt(v, &c.Payload) },
	"warmup":  func(c *bench.Config, v string) error { return parseDuration(v, &c.Warmup) },
	// ZooKeeper's JIT needs a longer warm-up than poled before its windows stop rising.
	"zookeeper-warmup": func(c *bench.Config, v string) error {
		var d time.Duration
		if err := parseDuration(v, &d); err != nil {
			return err
		}
		if c.FlavorWarmup == nil {
			c.FlavorWarmup = map[string]time.Duration{}
		}
		c.FlavorWarmup[backend.FlavorZooKeeper] = d
		return nil
	},
	"duration":    func(c *bench.Config, v string) error { return parseDuration(v, &c.Duration) },
	"repetitions": func(c *bench.Config, v string) error { return parseInt(v, &c.Repetitions) },
}

func applyBench(e *Entry, sets []spec.Setting) (int, error) {
	// The defaults are package bench's, as `polebench bench`'s are.
	var c bench.Config
	for i, st := range sets {
		set, ok := benchSettings[st.Name]
		if !ok {
			return i, fmt.Errorf("unknown setting %q of kind bench (known: %s)", st.Name, strings.Join(sorted(keys(benchSettings)), ", "))
		}
		if err := set(&c, st.Value); err != nil {
			return i, fmt.Errorf("%s: %w", st, err)
		}
	}
	c.Defaults()
	if err := c.Check(); err != nil {
		return -1, err
	}
	e.Load = &c
	return -1, nil
}

func checkBenchGoal(e Entry, g benchdata.Goal) error {
	c := e.Load
	if g.ThroughputRatioMin != nil && !(slices.Contains(c.Flavors, backend.FlavorPoled) && slices.Contains(c.Flavors, backend.FlavorZooKeeper)) {
		return fmt.Errorf("throughput_ratio_min compares poled with zookeeper: the entry measures %s", strings.Join(c.Flavors, ", "))
	}
	if g.NoTrend && c.Repetitions < benchdata.TrendMinN {
		return fmt.Errorf("no_trend: %d windows can never show a trend at p < %g (Mann-Kendall needs %d)", c.Repetitions, benchdata.TrendAlpha, benchdata.TrendMinN)
	}
	return nil
}

func plannedBench(e Entry) time.Duration {
	c := e.Load
	const start = 20 * time.Second // every flavor's cluster up, the clients connected, the keys made
	per := start
	for _, f := range c.Flavors {
		per += c.WarmupOf(f) + time.Duration(c.Repetitions)*c.Duration
	}
	return time.Duration(len(c.Servers)*len(c.Fsync)) * per
}

// runBench runs a bench entry: its table and the trend of each flavor's windows go
// to the night's output and dir/table.txt, its metrics to dir/bench.json.
func runBench(ctx context.Context, e Entry, dir string, env runEnv) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c := *e.Load
	c.Log, c.Progress = env.log, env.line
	res, runErr := bench.Run(ctx, c)
	if res == nil {
		return runErr
	}
	// What was measured is kept, also when a later setting failed.
	table, err := res.Save(dir, benchdata.Env{})
	env.line.Note("%s", strings.TrimRight(table, "\n"))
	if err != nil {
		return err
	}
	return runErr
}

func parseInt(v string, dst *int) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%q is not an integer", v)
	}
	*dst = n
	return nil
}

func parseFloat(v string, dst *float64) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", v)
	}
	*dst = f
	return nil
}

func parseDuration(v string, dst *time.Duration) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is not a duration (like 10s)", v)
	}
	*dst = d
	return nil
}
