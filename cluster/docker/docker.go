// Package docker is the docker backend: every server a poled container on the local
// Docker engine (or the one DOCKER_HOST names), its data on a named volume, the run's
// containers plugged into the netns backend's bridge (package bridge) rather than a
// Docker network, the link plan applied by the kernel's netem in each container's
// namespace, else by poled in user space. It needs root and a Docker engine. Apply and
// Clear install a plan in containers started otherwise (docker-compose.yml).
package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/image"
	"github.com/polebench/polebench/cluster/internal/bridge"
	"github.com/polebench/polebench/cluster/internal/engine"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/replica"
)

func init() {
	cluster.Register(cluster.Backend{Name: backend.Docker, Rank: 30, New: New, Down: Down, Check: Check,
		Carries: backend.Carries{
			// Pause is docker pause; the disk faults that cut a log need it on this host.
			Faults: backend.AllBut(nemesis.LoseUnsynced, nemesis.TornTail),
			Links:  backend.Links{Kernel: true, UserSpace: true, RateLoss: true},
			Why: map[string]string{
				string(nemesis.LoseUnsynced): "its servers' poled logs are not on this host",
				string(nemesis.TornTail):     "its servers' poled logs are not on this host",
			},
		}})
}

// LabelRun marks everything the docker backend creates with the run's Options.Label
// (engine.LabelServer the server id, on containers and volumes).
const LabelRun = engine.LabelRun

// readyTimeout is how long a started container may take to listen.
const readyTimeout = 2 * time.Minute

// Config holds the docker backend's settings beyond cluster.Options.
type Config struct {
	// Image is the poled image to run. Empty: the image of Binary, or of poled built
	// from the source tree at or above Source (the working directory by default),
	// built when missing (image.Poled).
	Image, Binary, Source string
	// Resources limit every container; zero values mean no limit.
	Resources Resources
}

// Resources limit one container.
type Resources struct {
	CPUs        float64 // cores, such as 0.5
	MemoryBytes int64
}

// New starts opts' cluster as containers on the local Docker engine (or the one
// DOCKER_HOST names), building the poled image from the source tree when missing; the
// environment variable POLEBENCH_POLED (cluster.PoledEnv) may name a static poled binary
// to package instead.
func New(ctx context.Context, opts cluster.Options) (cluster.Cluster, error) {
	return NewWith(ctx, opts, Config{Binary: os.Getenv(cluster.PoledEnv)})
}

// Check says why this machine cannot run the docker backend: no root, or no Docker
// engine that answers.
func Check(ctx context.Context) error {
	if err := bridge.CheckRoot(); err != nil {
		return fmt.Errorf("docker backend: %w", err)
	}
	cli, err := image.Connect(ctx)
	if err != nil {
		return fmt.Errorf("docker backend: %w", err)
	}
	return cli.Close()
}

type server struct {
	cluster.Server
	addr      netip.Addr
	container string // name
	volume    string
	alive     bool
	pid       int // of poled, on this host, in its latest start
}

// containers is a run's cluster of containers.
type containers struct {
	cli   *client.Client
	log   *slog.Logger
	label string
	net   *bridge.Net
	links string
	plan  netem.Plan
	addrs map[int]netip.Addr

	mu      sync.Mutex
	servers []*server // index id-1
	closed  bool
}

var (
	_ cluster.Cluster = (*containers)(nil)
	_ cluster.Pids    = (*containers)(nil)
)

