package nightly

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/polebench/polebench/bench"
	"github.com/polebench/polebench/benchdata"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/hiccup"
	"github.com/polebench/polebench/sim"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trial"
)

// KindSimSpeed times the simulator itself on the entry's spec: each repetition is
// simulated at every worker count of its workers setting (Config.Workers), beside a
// fixed piece of reference work that says how fast the host was just then.
const KindSimSpeed = "sim-speed"

// defaultWorkers is what a sim-speed entry runs without a workers setting: one loop,
// and the windows on two cores.
var defaultWorkers = []int{1, 2}

func applySimSpeed(e *Entry, sets []spec.Setting) (int, error) {
	e.Workers = defaultWorkers
	var rest []spec.Setting
	var at []int // rest's indexes in sets
	for i, st := range sets {
		switch st.Name {
		case "workers":
			var ws []int
			for _, s := range bench.SplitList(st.Value) {
				n, err := strconv.Atoi(s)
				if err != nil || n < 1 {
					return i, fmt.Errorf("%s: %q is not a count of workers (1 or more)", st, s)
				}
				if slices.Contains(ws, n) {
					return i, fmt.Errorf("%s: %d twice", st, n)
				}
				ws = append(ws, n)
			}
			e.Workers = ws
		case "backend", "flavor":
			return i, fmt.Errorf("%s: a %s entry always runs the simulator", st, KindSimSpeed)
		default:
			rest, at = append(rest, st), append(at, i)
		}
	}
	blame, err := applyRun(e, rest)
	if blame >= 0 {
		blame = at[blame]
	}
	return blame, err
}

// plannedSimSpeed takes the simulator to step serverWritesPerS writes applied on a
// server a second, at any worker count (docs/nightly.md says what it was measured on).
const serverWritesPerS = 300e3

func plannedSimSpeed(e Entry) time.Duration {
	sp := e.Resolved
	serverWrites := sp.Duration.Seconds() * sp.Rates.Total * float64(sp.N())
	once := time.Duration(serverWrites/serverWritesPerS*float64(time.Second)) + time.Second/2
	return time.Duration(max(sp.Repetitions, 1)*len(e.Workers)) * once
}

// runSimSpeed simulates each repetition at each worker count and writes dir/bench.json.
// The raw speeds are the host's as much as the code's: compare reports them (moved) and
// fails only on what the code moves, the events, the speedup and the cost in references.
// The metrics:
//   - events_per_write: the simulator's events per request, the same at any worker
//     count (the entry fails if not) and on any host: deterministic;
//   - x_realtime.wN: simulated time over wall time with N workers;
//   - cpu_us_per_write.wN: the process's CPU (every thread's) per request;
//   - speedup.wN: one loop's wall time over N workers', in one repetition;
//   - host_ref_ms: the CPU the reference work took before the repetition (better
//     neither way: the host's), and cpu_per_write_in_refs.wN, the CPU per 1,000
//     requests in references: the simulator's cost with the host's speed divided
//     out, as far as the reference tracks it.
func runSimSpeed(ctx context.Context, e Entry, dir string, env runEnv) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sp := e.Resolved
	ms := map[string]*benchdata.Metric{}
	add := func(name, unit string, better benchdata.Better, min benchdata.MinEffect, det bool, v float64) {
		m := ms[name]
		if m == nil {
			m = &benchdata.Metric{Name: name, Unit: unit, Better: better, MinEffect: min, Deterministic: det}
			ms[name] = m
		}
		m.Samples = append(m.Samples, v)
	}
	var runErr error
