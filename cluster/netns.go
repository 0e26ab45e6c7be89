package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"strings"
	"sync"
	"time"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/replica"
)

// PoledEnv names a poled binary for a backend to run instead of building ./cmd/poled
// of the source tree it runs in.
const PoledEnv = "POLEBENCH_POLED"

// Ports every netns server listens on (each namespace has its own address).
const (
	NetnsClientPort   = 2181
	NetnsPeerPort     = 2888
	NetnsElectionPort = 3888
	NetnsAdminPort    = 8080
)

// Link modes reported by Cluster.Links.
const (
	LinksKernel    = replica.LinksKernel
	LinksUserSpace = replica.LinksUserSpace
	LinksNone      = replica.LinksNone // an empty plan: nothing to emulate
)

const (
	netnsGrace        = 5 * time.Second  // SIGTERM to SIGKILL on Close
	netnsStartTimeout = 30 * time.Second // until a server accepts connections
)

var errNetnsNotRoot = errors.New("the netns backend needs root (network namespaces and veth pairs): run as root or use --backend local")

func netnsCheckRoot() error {
	if os.Geteuid() != 0 {
		return errNetnsNotRoot
	}
	return nil
}

// Netns is a cluster of poled processes, one per network namespace (see netns_net.go
// for the network). NewNetns returns it as a Cluster.
type Netns struct {
	*procSet
	log        *slog.Logger
	label      string
	bin        string
	dataRoot   string
	removeData bool
	opts       Options
	plan       netem.Plan
	links      string
	cut        map[[2]int]bool // pairs partitioned in the kernel's trees (CutLinks)
	net        *netnsNet
	servers    []Server

	mu      sync.Mutex // guards removeData and cut
	closeMu sync.Mutex
	done    bool
	doneErr error
}

var _ Cluster = (*Netns)(nil)