// NewWith is New with the backend's own settings. One container per server
// running `poled --config /etc/poled/poled.json` with its data on a named volume,
// everything labeled polebench.run=opts.Label, and one bridge per run with a fixed
// address per server. The bridge is the netns backend's (a Linux bridge in the run's
// own switch namespace, reached from the host by one veth), not a Docker network:
// Docker's bridges live in the host's namespace, where br_netfilter sends every frame
// between containers through the host's iptables and conntrack, which adds to every
// request (see docs/backends.md). Containers start with network mode none, and
// each start plugs a veth into the container's fresh namespace as eth0. It returns
// once every server listens. On error it removes whatever it created.
func NewWith(ctx context.Context, opts cluster.Options, dc Config) (cluster.Cluster, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Topology == nil {
		return nil, errors.New("docker backend: no topology")
	}
	n := opts.Topology.N()
	switch opts.Flavor {
	case "", cluster.Poled:
	case cluster.ZooKeeper:
		return nil, errors.New("docker backend: flavor zookeeper is not supported yet (use the netns backend)")
	default:
		return nil, fmt.Errorf("docker backend: unknown flavor %q", opts.Flavor)
	}
	if len(opts.Plan.Links) == 0 {
		return nil, errors.New("docker backend: Options.Plan is empty (make one with netem.NewPlan)")
	}
	if err := opts.Plan.Validate(); err != nil {
		return nil, fmt.Errorf("docker backend: link plan: %w", err)
	}
	if got := opts.Plan.Servers(); len(got) != n || got[0] != 1 || got[n-1] != n {
		return nil, fmt.Errorf("docker backend: the link plan covers servers %v, the topology has 1..%d", got, n)
	}
	label := opts.Label
	if label == "" {
		label = "run-" + time.Now().UTC().Format("20060102-150405") + "-" + strconv.Itoa(os.Getpid())
	}
	if err := bridge.CheckLabel(label); err != nil {
		return nil, fmt.Errorf("docker backend: %w", err)
	}
	if err := bridge.CheckRoot(); err != nil {
		return nil, fmt.Errorf("docker backend: %w", err)
	}
	if n > bridge.MaxServers {
		return nil, fmt.Errorf("docker backend: %d servers do not fit a /24 (at most %d)", n, bridge.MaxServers)
	}

	cli, err := image.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker backend: %w", err)
	}
	d := &containers{cli: cli, log: log.With("backend", "docker", "run", label), label: label, plan: opts.Plan}
	leftovers, err := engine.Objects(ctx, cli, label)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker backend: %w", err)
	}
	if len(leftovers) > 0 {
		cli.Close()
		return nil, fmt.Errorf("docker backend: run %q already exists (%v; a crashed run?): remove it with `polebench cluster down %s`", label, leftovers, label)
	}
	if err := d.start(ctx, opts, dc); err != nil {
		cctx, cancel := engine.Detach(ctx)
		defer cancel()
		if cerr := d.Close(cctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup: %w", cerr))
		}
		return nil, fmt.Errorf("docker backend: %w", err)
	}
	return d, nil
}

