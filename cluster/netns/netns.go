// Package netns is the netns backend: every server a poled process in a network
// namespace of its own, the namespaces on a Linux bridge (package bridge), the link plan
// applied by the kernel's netem in each namespace when the kernel has it (netem.Probe),
// else by poled itself in user space. It needs root. Apply, Show and Clear act on the
// kernel links of a running cluster (polebench netem).
package netns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/internal/bridge"
	"github.com/polebench/polebench/cluster/internal/procs"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/replica"
)

func init() {
	cluster.Register(cluster.Backend{Name: backend.Netns, Rank: 20, New: New, Down: Down,
		Check: func(context.Context) error { return bridge.CheckRoot() },
		// Pause is SIGSTOP; kernel netem where the probe finds it, else user space.
		Carries: backend.Carries{Faults: nemesis.Kinds(),
			Links: backend.Links{Kernel: true, UserSpace: true, Schedules: true, RateLoss: true}}})
}

// Cluster is a cluster of poled processes, one per network namespace (package bridge
// is the network). New returns it as a cluster.Cluster.
type Cluster struct {
	procs      *procs.Set
	log        *slog.Logger
	label      string
	bin        string
	dataRoot   string
	removeData bool
	opts       cluster.Options
	plan       netem.Plan
	links      string
	cut        map[[2]int]bool // pairs partitioned in the kernel's trees (CutLinks)
	schedStart time.Time       // when the plan's schedules started (PlayLinkSchedules); zero before
	net        *bridge.Net
	servers    []cluster.Server

	mu      sync.Mutex // guards removeData, cut and schedStart
	closeMu sync.Mutex
	done    bool
	doneErr error
}

var (
	_ cluster.Cluster       = (*Cluster)(nil)
	_ cluster.LinkSchedules = (*Cluster)(nil)
	_ cluster.Pids          = (*Cluster)(nil)
	_ cluster.LinkCutter    = (*Cluster)(nil)
)

// New starts opts.Topology's servers as poled processes in network namespaces and
// returns once each accepts connections on its client and admin ports. The link plan is
// applied by the kernel when netem.Probe passes, else by poled itself (user space).
// An empty opts.DataRoot means a temporary one, removed by Close. On error, or when ctx
// ends before the cluster is up, everything made so far is removed.
func New(ctx context.Context, opts cluster.Options) (_ cluster.Cluster, err error) {
	if err := bridge.CheckRoot(); err != nil {
		return nil, err
	}
	c, err := prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close(context.WithoutCancel(ctx)))
		}
	}()
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// prepare checks opts and finds the binary and the link mode; it creates nothing but a
// temporary data root.
func prepare(ctx context.Context, opts cluster.Options) (*Cluster, error) {
	c := &Cluster{log: opts.Logger, label: opts.Label, plan: opts.Plan}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.procs = procs.NewSet("netns", c.log, c.logFile, c.spawnProc)
	if opts.Topology == nil || opts.Topology.N() == 0 {
		return nil, errors.New("netns: Options.Topology has no servers")
	}
	n := opts.Topology.N()
	if n > bridge.MaxServers {
		return nil, fmt.Errorf("netns: %d servers, at most %d", n, bridge.MaxServers)
	}
	if opts.Flavor != "" && opts.Flavor != cluster.Poled {
		return nil, fmt.Errorf("netns: unknown flavor %q", opts.Flavor)
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i + 1
	}
	if len(c.plan.Links) > 0 {
		if err := c.plan.Validate(); err != nil {
			return nil, fmt.Errorf("netns: link plan: %w", err)
		}
		if got := c.plan.Servers(); !slices.Equal(got, ids) {
			return nil, fmt.Errorf("netns: the link plan covers servers %v, the topology has 1..%d", got, n)
		}
	}
	if c.label == "" {
		c.label = fmt.Sprintf("t%x", time.Now().UnixNano()&0xffffffff)
	}
	if err := bridge.CheckLabel(c.label); err != nil {
		return nil, err
	}
	var err error
	if c.bin, err = procs.Poled(ctx, c.log); err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	c.links = cluster.LinksNone
	if len(c.plan.Links) > 0 {
		c.links = cluster.LinksKernel
		if err := netem.Probe(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			c.links = cluster.LinksUserSpace
			if uerr := c.plan.UserSpaceSupports(); uerr != nil {
				return nil, fmt.Errorf("netns: kernel netem unavailable (%v), and user-space links cannot emulate the plan: %w", err, uerr)
			}
			if len(c.plan.Schedules) > 0 {
				return nil, fmt.Errorf("netns: kernel netem unavailable (%v), and poled's user-space links cannot change during a run (the plan's schedules)", err)
			}
			c.log.Warn("netns: kernel netem unavailable, using the user-space fallback: poled delays its peer messages itself",
				"label", c.label, "reason", err.Error())
		}
	}
	c.dataRoot = opts.DataRoot
	if c.dataRoot == "" {
		if c.dataRoot, err = os.MkdirTemp("", "polebench-netns-"+c.label+"-"); err != nil {
			return nil, err
		}
		c.removeData = true
	}
	if err := os.MkdirAll(c.dataRoot, 0o755); err != nil {
		return nil, fmt.Errorf("netns: data root: %w", err)
	}
	for _, id := range ids {
		c.servers = append(c.servers, cluster.Server{ID: id, DC: opts.Topology.DC(id)})
	}
	c.opts = opts
	return c, nil
}

