package doctor

import (
	"archive/zip"
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/image"
	"github.com/polebench/polebench/cluster/zookeeper"
	"github.com/polebench/polebench/hiccup"
)

// Host is the machine.
type Host struct {
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPU        string `json:"cpu,omitempty"`
	Kernel     string `json:"kernel,omitempty"`
	Root       bool   `json:"root"`
}

func hostInfo() Host {
	h := Host{Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Root: os.Geteuid() == 0}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		h.CPU = cpuModel(b)
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	return h
}

// cpuModel is /proc/cpuinfo's first "model name" (x86) or "Model" (arm) line.
func cpuModel(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if k = strings.TrimSpace(k); ok && (k == "model name" || k == "Model") {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}

// clockSourceDir is where Linux names its clock source.
const clockSourceDir = "/sys/devices/system/clocksource/clocksource0"

// Clock is the kernel's clock source and what a timestamp costs.
type Clock struct {
	Source    string   `json:"source,omitempty"`
	Available []string `json:"available,omitempty"`
	// VDSO: whether Linux reads this source in user space (the vDSO), so that
	// time.Now is not a system call.
	VDSO  bool    `json:"vdso"`
	NowNS float64 `json:"time_now_ns"` // what one time.Now cost, measured
	Note  string  `json:"note,omitempty"`
	Error string  `json:"error,omitempty"`
}

// vdsoSources are the clock sources Linux's vDSO reads without a system call (x86's
// TSC and the paravirtual clocks built on it, arm64's counter).
var vdsoSources = []string{"tsc", "kvm-clock", "hyperv_clocksource_tsc_page", "arch_sys_counter", "xen"}

// parseClockSource reads current_clocksource: one name.
func parseClockSource(b []byte) (string, error) {
	f := strings.Fields(string(b))
	switch len(f) {
	case 0:
		return "", errors.New("empty")
	case 1:
		return f[0], nil
	}
	return "", fmt.Errorf("%q is not one clock source", strings.TrimSpace(string(b)))
}

func clockInfo(dir string) Clock {
	c := Clock{NowNS: timeNowCost()}
	b, err := os.ReadFile(filepath.Join(dir, "current_clocksource"))
	if err == nil {
		c.Source, err = parseClockSource(b)
	}
	if err != nil {
		c.Error = fmt.Sprintf("reading %s: %v", filepath.Join(dir, "current_clocksource"), err)
		return c
	}
	if b, err := os.ReadFile(filepath.Join(dir, "available_clocksource")); err == nil {
		c.Available = strings.Fields(string(b))
	}
	c.VDSO = slices.Contains(vdsoSources, c.Source)
	switch {
	case c.VDSO:
		c.Note = "read in user space (vDSO)"
	case slices.Contains(c.Available, "tsc"):
		c.Note = "every timestamp is a system call; tsc is available (the kernel may have found it unstable)"
	default:
		c.Note = "every timestamp is a system call"
	}
	return c
}

// timeNowCost is what one time.Now costs, ns: the least over batches, so that a
// batch the scheduler interrupted does not count.
func timeNowCost() float64 {
	const batches, n = 20, 10_000
	best := time.Duration(math.MaxInt64)
	var sink int64
	for range batches {
		t0 := time.Now()
		for range n {
			sink += time.Now().UnixNano() & 1
		}
		best = min(best, time.Since(t0))
	}
	_ = sink
	return float64(best.Nanoseconds()) / n
}

// Idle is the harness's hiccup meter with nothing else of polebench running.
type Idle struct {
	Seconds    float64  `json:"seconds"`
	Wakes      int64    `json:"wakes"`
	P50MS      float64  `json:"p50_ms"`
	P99MS      float64  `json:"p99_ms"`
	MaxMS      float64  `json:"max_ms"`
	Stalls     int      `json:"stalls"`      // wakes over the meter's 1 ms
	LongStalls int      `json:"long_stalls"` // of analysis.StallMS or more: what the verdict counts
	CPUBusyPct *float64 `json:"cpu_busy_pct,omitempty"`
	CPUSomePct *float64 `json:"cpu_pressure_pct,omitempty"`
}

// idleHiccups runs hiccup.Meter and the host sampler for d (or until ctx ends).
func idleHiccups(ctx context.Context, d time.Duration) *Idle {
	m := hiccup.New(0, 0)
	hs := hiccup.NewHostSampler(0)
	mctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(mctx) })
	wg.Go(func() { hs.Run(mctx) })
	wg.Wait()
	return idleOf(m.Report("doctor"), hs.Samples())
}

