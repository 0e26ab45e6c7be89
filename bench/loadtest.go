// Package bench is a write benchmark of a replica set on loopback: poled (its own
// processes, cmd/poled) or another flavor the local backend runs (Apache ZooKeeper's
// JVMs, etcd's processes), N clients of the flavor's protocol (workload.ProtocolOf)
// spread over the servers, 1 kB writes, closed loop (each client writes as fast as it is
// answered) or open loop (a fixed total rate on an absolute schedule, latency counted
// from the intended send time). Latencies go into HDR histograms; with several flavors
// the settings' measurement windows alternate between them, so a shared machine's
// load drifts over both alike, and the comparison gives ratios with Mann-Whitney
// p-values over the repetitions.
package bench

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/local"
	"github.com/polebench/polebench/progress"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/topology"
	"github.com/polebench/polebench/workload"
	"github.com/polebench/polebench/workload/arrival"
	"github.com/polebench/polebench/workload/client"
)

// Modes of load.
const (
	Closed = "closed"
	Open   = "open"
)

// Config is one benchmark: every combination of Flavors, Servers and Fsync.
type Config struct {
	Flavors []string // flavors the local backend runs; ratios are the first's over each other's
	Servers []int    // ensemble sizes, e.g. 3 and 5
	Fsync   []bool   // fsync of the log before acknowledging, on and/or off
	Mode    string   // Closed or Open
	Clients int      // client sessions, spread round-robin over the servers
	Rate    float64  // Open: total writes/s
	Payload int      // bytes per write
	Keys    int      // keys the writes go to (client i writes key i mod Keys)
	Warmup  time.Duration
	// FlavorWarmup replaces Warmup for the flavors it names: ZooKeeper's JIT needs
	// longer than poled before its windows stop rising.
	FlavorWarmup map[string]time.Duration
	Duration     time.Duration // of one measurement window
	Repetitions  int           // windows per flavor and setting
	Progress     *progress.Line
	Log          *slog.Logger
}