func (d *containers) start(ctx context.Context, opts cluster.Options, dc Config) error {
	tag := dc.Image
	if tag == "" {
		t0 := time.Now()
		var built bool
		var err error
		tag, built, err = image.Poled(ctx, d.cli, image.Options{Binary: dc.Binary, Source: dc.Source, Logger: d.log})
		if err != nil {
			return fmt.Errorf("poled image: %w", err)
		}
		d.log.Info("poled image ready", "tag", tag, "built", built, "took", time.Since(t0).Round(time.Millisecond))
	}
	if err := netem.Probe(ctx); err != nil {
		if ctx.Err() != nil {
			return err
		}
		d.links = cluster.LinksUserSpace
		if uerr := d.plan.UserSpaceSupports(); uerr != nil {
			return fmt.Errorf("kernel netem unavailable (%v), and user-space links cannot emulate the plan: %w", err, uerr)
		}
		d.log.Info("kernel netem unavailable: links emulated in user space by poled", "reason", err)
	} else {
		d.links = cluster.LinksKernel
	}

	// Objects are made with detached contexts: a request cancelled mid-flight may still
	// complete in the engine after Close has listed what to remove. Cancellation is
	// honoured between requests instead.
	if err := ctx.Err(); err != nil {
		return err
	}
	var err error
	if d.net, err = bridge.Create(d.label, nil); err != nil {
		return err
	}
	t := opts.Topology
	peers := make([]replica.Peer, 0, t.N())
	d.addrs = map[int]netip.Addr{}
	for id := 1; id <= t.N(); id++ {
		a := d.net.ServerAddr(id)
		d.addrs[id] = a
		peers = append(peers, replica.Peer{ID: id, Host: a.String(), ClientPort: cluster.ClientPort, PeerPort: cluster.PeerPort, ElectionPort: cluster.ElectionPort, AdminPort: cluster.AdminPort})
	}
	var planJSON []byte
	if d.links == cluster.LinksUserSpace {
		if planJSON, err = json.MarshalIndent(d.plan, "", "  "); err != nil {
			return err
		}
	}
	env := d.procsEnv(ctx, t.N(), dc.Resources)
	for id := 1; id <= t.N(); id++ {
		cfg := opts.ReplicaConfig(id, peers)
		cfg.DataDir = image.DataDir
		cfg.ListenHost = "0.0.0.0" // eth0 arrives after poled starts
		if planJSON != nil {
			cfg.LinkPlan = image.ConfigDir + "/plan.json"
		}
		check := cfg
		check.Defaults()
		if err := check.Validate(); err != nil {
			return fmt.Errorf("p%d config: %w", id, err)
		}
		s := &server{
			Server:    cluster.Server{ID: id, DC: t.DC(id), Client: peers[id-1].ClientAddr(), Admin: peers[id-1].AdminAddr()},
			addr:      d.addrs[id],
			container: engine.ServerName(d.label, id),
			volume:    engine.ServerName(d.label, id),
		}
		d.mu.Lock()
		d.servers = append(d.servers, s)
		d.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return err
		}
		octx, cancel := engine.Detach(ctx)
		err := d.create(octx, s, tag, cfg, planJSON, dc.Resources, env)
		cancel()
		if err != nil {
			return fmt.Errorf("p%d: %w", id, err)
		}
	}
	errs := make([]error, len(d.servers))
	var wg sync.WaitGroup
	for i, s := range d.servers {
		wg.Go(func() { errs[i] = d.run(ctx, s) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	d.log.Info("cluster up", "servers", len(d.servers), "switch", bridge.Name(d.label, 0), "subnet", d.net.Prefix, "links", d.links)
	return nil
}

// procsEnv gives each of n containers on one engine its share of the engine's cores
// as GOMAXPROCS (at least 1), unless a CPU limit is set (Go then sizes itself to it). By
// default every poled would run as many Ps as the host has cores, and n of them
// contend for those cores: on a small machine, two-dc landed further above the model
// with more than one P per container.
func (d *containers) procsEnv(ctx context.Context, n int, res Resources) []string {
	if res.CPUs > 0 {
		return nil
	}
	cpus := runtime.NumCPU()
	if info, err := d.cli.Info(ctx); err == nil && info.NCPU > 0 {
		cpus = info.NCPU
	}
	return []string{"GOMAXPROCS=" + strconv.Itoa(max(1, cpus/n))}
}

// create makes server s's volume and container and copies its config into it.
// The config goes in with CopyToContainer rather than a bind mount: it works with a
// remote engine too, and the container keeps it across restarts.
func (d *containers) create(ctx context.Context, s *server, tag string, cfg replica.Config, planJSON []byte, res Resources, env []string) error {
	labels := engine.Labels(d.label, s.ID)
	if _, err := d.cli.VolumeCreate(ctx, volume.CreateOptions{Name: s.volume, Labels: labels}); err != nil {
		return fmt.Errorf("create volume: %w", err)
	}
	_, err := d.cli.ContainerCreate(ctx,
		&container.Config{
			Image:    tag,
			Hostname: "p" + strconv.Itoa(s.ID),
			Cmd:      []string{"--config", image.ConfigDir + "/poled.json"},
			Labels:   labels,
			Env:      env,
		},
		&container.HostConfig{
			NetworkMode: "none", // run plugs eth0 in
			Mounts:      []mount.Mount{{Type: mount.TypeVolume, Source: s.volume, Target: image.DataDir}},
			LogConfig:   container.LogConfig{Type: "json-file"}, // readable by ContainerLogs whatever the engine's default
			Resources:   container.Resources{NanoCPUs: int64(res.CPUs * 1e9), Memory: res.MemoryBytes},
		},
		nil, nil, s.container)
	if err != nil {
		return fmt.Errorf("create container: %w", err)
	}
	conf, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	files := map[string][]byte{"poled.json": conf}
	if planJSON != nil {
		files["plan.json"] = planJSON
	}
	tarball, err := tarFiles(files)
	if err != nil {
		return err
	}
	if err := d.cli.CopyToContainer(ctx, s.container, image.ConfigDir, bytes.NewReader(tarball), container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("copy config into %s: %w", s.container, err)
	}
	return nil
}

// run starts s's container, plugs its fresh network namespace into the run's bridge,
// installs the kernel link plan there, and waits until it listens.
func (d *containers) run(ctx context.Context, s *server) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	octx, cancel := engine.Detach(ctx)
	defer cancel()
	var plan *netem.Plan
	if d.links == cluster.LinksKernel {
		plan = &d.plan
	}
	pid, err := engine.StartOnBridge(octx, d.cli, d.net, s.ID, s.container, plan, d.addrs)
	if err != nil {
		return err
	}
	d.mu.Lock()
	s.pid = pid
	d.mu.Unlock()
	if err := d.waitReady(ctx, s); err != nil {
		return err
	}
	d.mu.Lock()
	s.alive = true
	d.mu.Unlock()
	return nil
}

// Apply installs plan's kernel links in running containers (server id → container
// name), each reaching the others at their addresses on its one network: how `polebench
// netem apply` emulates the wide area for docker-compose.yml. It needs root on the
// engine's host and a kernel with sch_netem (netem.Probe). Apply again after a
// container restarts: its namespace is new.
func Apply(ctx context.Context, plan netem.Plan, containers map[int]string) error {
	cli, err := image.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	addrs := map[int]netip.Addr{}
	for id, name := range containers {
		info, err := cli.ContainerInspect(ctx, name)
		if err != nil {
			return fmt.Errorf("p%d: inspect %s: %w", id, name, err)
		}
		if info.NetworkSettings == nil || len(info.NetworkSettings.Networks) != 1 {
			return fmt.Errorf("p%d: %s must be on exactly one network", id, name)
		}
		for _, ep := range info.NetworkSettings.Networks {
			if addrs[id], err = netip.ParseAddr(ep.IPAddress); err != nil {
				return fmt.Errorf("p%d: %s has no IPv4 address: %w", id, name, err)
			}
		}
	}
	var errs []error
	for id, name := range containers {
		if err := engine.ApplyIn(ctx, cli, name, id, addrs, plan); err != nil {
			errs = append(errs, fmt.Errorf("p%d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// Clear removes what Apply installed.
func Clear(ctx context.Context, containers map[int]string) error {
	cli, err := image.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	var errs []error
	for id, name := range containers {
		ns, _, err := engine.ContainerNetns(ctx, cli, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("p%d: %w", id, err))
			continue
		}
		if err := netem.Clear(ctx, netem.Target{NS: ns, Dev: "eth0", Self: id}); err != nil {
			errs = append(errs, fmt.Errorf("p%d: netem in %s: %w", id, name, err))
		}
		ns.Close()
	}
	return errors.Join(errs...)
}

// waitReady waits until s accepts connections on its client and admin ports, and
// fails at once, with its last log lines, if the container exits.
func (d *containers) waitReady(ctx context.Context, s *server) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var dialer net.Dialer
	for {
		info, err := d.cli.ContainerInspect(ctx, s.container)
		if err != nil {
			return fmt.Errorf("p%d did not come up: %w", s.ID, err)
		}
		if info.State == nil || !info.State.Running {
			code := -1
			if info.State != nil {
				code = info.State.ExitCode
			}
			return fmt.Errorf("p%d exited with code %d:\n%s", s.ID, code, d.logTail(ctx, s.container, 20))
		}
		ready := true
		for _, addr := range []string{s.Client, s.Admin} {
			dctx, dcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			c, err := dialer.DialContext(dctx, "tcp", addr)
			dcancel()
			if err != nil {
				ready = false
				break
			}
			c.Close()
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("p%d does not listen on %s and %s: %w", s.ID, s.Client, s.Admin, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (d *containers) logTail(ctx context.Context, name string, lines int) string {
	return engine.LogText(d.cli.ContainerLogs(ctx, name, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(lines)}))
}

func (d *containers) server(id int) (*server, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("docker cluster is closed")
	}
	return engine.ByID(d.servers, id)
}

func (d *containers) Servers() []cluster.Server {
	d.mu.Lock()
	defer d.mu.Unlock()
	return engine.ServerViews(d.servers, func(s *server) cluster.Server { return s.Server })
}

// Kill sends SIGKILL to the server's container and waits until it has stopped. Killing
// a server that is not running is not an error.
func (d *containers) Kill(ctx context.Context, id int) error {
	s, err := d.server(id)
	if err != nil {
		return err
	}
	if err := engine.KillContainer(ctx, d.cli, s.container, id); err != nil {
		return err
	}
	d.mu.Lock()
	s.alive = false
	d.mu.Unlock()
	d.log.Info("killed", "server", id)
	return nil
}

// Pause freezes the server's container (docker pause: the cgroup freezer), alive and
// silent until Resume.
func (d *containers) Pause(ctx context.Context, id int) error {
	s, err := d.server(id)
	if err != nil {
		return err
	}
	if !d.Alive(id) {
		return fmt.Errorf("pause p%d: it is not running", id)
	}
	return d.cli.ContainerPause(ctx, s.container)
}

// Resume unfreezes a paused server's container (docker unpause).
func (d *containers) Resume(ctx context.Context, id int) error {
	s, err := d.server(id)
	if err != nil {
		return err
	}
	return d.cli.ContainerUnpause(ctx, s.container)
}

// Restart starts the killed server's container again: same address, same volume.
// Its network namespace is new, so the kernel link plan is installed again.
func (d *containers) Restart(ctx context.Context, id int) error {
	s, err := d.server(id)
	if err != nil {
		return err
	}
	if d.Alive(id) {
		return fmt.Errorf("restart p%d: it is running", id)
	}
	if err := d.run(ctx, s); err != nil {
		return fmt.Errorf("restart p%d: %w", id, err)
	}
	d.log.Info("restarted", "server", id)
	return nil
}

// Alive says whether the server is running as far as this cluster knows: started and
// not killed since.
func (d *containers) Alive(id int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return id >= 1 && id <= len(d.servers) && d.servers[id-1].alive
}

func (d *containers) Links() string { return d.links }

// Pid is server id's poled as this host sees it (the engine is local), 0 while it is
// not running.
func (d *containers) Pid(id int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id < 1 || id > len(d.servers) || !d.servers[id-1].alive {
		return 0
	}
	return d.servers[id-1].pid
}

// CollectLogs writes each container's output (stdout and stderr, every start of it)
// to dir/p<ID>.log.
func (d *containers) CollectLogs(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	for _, s := range d.Servers() {
		if err := d.collectLog(ctx, s.ID, filepath.Join(dir, "p"+strconv.Itoa(s.ID)+".log")); err != nil {
			errs = append(errs, fmt.Errorf("log of p%d: %w", s.ID, err))
		}
	}
	return errors.Join(errs...)
}

func (d *containers) collectLog(ctx context.Context, id int, path string) error {
	s, err := d.server(id)
	if err != nil {
		return err
	}
	return engine.WriteLog(path)(d.cli.ContainerLogs(ctx, s.container, container.LogsOptions{ShowStdout: true, ShowStderr: true}))
}

// Close removes every container, volume and network of the run (found by label, so
// also what a cancelled start left half made). With a context that is already done it
// still tries, for up to engine.CleanupTimeout.
func (d *containers) Close(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = engine.Detach(ctx)
		defer cancel()
	}
	if d.net != nil {
		d.net.Close()
	}
	removed, err := engine.Remove(ctx, d.cli, d.label)
	d.log.Info("cluster removed", "objects", len(removed))
	return errors.Join(err, d.cli.Close())
}

// Down removes every container, volume and network labeled polebench.run=label
// (every polebench run's when label is empty), and the run's switch namespace: the
// leftovers of a harness that crashed. It returns what it removed, as "container
// NAME", "volume NAME", "network NAME", "namespace NAME", "host veth NAME".
func Down(ctx context.Context, label string) (removed []string, err error) {
	cli, err := image.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	return engine.Remove(ctx, cli, label)
}

// tarFiles packs files (name → content) into a tar for CopyToContainer.
func tarFiles(files map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Now()}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