// start builds the network, writes the configs, applies the links and starts every
// server.
func (c *Cluster) start(ctx context.Context) error {
	t0 := time.Now()
	ids := c.ids()
	var err error
	if c.net, err = bridge.Create(c.label, ids); err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	peers := make([]replica.Peer, 0, len(ids))
	for i, id := range ids {
		a := c.net.Addrs[id].String()
		peers = append(peers, replica.Peer{ID: id, Host: a, ClientPort: cluster.ClientPort, PeerPort: cluster.PeerPort,
			ElectionPort: cluster.ElectionPort, AdminPort: cluster.AdminPort})
		c.servers[i].Client = peers[i].ClientAddr()
		c.servers[i].Admin = peers[i].AdminAddr()
	}
	var planFile string
	if c.links == cluster.LinksUserSpace {
		planFile = filepath.Join(c.dataRoot, "linkplan.json")
		if err := netem.WritePlan(planFile, c.plan); err != nil {
			return fmt.Errorf("netns: %w", err)
		}
	}
	for _, id := range ids {
		cfg := c.opts.ReplicaConfig(id, peers)
		cfg.DataDir, cfg.LinkPlan = c.dataDir(id), planFile
		if err := c.writeConfig(cfg); err != nil {
			return err
		}
	}
	if c.links == cluster.LinksKernel {
		for _, id := range ids {
			if err := netem.Apply(ctx, c.target(id), c.plan); err != nil {
				return fmt.Errorf("netns: p%d: %w", id, err)
			}
		}
	}
	for _, id := range ids {
		if err := c.procs.Spawn(id); err != nil {
			return err
		}
	}
	for _, id := range ids {
		if err := c.waitReady(ctx, id); err != nil {
			return err
		}
	}
	c.log.Info("netns cluster up", "label", c.label, "servers", len(ids), "subnet", c.net.Prefix.String(),
		"links", c.links, "data", c.dataRoot, "took", time.Since(t0).Round(time.Millisecond))
	return nil
}

func (c *Cluster) ids() []int {
	ids := make([]int, len(c.servers))
	for i, s := range c.servers {
		ids[i] = s.ID
	}
	return ids
}

// Server id keeps its data in DataRoot/p<ID>, beside p<ID>.json (config) and p<ID>.log.
func (c *Cluster) file(id int, ext string) string {
	return filepath.Join(c.dataRoot, "p"+strconv.Itoa(id)+ext)
}
func (c *Cluster) dataDir(id int) string    { return c.file(id, "") }
func (c *Cluster) configFile(id int) string { return c.file(id, ".json") }
func (c *Cluster) logFile(id int) string    { return c.file(id, ".log") }