reps:
	for rep := 1; rep <= max(sp.Repetitions, 1); rep++ {
		t, err := trial.New(sp, rep)
		if err != nil {
			return err
		}
		ref := hostReference()
		add("host_ref_ms", "ms", benchdata.Neither, benchdata.MinEffect{Rel: 0.1}, false, ms64(ref))
		var events uint64
		var wallOne time.Duration // the repetition on one loop
		for _, w := range e.Workers {
			cfg := t.Sim(env.log.With("part", "sim", "rep", rep, "workers", w))
			cfg.Workers = w
			c0, t0 := hiccup.ProcessCPU(), time.Now()
			res, err := sim.Run(ctx, cfg)
			wall, cpu := time.Since(t0), hiccup.ProcessCPU()-c0
			if err != nil {
				runErr = fmt.Errorf("repetition %d, %d workers: %w", rep, w, err)
				break reps
			}
			if res.OneLoop != "" {
				// Then the run is timed twice over: no number of the windows' speed.
				runErr = fmt.Errorf("repetition %d, %d workers: went back to one loop (%s)", rep, w, res.OneLoop)
				break reps
			}
			writes := float64(len(res.Records))
			if events == 0 {
				events = res.Events
				add("events_per_write", "events", benchdata.Lower, benchdata.MinEffect{Rel: 0.05}, true, float64(events)/writes)
			} else if res.Events != events {
				runErr = fmt.Errorf("repetition %d: %d events with %d workers, %d with %d: a seed must give one run at any count", rep, res.Events, w, events, e.Workers[0])
				break reps
			}
			suffix := fmt.Sprintf(".w%d", w)
			add("x_realtime"+suffix, "x", benchdata.Neither, benchdata.MinEffect{Rel: 0.1}, false, float64(sp.Duration)/float64(wall))
			cpuPerWrite := cpu.Seconds() / writes
			add("cpu_us_per_write"+suffix, "µs", benchdata.Neither, benchdata.MinEffect{Rel: 0.1}, false, cpuPerWrite*1e6)
			add("cpu_per_write_in_refs"+suffix, "refs/1000 writes", benchdata.Lower, benchdata.MinEffect{Rel: 0.2}, false, 1000*cpuPerWrite/ref.Seconds())
			if w == 1 {
				wallOne = wall
			} else if wallOne > 0 {
				add("speedup"+suffix, "x", benchdata.Higher, benchdata.MinEffect{Abs: 0.15}, false, float64(wallOne)/float64(wall))
			}
			how := "one loop"
			if w > 1 {
				how = fmt.Sprintf("%d workers", w)
			}
			env.line.Note("  rep %d, %s: %.1fx real time, %.2f µs CPU a write, %.1f events a write (host reference %.0f ms)",
				rep, how, float64(sp.Duration)/float64(wall), cpuPerWrite*1e6, float64(res.Events)/writes, ms64(ref))
		}
	}
	// What was measured is kept, also when a later repetition failed.
	f := &benchdata.File{Format: benchdata.FormatVersion, Metrics: []benchdata.Metric{}}
	for _, name := range sorted(keys(ms)) {
		f.Metrics = append(f.Metrics, *ms[name])
	}
	if len(f.Metrics) > 0 {
		if err := f.WriteFile(filepath.Join(dir, benchdata.FileName)); err != nil {
			return err
		}
	}
	return runErr
}

func ms64(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// hostReference is the least CPU, of three tries, that a fixed piece of work takes:
// map inserts and lookups and a sort over a few MB, the kind of work the simulator
// does. A host that is slower tonight takes longer for it and for the simulator alike.
func hostReference() time.Duration {
	var best time.Duration
	for range 3 {
		c0 := hiccup.ProcessCPU()
		referenceWork()
		if d := hiccup.ProcessCPU() - c0; best == 0 || d < best {
			best = d
		}
	}
	return best
}

var referenceSink uint64

func referenceWork() {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 1 << 18
	m := make(map[uint64]uint64)
	xs := make([]uint64, n)
	for i := range xs {
		xs[i] = r.Uint64()
		m[xs[i]%(n/2)] += xs[i]
	}
	var sum uint64
	for _, x := range xs {
		sum += m[x%(n/2)]
	}
	slices.Sort(xs)
	referenceSink = sum + xs[n/2]
}

// simSpeedWhere names the simulator and the worker counts an entry times.
func simSpeedWhere(e Entry) string {
	s := backend.Sim + ", workers"
	for i, w := range e.Workers {
		if i > 0 {
			s += ","
		}
		s += " " + strconv.Itoa(w)
	}
	return s
}