// NewNetns starts opts.Topology's servers as poled processes in network namespaces and
// returns once each accepts connections on its client and admin ports. The link plan is
// applied by the kernel when netem.Probe passes, else by poled itself (user space).
// An empty opts.DataRoot means a temporary one, removed by Close. On error, or when ctx
// ends before the cluster is up, everything made so far is removed.
func NewNetns(ctx context.Context, opts Options) (_ Cluster, err error) {
	if err := netnsCheckRoot(); err != nil {
		return nil, err
	}
	c, err := netnsPrepare(ctx, opts)
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

// netnsPrepare checks opts and finds the binary and the link mode; it creates nothing
// but a temporary data root.
func netnsPrepare(ctx context.Context, opts Options) (*Netns, error) {
	c := &Netns{log: opts.Logger, label: opts.Label, plan: opts.Plan}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.procSet = newProcSet("netns", c.log, c.logFile, c.spawnProc)
	if opts.Topology == nil || opts.Topology.N() == 0 {
		return nil, errors.New("netns: Options.Topology has no servers")
	}
	n := opts.Topology.N()
	if n > netnsMaxServers {
		return nil, fmt.Errorf("netns: %d servers, at most %d", n, netnsMaxServers)
	}
	if opts.Flavor != "" && opts.Flavor != Poled {
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
	if err := netnsCheckLabel(c.label); err != nil {
		return nil, err
	}
	var err error
	if c.bin, err = netnsPoled(ctx, c.log); err != nil {
		return nil, err
	}
	c.links = LinksNone
	if len(c.plan.Links) > 0 {
		c.links = LinksKernel
		if err := netem.Probe(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			c.links = LinksUserSpace
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
		c.servers = append(c.servers, Server{ID: id, DC: opts.Topology.DC(id)})
	}
	c.opts = opts
	return c, nil
}

// start builds the network, writes the configs, applies the links and starts every
// server.
func (c *Netns) start(ctx context.Context) error {
	t0 := time.Now()
	ids := c.ids()
	var err error
	if c.net, err = netnsCreate(c.label, ids); err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	peers := make([]replica.Peer, 0, len(ids))
	for i, id := range ids {
		a := c.net.addrs[id].String()
		peers = append(peers, replica.Peer{ID: id, Host: a, ClientPort: NetnsClientPort, PeerPort: NetnsPeerPort,
			ElectionPort: NetnsElectionPort, AdminPort: NetnsAdminPort})
		c.servers[i].Client = peers[i].ClientAddr()
		c.servers[i].Admin = peers[i].AdminAddr()
	}
	var planFile string
	if c.links == LinksUserSpace {
		planFile = filepath.Join(c.dataRoot, "linkplan.json")
		if err := netem.WritePlan(planFile, c.plan); err != nil {
			return fmt.Errorf("netns: %w", err)
		}
	}
	for _, id := range ids {
		cfg := c.opts.replicaConfig(id, peers)
		cfg.DataDir, cfg.LinkPlan = c.dataDir(id), planFile
		if err := c.writeConfig(cfg); err != nil {
			return err
		}
	}
	if c.links == LinksKernel {
		for _, id := range ids {
			if err := netem.Apply(ctx, c.target(id), c.plan); err != nil {
				return fmt.Errorf("netns: p%d: %w", id, err)
			}
		}
	}
	for _, id := range ids {
		if err := c.spawn(id); err != nil {
			return err
		}
	}
	for _, id := range ids {
		if err := c.waitReady(ctx, id); err != nil {
			return err
		}
	}
	c.log.Info("netns cluster up", "label", c.label, "servers", len(ids), "subnet", c.net.prefix.String(),
		"links", c.links, "data", c.dataRoot, "took", time.Since(t0).Round(time.Millisecond))
	return nil
}

func (c *Netns) ids() []int {
	ids := make([]int, len(c.servers))
	for i, s := range c.servers {
		ids[i] = s.ID
	}
	return ids
}

// Server id keeps its data in DataRoot/p<ID>, beside p<ID>.json (config) and p<ID>.log.
func (c *Netns) file(id int, ext string) string {
	return filepath.Join(c.dataRoot, "p"+strconv.Itoa(id)+ext)
}
func (c *Netns) dataDir(id int) string    { return c.file(id, "") }
func (c *Netns) configFile(id int) string { return c.file(id, ".json") }
func (c *Netns) logFile(id int) string    { return c.file(id, ".log") }

func (c *Netns) writeConfig(cfg replica.Config) error {
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

func (c *Netns) target(id int) netem.Target {
	return netem.Target{NS: c.net.ns[id], Dev: netnsDev, Self: id, Addrs: c.net.addrs}
}

// spawnProc is procSet's start: poled in server id's namespace, its n-th start
// marked in its log.
func (c *Netns) spawnProc(id, n int) (*nsProc, error) {
	lf, err := os.OpenFile(c.logFile(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer lf.Close() // the child has its own copy
	fmt.Fprintf(lf, "=== polebench: start %d of p%d in %s at %s\n", n, id, netnsName(c.label, id), time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(c.bin, "--config", c.configFile(id))
	cmd.Dir = c.dataDir(id)
	cmd.Stdout, cmd.Stderr = lf, lf
	return startInNetns(c.net.ns[id], cmd)
}

// waitReady waits until server id accepts connections on its admin and client ports.
func (c *Netns) waitReady(ctx context.Context, id int) error {
	s := c.servers[id-1]
	return c.waitListening(ctx, id, netnsStartTimeout, s.Admin, s.Client)
}

// lastLines is the end of a log, for error messages.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Label is the label marking the cluster's namespaces and host veth.
func (c *Netns) Label() string { return c.label }

// Subnet is the cluster's /24; the host is .1, server id is .(10+id).
func (c *Netns) Subnet() netip.Prefix { return c.net.prefix }

// DataRoot is where the servers' data, configs and logs are.
func (c *Netns) DataRoot() string { return c.dataRoot }

// RemoveDataOnClose makes Close delete the data root too (always so for a temporary one).
func (c *Netns) RemoveDataOnClose(remove bool) {
	c.mu.Lock()
	c.removeData = remove
	c.mu.Unlock()
}

// Servers lists the servers, ordered by id.
func (c *Netns) Servers() []Server { return slices.Clone(c.servers) }

// Links says how the link plan is applied: "kernel", "user-space", or "none" for an
// empty plan.
func (c *Netns) Links() string { return c.links }

func (c *Netns) check(id int) error {
	if id < 1 || id > len(c.servers) {
		return fmt.Errorf("netns: no server %d (servers are 1..%d)", id, len(c.servers))
	}
	return nil
}

// Kill sends server id SIGKILL and waits until it is gone.
func (c *Netns) Kill(ctx context.Context, id int) error {
	if err := c.check(id); err != nil {
		return err
	}
	return c.procSet.Kill(ctx, id)
}

// Restart starts a stopped server again with its data directory, waits until it
// accepts connections, and, with kernel links, checks its netem tree is still intact
// (the namespace outlives the process, so the tree should be; Apply repairs it if not).
func (c *Netns) Restart(ctx context.Context, id int) error {
	if err := c.check(id); err != nil {
		return err
	}
	if c.links == LinksKernel {
		if err := netem.Apply(ctx, c.target(id), c.kernelPlan()); err != nil {
			return fmt.Errorf("netns: p%d: %w", id, err)
		}
	}
	if err := c.spawn(id); err != nil {
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
// links it does nothing (the replicas' own cut, cluster.SetCut, is what acts there,
// and it acts on kernel runs too). Namespaces outlive their processes, so a dead
// server's tree is updated as well.
func (c *Netns) CutLinks(ctx context.Context, pairs [][2]int, cut bool) error {
	if c.links != LinksKernel {
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
	plan := c.kernelPlan()
	var errs []error
	for _, id := range c.ids() {
		if err := netem.Apply(ctx, c.target(id), plan); err != nil {
			errs = append(errs, fmt.Errorf("netns: p%d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// kernelPlan is the plan with the current kernel cuts.
func (c *Netns) kernelPlan() netem.Plan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.plan.Cut(slices.Collect(maps.Keys(c.cut)))
}

// CollectLogs copies each server's log into dir as p<ID>.log.
func (c *Netns) CollectLogs(ctx context.Context, dir string) error {
	return c.collectLogs(ctx, c.ids(), dir)
}

// Close stops every server (SIGTERM, SIGKILL after a grace period), removes the
// namespaces, veths and bridge, and the data root if asked to. It works with a
// cancelled ctx (an interrupted harness closes with the context it has): cleanup runs
// to the end whatever ctx says, every wait bounded. A second call returns the first
// one's result.
func (c *Netns) Close(ctx context.Context) error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.done {
		return c.doneErr
	}
	t0 := time.Now()
	c.mu.Lock()
	removeData := c.removeData
	c.mu.Unlock()
	c.stopAll(netnsGrace)
	var errs []error
	if c.net != nil {
		c.net.close()
		names := []string{netnsName(c.label, 0)}
		for _, id := range c.ids() {
			names = append(names, netnsName(c.label, id))
		}
		_, err := netnsTeardown(c.label, names, true)
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

// netnsPoled returns $POLEBENCH_POLED, or builds ./cmd/poled of the enclosing source
// tree once per process. The build lands in the temp directory under a name holding
// its content hash, so rebuilding unchanged sources reuses the file.
func netnsPoled(ctx context.Context, log *slog.Logger) (string, error) {
	if p := os.Getenv(PoledEnv); p != "" {
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("netns: %s: %w", PoledEnv, err)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("netns: %s=%s is not an executable file", PoledEnv, p)
		}
		return filepath.Abs(p)
	}
	netnsPoledBuilt.Lock()
	defer netnsPoledBuilt.Unlock()
	if netnsPoledBuilt.path != "" {
		return netnsPoledBuilt.path, nil
	}
	root, err := netnsModuleRoot()
	if err != nil {
		return "", fmt.Errorf("netns: no poled binary: set %s, or run inside the polebench source tree (%w)", PoledEnv, err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("netns: no go toolchain to build poled: set %s to a poled binary", PoledEnv)
	}
	tmp, err := os.MkdirTemp("", "polebench-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	t0 := time.Now()
	out := filepath.Join(tmp, "poled")
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, "./cmd/poled")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("netns: go build ./cmd/poled in %s: %w\n%s", root, err, strings.TrimSpace(string(b)))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	final := filepath.Join(os.TempDir(), "polebench-poled-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(final); err != nil {
		if err := os.Rename(out, final); err != nil {
			return "", fmt.Errorf("netns: %w", err)
		}
	}
	log.Info("netns: built poled", "path", final, "took", time.Since(t0).Round(time.Millisecond))
	netnsPoledBuilt.path = final
	return final, nil
}

var netnsPoledBuilt struct {
	sync.Mutex
	path string
}

// netnsModuleRoot finds the polebench module's directory above the working directory.
func netnsModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/polebench/polebench\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of github.com/polebench/polebench above the working directory")
		}
		dir = parent
	}
}