func (c *Cluster) writeConfig(cfg replica.Config) error {
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("netns: config of p%d: %w", cfg.ID, err)
	}
	if err := os.WriteFile(c.configFile(cfg.ID), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	return nil
}

func (c *Cluster) target(id int) netem.Target {
	return netem.Target{NS: c.net.NS[id], Dev: bridge.Dev, Self: id, Addrs: c.net.Addrs}
}

// spawnProc is the set's start: poled in server id's namespace, its n-th start
// marked in its log.
func (c *Cluster) spawnProc(id, n int) (*procs.Proc, error) {
	lf, err := os.OpenFile(c.logFile(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer lf.Close() // the child has its own copy
	fmt.Fprintf(lf, "=== polebench: start %d of p%d in %s at %s\n", n, id, bridge.Name(c.label, id), time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(c.bin, "--config", c.configFile(id))
	cmd.Dir = c.dataDir(id)
	cmd.Stdout, cmd.Stderr = lf, lf
	return bridge.Start(c.net.NS[id], cmd)
}

// waitReady waits until server id accepts connections on its admin and client ports.
func (c *Cluster) waitReady(ctx context.Context, id int) error {
	s := c.servers[id-1]
	return c.procs.WaitListening(ctx, id, procs.StartTimeout, s.Admin, s.Client)
}

// Label is the label marking the cluster's namespaces and host veth.
func (c *Cluster) Label() string { return c.label }

// Subnet is the cluster's /24; the host is .1, server id is .(10+id).
func (c *Cluster) Subnet() netip.Prefix { return c.net.Prefix }

// DataRoot is where the servers' data, configs and logs are.
func (c *Cluster) DataRoot() string { return c.dataRoot }

// RemoveDataOnClose makes Close delete the data root too (always so for a temporary one).
func (c *Cluster) RemoveDataOnClose(remove bool) {
	c.mu.Lock()
	c.removeData = remove
	c.mu.Unlock()
}

// Servers lists the servers, ordered by id.
func (c *Cluster) Servers() []cluster.Server { return slices.Clone(c.servers) }

// Pid is server id's process id, 0 if it is not running.
func (c *Cluster) Pid(id int) int { return c.procs.Pid(id) }

// Alive reports whether server id's process runs.
func (c *Cluster) Alive(id int) bool { return c.procs.Alive(id) }

// Links says how the link plan is applied: "kernel", "user-space", or "none" for an
// empty plan.
func (c *Cluster) Links() string { return c.links }

func (c *Cluster) check(id int) error {
	if id < 1 || id > len(c.servers) {
		return fmt.Errorf("netns: no server %d (servers are 1..%d)", id, len(c.servers))
	}
	return nil
}

// DataDir is server id's data directory, on this host (cluster.DataDirs).
func (c *Cluster) DataDir(id int) string { return c.dataDir(id) }

// Kill sends server id SIGKILL and waits until it is gone.
func (c *Cluster) Kill(ctx context.Context, id int) error {
	if err := c.check(id); err != nil {
		return err
	}
	return c.procs.Kill(ctx, id)
}

// Restart starts a stopped server again with its data directory, waits until it
// accepts connections, and, with kernel links, checks its netem tree is still intact
// (the namespace outlives the process, so the tree should be; Apply repairs it if not).
func (c *Cluster) Restart(ctx context.Context, id int) error {
	if err := c.check(id); err != nil {
		return err
	}
	if c.links == cluster.LinksKernel {
		if err := c.applyNow(ctx, id); err != nil {
			return err
		}
	}
	if err := c.procs.Spawn(id); err != nil {
		return err
	}
	if err := c.waitReady(ctx, id); err != nil {
		return err
	}
	c.log.Info("netns: restarted", "server", id, "pid", c.Pid(id))
	return nil
}

// CutLinks partitions (cut) or heals the given pairs in every namespace's netem tree,
// as a drop on their classes, when the kernel applies the links; with user-space
// links, and for one-way cuts, it does nothing (the replicas' own cut, cluster.SetCut,
// is what acts there, and it acts on kernel runs too). Namespaces outlive their
// processes, so a dead server's tree is updated as well.
func (c *Cluster) CutLinks(ctx context.Context, pairs [][2]int, oneWay, cut bool) error {
	if c.links != cluster.LinksKernel || oneWay {
		return nil
	}
	c.mu.Lock()
	if c.cut == nil {
		c.cut = map[[2]int]bool{}
	}
	for _, p := range pairs {
		if cut {
			c.cut[p] = true
		} else {
			delete(c.cut, p)
			delete(c.cut, [2]int{p[1], p[0]})
		}
	}
	c.mu.Unlock()
	var errs []error
	for _, id := range c.ids() {
		errs = append(errs, c.applyNow(ctx, id))
	}
	return errors.Join(errs...)
}

// kernelPlan is the plan with the current kernel cuts, and the time since its
// schedules started (zero before).
func (c *Cluster) kernelPlan() (netem.Plan, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var since time.Duration
	if !c.schedStart.IsZero() {
		since = time.Since(c.schedStart)
	}
	return c.plan.Cut(slices.Collect(maps.Keys(c.cut))), since
}

// applyNow installs server id's links as they stand now: the cuts, and the schedules'
// state once they started (changed in place, every attribute sent).
func (c *Cluster) applyNow(ctx context.Context, id int) error {
	p, since := c.kernelPlan()
	var err error
	if since > 0 {
		err = netem.Change(ctx, c.target(id), p.At(since))
	} else {
		err = netem.Apply(ctx, c.target(id), p)
	}
	if err != nil {
		return fmt.Errorf("netns: p%d: %w", id, err)
	}
	return nil
}

// PlayLinkSchedules changes every namespace's netem leaves at the plan's instants,
// from start, keeping the cuts a partition made; only with kernel links (poled's
// user-space links in its own process do not change during a run yet).
func (c *Cluster) PlayLinkSchedules(ctx context.Context, start time.Time, report func(netem.Instant)) error {
	if c.links != cluster.LinksKernel {
		return fmt.Errorf("netns: the links are %s, which cannot change during a run: link schedules need kernel netem here", c.links)
	}
	c.mu.Lock()
	c.schedStart = start
	c.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(c.ids()))
	for i, id := range c.ids() {
		wg.Go(func() {
			errs[i] = netem.PlaySchedule(ctx, id, c.plan, start, func(at time.Duration) error {
				p, _ := c.kernelPlan()
				return netem.Change(ctx, c.target(id), p.At(at))
			}, report)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// CollectLogs copies each server's log into dir as p<ID>.log.
func (c *Cluster) CollectLogs(ctx context.Context, dir string) error {
	return c.procs.CollectLogs(ctx, c.ids(), dir)
}

// Close stops every server (SIGTERM, SIGKILL after a grace period), removes the
// namespaces, veths and bridge, and the data root if asked to. It works with a
// cancelled ctx (an interrupted harness closes with the context it has): cleanup runs
// to the end whatever ctx says, every wait bounded. A second call returns the first
// one's result.
func (c *Cluster) Close(ctx context.Context) error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.done {
		return c.doneErr
	}
	t0 := time.Now()
	c.mu.Lock()
	removeData := c.removeData
	c.mu.Unlock()
	c.procs.StopAll(procs.Grace)
	var errs []error
	if c.net != nil {
		c.net.Close()
		_, err := bridge.Remove(c.label, c.ids())
		errs = append(errs, err)
	}
	if removeData {
		errs = append(errs, os.RemoveAll(c.dataRoot))
	}
	c.done, c.doneErr = true, errors.Join(errs...)
	if c.doneErr != nil {
		c.doneErr = fmt.Errorf("netns: close %s: %w", c.label, c.doneErr)
	}
	c.log.Info("netns cluster closed", "label", c.label, "took", time.Since(t0).Round(time.Millisecond), "err", c.doneErr)
	return c.doneErr
}