// Defaults fills unset fields.
func (c *Config) Defaults() {
	if len(c.Flavors) == 0 {
		c.Flavors = DefaultFlavors()
	}
	if len(c.Servers) == 0 {
		c.Servers = []int{3}
	}
	if len(c.Fsync) == 0 {
		c.Fsync = []bool{false}
	}
	if c.Mode == "" {
		c.Mode = Closed
	}
	if c.Clients == 0 {
		c.Clients = 32
	}
	if c.Payload == 0 {
		c.Payload = 1024
	}
	if c.Keys == 0 {
		c.Keys = c.Clients
	}
	if c.Warmup == 0 {
		c.Warmup = 10 * time.Second
	}
	if c.Duration == 0 {
		c.Duration = 15 * time.Second
	}
	if c.Repetitions == 0 {
		c.Repetitions = 3
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// Check says what is wrong with c, naming the flag.
func (c *Config) Check() error {
	for _, f := range c.Flavors {
		if !backend.Runs(backend.Local, f) {
			return fmt.Errorf("--flavor: unknown flavor %q (known: %s)", f, strings.Join(Flavors(), ", "))
		}
	}
	for _, n := range c.Servers {
		if n < 1 || n > 9 {
			return fmt.Errorf("--servers: %d servers: 1 to 9", n)
		}
	}
	switch {
	case c.Mode != Closed && c.Mode != Open:
		return fmt.Errorf("--mode: unknown mode %q (known: %s, %s)", c.Mode, Closed, Open)
	case c.Mode == Open && !(c.Rate > 0 && c.Rate < math.Inf(1)):
		return fmt.Errorf("--rate: the open loop needs a total rate above 0 writes/s")
	case c.Clients < 1:
		return fmt.Errorf("--clients: %d: at least 1", c.Clients)
	case c.Payload < 0 || c.Payload > 1<<20:
		return fmt.Errorf("--payload: %d bytes: 0 to 1 MiB (ZooKeeper's jute.maxbuffer)", c.Payload)
	case c.Duration <= 0 || c.Warmup < 0:
		return fmt.Errorf("--duration must be positive and --warmup not negative")
	case slices.ContainsFunc(slices.Collect(maps.Values(c.FlavorWarmup)), func(d time.Duration) bool { return d < 0 }):
		return fmt.Errorf("a flavor's warm-up is negative: %v", c.FlavorWarmup)
	case c.Repetitions < 1:
		return fmt.Errorf("--repetitions: %d: at least 1", c.Repetitions)
	}
	return nil
}

// DefaultFlavors are what the benchmark measures unless told otherwise: poled against
// the paper's baseline.
func DefaultFlavors() []string { return []string{backend.FlavorPoled, backend.FlavorZooKeeper} }

// Flavors are the flavors the local backend runs, poled first: those the benchmark
// can start.
func Flavors() []string {
	return slices.DeleteFunc(backend.Flavors(), func(f string) bool { return !backend.Runs(backend.Local, f) })
}

// WarmupOf is how long flavor is warmed up before its first window.
func (c *Config) WarmupOf(flavor string) time.Duration {
	if d, ok := c.FlavorWarmup[flavor]; ok {
		return d
	}
	return c.Warmup
}

// Setting is one combination the benchmark measures.
type Setting struct {
	Servers int
	Fsync   bool
}

func (s Setting) String() string {
	f := "off"
	if s.Fsync {
		f = "on"
	}
	return fmt.Sprintf("%d servers, fsync %s", s.Servers, f)
}

// Window is one measurement window of one flavor.
type Window struct {
	WritesPerSec float64
	P50MS        float64
	P99MS        float64
	P999MS       float64
	Writes       int64
	Errors       int64
}

// Result is every window measured, per setting and flavor.
type Result struct {
	Mode     string
	Clients  int
	Rate     float64
	Payload  int
	Duration time.Duration
	Flavors  []string // in the order given: ratios are the first's over each other's
	Runs     map[Setting]map[string][]Window
	Order    []Setting
}

// Run measures every setting: both flavors' clusters up at once, warmed up, then
// their windows alternating.
func Run(ctx context.Context, c Config) (*Result, error) {
	c.Defaults()
	if err := c.Check(); err != nil {
		return nil, err
	}
	res := &Result{Mode: c.Mode, Clients: c.Clients, Payload: c.Payload, Duration: c.Duration,
		Flavors: c.Flavors, Runs: map[Setting]map[string][]Window{}}
	if c.Mode == Open {
		res.Rate = c.Rate // the closed loop has none, whatever --rate says
	}
	for _, n := range c.Servers {
		for _, fsync := range c.Fsync {
			s := Setting{Servers: n, Fsync: fsync}
			res.Order = append(res.Order, s)
			runs, err := runSetting(ctx, c, s)
			res.Runs[s] = runs
			if err != nil {
				return res, fmt.Errorf("%v: %w", s, err)
			}
		}
	}
	return res, nil
}

// target is one flavor's cluster and clients, a connection each.
type target struct {
	flavor string
	cl     cluster.Cluster
	conns  []workload.Conn
}

func (t *target) close() {
	for _, c := range t.conns {
		c.Close()
	}
	if t.cl != nil {
		t.cl.Close(context.Background())
	}
}

func runSetting(ctx context.Context, c Config, s Setting) (map[string][]Window, error) {
	out := map[string][]Window{}
	var targets []*target
	defer func() {
		for _, t := range targets {
			t.close()
		}
	}()
	for _, f := range c.Flavors {
		c.Progress.Update("%v: starting %s", s, f)
		t, err := start(ctx, c, s, f)
		if t != nil {
			targets = append(targets, t)
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", f, err)
		}
	}
	for _, t := range targets {
		if w := c.WarmupOf(t.flavor); w > 0 {
			c.Progress.Update("%v: warming up %s for %v", s, t.flavor, w)
			if _, err := measure(ctx, c, t, w); err != nil {
				return out, fmt.Errorf("%s: warm-up: %w", t.flavor, err)
			}
		}
	}
	for rep := 1; rep <= c.Repetitions; rep++ {
		for _, t := range targets {
			c.Progress.Update("%v: %s, window %d/%d (%v)", s, t.flavor, rep, c.Repetitions, c.Duration)
			w, err := measure(ctx, c, t, c.Duration)
			if err != nil {
				return out, fmt.Errorf("%s: %w", t.flavor, err)
			}
			out[t.flavor] = append(out[t.flavor], w)
			c.Progress.Note("%v: %-9s window %d: %8.0f writes/s  p50 %6.2f  p99 %6.2f  p999 %7.2f ms  errors %d",
				s, t.flavor, rep, w.WritesPerSec, w.P50MS, w.P99MS, w.P999MS, w.Errors)
		}
	}
	return out, nil
}

// start brings a flavor's servers up on loopback as separate processes, waits for a
// leader, connects the clients and creates the keys, through the flavor's protocol.
func start(ctx context.Context, c Config, s Setting, flavor string) (*target, error) {
	topo, err := topology.New(topology.Config{DCs: []topology.DC{{Name: "L", Servers: ids(s.Servers)}}, Rates: map[string]float64{"L": 1}})
	if err != nil {
		return nil, err
	}
	opts := cluster.Options{Topology: topo, Oracle: score.Oracle{Name: score.History}, InitialLeader: s.Servers,
		Flavor: flavor, Fsync: s.Fsync, Logger: c.Log}
	t := &target{flavor: flavor}
	if flavor == backend.FlavorPoled {
		t.cl, err = local.NewProcesses(ctx, opts) // the local backend's poled runs in this process
	} else {
		t.cl, err = cluster.New(ctx, backend.Local, opts)
	}
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := cluster.WaitLeaderOf(wctx, t.cl); err != nil {
		return t, err
	}
	if err := cluster.WaitServingOf(wctx, t.cl, t.cl.Servers(), t.cl.Alive); err != nil {
		return t, err
	}
	return t, t.connect(wctx, c)
}

// connect gives each client its own connection to server i mod N and creates the keys.
func (t *target) connect(ctx context.Context, c Config) error {
	servers := t.cl.Servers()
	proto := workload.ProtocolOf(t.flavor)
	wcfg, err := workload.Config{Servers: workloadServers(servers), SessionsPerServer: 1, PayloadBytes: c.Payload,
		Keys: c.Keys, Prefix: keyPrefix, RunID: "bench", Log: c.Log}.Resolved()
	if err != nil {
		return err
	}
	for i := range c.Clients {
		conn, err := proto.Dial(wcfg, wcfg.Servers[i%len(servers)], func() bool { return false })
		if err != nil {
			return err
		}
		t.conns = append(t.conns, conn)
	}
	for i, conn := range t.conns {
		for ready, _ := conn.Ready(); ready == 0; ready, _ = conn.Ready() {
			select {
			case <-ctx.Done():
				return fmt.Errorf("client %d to %s: %w", i, wcfg.Servers[i%len(servers)].Addr, ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return proto.CreateKeys(ctx, wcfg, t.conns)
}

func workloadServers(servers []cluster.Server) []workload.Server {
	out := make([]workload.Server, len(servers))
	for i, s := range servers {
		out[i] = workload.Server{ID: s.ID, DC: s.DC, Addr: s.Client}
	}
	return out
}

func ids(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// keyPrefix is the parent of the benchmark's keys.
const keyPrefix = "/loadtest"

// measure runs the load for d and summarizes it.
func measure(ctx context.Context, c Config, t *target, d time.Duration) (Window, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	payload := make([]byte, c.Payload)
	var writes, errs atomic.Int64
	hists := make([]*hdrhistogram.Histogram, len(t.conns))
	// Open loop: client i's k-th write is due at start + (i + k·N) / rate, a constant
	// schedule of rate/N offset by i/rate.
	scheds := make([]*workload.Schedule, len(t.conns)) // nil: closed loop
	if c.Mode == Open {
		for i := range scheds {
			var err error
			if scheds[i], err = workload.NewSchedule(arrival.Constant, c.Rate/float64(len(t.conns)), 0); err != nil {
				return Window{}, err
			}
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i, conn := range t.conns {
		h := hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3) // µs
		hists[i] = h
		sched := scheds[i]
		wg.Go(func() {
			k := workload.KeyPath(keyPrefix, i%c.Keys)
			for {
				due := time.Now()
				if sched != nil {
					due = start.Add(time.Duration(float64(time.Second)*float64(i)/c.Rate) + sched.Next())
					if wait := time.Until(due); wait > 0 {
						select {
						case <-ctx.Done():
							return
						case <-time.After(wait):
						}
					}
				}
				if ctx.Err() != nil {
					return
				}
				_, reply, _ := conn.Put(ctx, k, payload, func() {})
				done := time.Now()
				if reply != client.Acked {
					if ctx.Err() != nil {
						return
					}
					errs.Add(1)
					if reply == client.Unavailable { // no connection up: wait for it, not spin
						time.Sleep(10 * time.Millisecond)
					}
				} else if done.Before(start.Add(d)) {
					writes.Add(1)
					h.RecordValue(max(1, done.Sub(due).Microseconds()))
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	all := hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
	for _, h := range hists {
		all.Merge(h)
	}
	if writes.Load() == 0 {
		return Window{Errors: errs.Load()}, fmt.Errorf("no write succeeded in %v (%d errors)", d, errs.Load())
	}
	ms := func(q float64) float64 { return float64(all.ValueAtQuantile(q)) / 1000 }
	return Window{
		WritesPerSec: float64(writes.Load()) / min(el, d).Seconds(),
		P50MS:        ms(50), P99MS: ms(99), P999MS: ms(99.9),
		Writes: writes.Load(), Errors: errs.Load(),
	}, nil
}