func idleOf(rep hiccup.Report, samples []hiccup.HostSample) *Idle {
	h := rep.Histogram()
	id := &Idle{Seconds: float64(rep.To-rep.From) / 1e9, Wakes: h.TotalCount(),
		P50MS: float64(h.ValueAtQuantile(50)) / 1e6, P99MS: float64(h.ValueAtQuantile(99)) / 1e6, MaxMS: float64(h.Max()) / 1e6}
	id.Seconds = max(id.Seconds, 0)
	for _, s := range rep.Stalls {
		id.Stalls++
		if float64(s.Len)/1e6 >= analysis.StallMS {
			id.LongStalls++
		}
	}
	var busy, some []float64
	for _, s := range samples {
		if !math.IsNaN(s.CPUBusyPct) {
			busy = append(busy, s.CPUBusyPct)
		}
		if !math.IsNaN(s.CPUSomePct) {
			some = append(some, s.CPUSomePct)
		}
	}
	id.CPUBusyPct, id.CPUSomePct = analysis.MeanOf(busy), analysis.MeanOf(some)
	return id
}

// Loopback is the round trip of a small message over TCP on 127.0.0.1: the floor
// under every user-space link and every client request of a local run.
type Loopback struct {
	RoundTrips int     `json:"round_trips"`
	Bytes      int     `json:"bytes"`
	MinUS      float64 `json:"min_us"`
	MedianUS   float64 `json:"median_us"`
	P99US      float64 `json:"p99_us"`
}

// loopbackMsg is the size of a ping: a small ZooKeeper request's order of magnitude.
const loopbackMsg = 64

// loopback ping-pongs one connection for d (or until ctx ends).
func loopback(ctx context.Context, d time.Duration) (*Loopback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c) // echo until the client closes
	})
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	defer c.Close()
	end := time.Now().Add(d)
	if err := c.SetDeadline(end.Add(5 * time.Second)); err != nil {
		return nil, err
	}
	msg, back := make([]byte, loopbackMsg), make([]byte, loopbackMsg)
	var rtts []time.Duration
	for i := 0; time.Now().Before(end) && ctx.Err() == nil && len(rtts) < 1_000_000; i++ {
		t0 := time.Now()
		if _, err := c.Write(msg); err != nil {
			return nil, fmt.Errorf("write: %w", err)
		}
		if _, err := io.ReadFull(c, back); err != nil {
			return nil, fmt.Errorf("read: %w", err)
		}
		if i >= 100 { // the first round trips find cold caches and a fresh connection
			rtts = append(rtts, time.Since(t0))
		}
	}
	if len(rtts) == 0 {
		return nil, errors.New("no round trip measured")
	}
	slices.Sort(rtts)
	us := func(q float64) float64 { return float64(rtts[int(q*float64(len(rtts)-1))]) / 1e3 }
	return &Loopback{RoundTrips: len(rtts), Bytes: loopbackMsg, MinUS: us(0), MedianUS: us(0.5), P99US: us(0.99)}, nil
}

// Statuses of a check.
const (
	Yes       = "yes"
	No        = "no"
	Unchecked = "could not check"
)

// Netem is whether the kernel runs the tree package netem applies.
type Netem struct {
	Status string `json:"status"` // Yes, No, Unchecked
	Detail string `json:"detail,omitempty"`
}

// netemCheck runs probe (netem.Probe: a scratch network namespace with a throwaway
// veth pair, dropped with everything in it, also if the process dies).
func netemCheck(ctx context.Context, probe func(context.Context) error) Netem {
	if os.Geteuid() != 0 {
		return Netem{Status: Unchecked, Detail: "not root: a scratch network namespace needs root"}
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := probe(pctx)
	switch {
	case err == nil:
		return Netem{Status: Yes, Detail: "htb, u32 and a netem leaf with a Pareto table installed in a scratch namespace"}
	case strings.HasPrefix(err.Error(), "kernel lacks"):
		return Netem{Status: No, Detail: err.Error() + "; runs emulate links in user space"}
	}
	return Netem{Status: Unchecked, Detail: err.Error()}
}

// Docker is the Docker engine and its swarm.
type Docker struct {
	Reachable bool   `json:"reachable"`
	Host      string `json:"host,omitempty"`
	Version   string `json:"version,omitempty"`
	Swarm     string `json:"swarm,omitempty"` // the engine's node state: inactive, active, ...
	Manager   bool   `json:"swarm_manager"`
	Nodes     int    `json:"swarm_nodes,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

func dockerCheck(ctx context.Context) Docker {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cli, err := image.Connect(cctx)
	if err != nil {
		return Docker{Detail: err.Error()}
	}
	defer cli.Close()
	d := Docker{Reachable: true, Host: cli.DaemonHost()}
	info, err := cli.Info(cctx)
	if err != nil {
		d.Detail = fmt.Sprintf("the engine answers pings but not info: %v", err)
		return d
	}
	d.Version = info.ServerVersion
	d.Swarm = cmp.Or(string(info.Swarm.LocalNodeState), "inactive")
	d.Manager = info.Swarm.ControlAvailable
	d.Nodes = info.Swarm.Nodes
	return d
}

// Java is Java and Debian's ZooKeeper, as the zookeeper flavor looks for them.
type Java struct {
	Ready            bool   `json:"ready"` // zookeeper.Available
	Path             string `json:"path,omitempty"`
	Version          string `json:"version,omitempty"`
	ZooKeeperJar     string `json:"zookeeper_jar"`
	ZooKeeperVersion string `json:"zookeeper_version,omitempty"`
	Detail           string `json:"detail,omitempty"`
}

func javaCheck(ctx context.Context) Java {
	j := Java{ZooKeeperJar: zookeeper.Jar}
	if err := zookeeper.Available(); err != nil {
		j.Detail = err.Error()
	} else {
		j.Ready = true
	}
	if p, err := exec.LookPath("java"); err == nil {
		j.Path = p
		vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(vctx, p, "-version").CombinedOutput()
		if err == nil {
			j.Version = firstLine(out)
		}
	}
	j.ZooKeeperVersion = jarVersion(zookeeper.Jar)
	return j
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(line)
}

// jarVersion reads the version from a jar's Maven pom.properties, "" without.
func jarVersion(path string) string {
	z, err := zip.OpenReader(path)
	if err != nil {
		return ""
	}
	defer z.Close()
	for _, f := range z.File {
		if !strings.HasPrefix(f.Name, "META-INF/maven/") || !strings.HasSuffix(f.Name, "/pom.properties") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return ""
		}
		b, _ := io.ReadAll(io.LimitReader(rc, 1<<16))
		rc.Close()
		return pomVersion(b)
	}
	return ""
}

func pomVersion(b []byte) string {
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "version="); ok {
			return v
		}
	}
	return ""
}

// Installed is the server of a flavor that says which build this machine has
// (cluster.Installed: etcd's version and path), or why it has none.
type Installed struct {
	Flavor  string `json:"flavor"`
	Version string `json:"version,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

func installed(ctx context.Context) []Installed {
	var out []Installed
	for _, f := range backend.Flavors() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		v, ok, err := cluster.Installed(cctx, f)
		cancel()
		switch {
		case !ok:
		case err != nil:
			out = append(out, Installed{Flavor: f, Detail: err.Error()})
		default:
			out = append(out, Installed{Flavor: f, Version: v})
		}
	}
	return out
}

// Backend is whether a backend runs a flavor here (cluster.Check), and if not why.
type Backend struct {
	Target string `json:"target"`
	Runs   bool   `json:"runs"`
	Why    string `json:"why,omitempty"`
}

// backendsCheck asks cluster.Check about every backend and flavor but the simulator
// (which runs anywhere); an unreachable Docker engine is not asked twice.
func backendsCheck(ctx context.Context, d Docker) []Backend {
	var out []Backend
	for _, f := range backend.Flavors() {
		for _, b := range backend.For(f) {
			if b == backend.Sim {
				continue
			}
			t := Target{b, f}
			if !d.Reachable && (b == backend.Docker || b == backend.Swarm) {
				out = append(out, Backend{Target: t.String(), Why: "no Docker engine answers"})
				continue
			}
			if err := check(ctx, t); err != nil {
				out = append(out, Backend{Target: t.String(), Why: err.Error()})
				continue
			}
			out = append(out, Backend{Target: t.String(), Runs: true})
		}
	}
	return out
}
