package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/vishvananda/netns"

	"github.com/polebench/polebench/cluster/image"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/replica"
)

// Labels on everything the docker backend creates.
const (
	LabelRun    = "polebench.run"    // the run's Options.Label
	LabelServer = "polebench.server" // server id, on containers and volumes
)

// Ports every poled container listens on, at its own address.
const (
	DockerClientPort   = 2181
	DockerPeerPort     = 2888
	DockerElectionPort = 3888
	DockerAdminPort    = 8080
)

// How long a started container may take to listen, and how long cleanup may take
// when the caller's context is already gone.
const (
	dockerReadyTimeout   = 2 * time.Minute
	dockerCleanupTimeout = 30 * time.Second
)

// DockerConfig holds the docker backend's settings beyond Options.
type DockerConfig struct {
	// Image is the poled image to run. Empty: the image of Binary, or of poled built
	// from the source tree at or above Source (the working directory by default),
	// built when missing (image.Poled).
	Image, Binary, Source string
	// Resources limit every container; zero values mean no limit.
	Resources DockerResources
}

// DockerResources limit one container.
type DockerResources struct {
	CPUs        float64 // cores, such as 0.5
	MemoryBytes int64
}

// NewDocker starts opts' cluster as containers on the local Docker engine (or the one
// DOCKER_HOST names), building the poled image from the source tree when missing; the
// environment variable POLEBENCH_POLED (PoledEnv) may name a static poled binary to package instead.
func NewDocker(ctx context.Context, opts Options) (Cluster, error) {
	return NewDockerWith(ctx, opts, DockerConfig{Binary: os.Getenv(PoledEnv)})
}

type dockerServer struct {
	Server
	addr      netip.Addr
	container string // name
	volume    string
	alive     bool
	pid       int // of poled, on this host, in its latest start
}

type dockerCluster struct {
	cli   *client.Client
	log   *slog.Logger
	label string
	name  string // polebench-<label>: containers and volumes are <name>-p<ID>
	net   *netnsNet
	links string
	plan  netem.Plan
	addrs map[int]netip.Addr

	mu      sync.Mutex
	servers []*dockerServer // index id-1
	closed  bool
}

// NewDockerWith is NewDocker with the backend's own settings. One container per server
// running `poled --config /etc/poled/poled.json` with its data on a named volume,
// everything labeled polebench.run=opts.Label, and one bridge per run with a fixed
// address per server. The bridge is the netns backend's (a Linux bridge in the run's
// own switch namespace, reached from the host by one veth), not a Docker network:
// Docker's bridges live in the host's namespace, where br_netfilter sends every frame
// between containers through the host's iptables and conntrack, which cost 2-5 ms
// per request here (see the README). Containers start with network mode none, and
// each start plugs a veth into the container's fresh namespace as eth0. It returns
// once every server listens. On error it removes whatever it created.
func NewDockerWith(ctx context.Context, opts Options, dc DockerConfig) (Cluster, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Topology == nil {
		return nil, errors.New("docker backend: no topology")
	}
	n := opts.Topology.N()
	switch opts.Flavor {
	case "", Poled:
	case ZooKeeper:
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
	if err := netnsCheckLabel(label); err != nil {
		return nil, fmt.Errorf("docker backend: %w", err)
	}
	if err := netnsCheckRoot(); err != nil {
		return nil, fmt.Errorf("docker backend: %w", err)
	}
	if n > netnsMaxServers {
		return nil, fmt.Errorf("docker backend: %d servers do not fit a /24 (at most %d)", n, netnsMaxServers)
	}

	cli, err := image.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker backend: %w", err)
	}
	d := &dockerCluster{cli: cli, log: log.With("backend", "docker", "run", label), label: label, plan: opts.Plan}
	leftovers, err := dockerObjects(ctx, cli, label)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker backend: %w", err)
	}
	if len(leftovers) > 0 {
		cli.Close()
		return nil, fmt.Errorf("docker backend: run %q already exists (%v; a crashed run?): remove it with `polebench cluster down %s`", label, leftovers, label)
	}
	if err := d.start(ctx, opts, dc); err != nil {
		cctx, cancel := dockerDetach(ctx)
		defer cancel()
		if cerr := d.Close(cctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup: %w", cerr))
		}
		return nil, fmt.Errorf("docker backend: %w", err)
	}
	return d, nil
}

func (d *dockerCluster) start(ctx context.Context, opts Options, dc DockerConfig) error {
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
		d.links = LinksUserSpace
		d.log.Info("kernel netem unavailable: links emulated in user space by poled", "reason", err)
	} else {
		d.links = LinksKernel
	}

	// Objects are made with detached contexts: a request cancelled mid-flight may still
	// complete in the engine after Close has listed what to remove. Cancellation is
	// honoured between requests instead.
	if err := ctx.Err(); err != nil {
		return err
	}
	d.name = "polebench-" + dockerName(d.label)
	var err error
	if d.net, err = netnsCreate(d.label, nil); err != nil {
		return err
	}
	t := opts.Topology
	peers := make([]replica.Peer, 0, t.N())
	d.addrs = map[int]netip.Addr{}
	for id := 1; id <= t.N(); id++ {
		a := netnsOctet(d.net.prefix, netnsFirstOctet+id)
		d.addrs[id] = a
		peers = append(peers, replica.Peer{ID: id, Host: a.String(), ClientPort: DockerClientPort, PeerPort: DockerPeerPort, ElectionPort: DockerElectionPort, AdminPort: DockerAdminPort})
	}
	var planJSON []byte
	if d.links == LinksUserSpace {
		if planJSON, err = json.MarshalIndent(d.plan, "", "  "); err != nil {
			return err
		}
	}
	env := d.procsEnv(ctx, t.N(), dc.Resources)
	for id := 1; id <= t.N(); id++ {
		cfg := opts.replicaConfig(id, peers)
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
		s := &dockerServer{
			Server:    Server{ID: id, DC: t.DC(id), Client: peers[id-1].ClientAddr(), Admin: peers[id-1].AdminAddr()},
			addr:      d.addrs[id],
			container: d.name + "-p" + strconv.Itoa(id),
			volume:    d.name + "-p" + strconv.Itoa(id),
		}
		d.mu.Lock()
		d.servers = append(d.servers, s)
		d.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return err
		}
		octx, cancel := dockerDetach(ctx)
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
	d.log.Info("cluster up", "servers", len(d.servers), "switch", netnsName(d.label, 0), "subnet", d.net.prefix, "links", d.links)
	return nil
}

// procsEnv gives each of n containers on one engine its share of the engine's cores
// as GOMAXPROCS (at least 1), unless a CPU limit is set (Go then sizes itself to it). By
// default every poled would run as many Ps as the host has cores, and n of them
// contend for those cores: on this project's 2-core machine, two-dc in alternating runs
// landed 12-22 ms above the model with one P per container, 24-75 ms with two.
func (d *dockerCluster) procsEnv(ctx context.Context, n int, res DockerResources) []string {
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
func (d *dockerCluster) create(ctx context.Context, s *dockerServer, tag string, cfg replica.Config, planJSON []byte, res DockerResources, env []string) error {
	labels := map[string]string{LabelRun: d.label, LabelServer: strconv.Itoa(s.ID)}
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
	tarball, err := dockerTar(files)
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
func (d *dockerCluster) run(ctx context.Context, s *dockerServer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	octx, cancel := dockerDetach(ctx)
	defer cancel()
	if err := d.cli.ContainerStart(octx, s.container, container.StartOptions{}); err != nil {
		return fmt.Errorf("start %s: %w", s.container, err)
	}
	ns, pid, err := containerNetnsPid(octx, d.cli, s.container)
	if err != nil {
		return err
	}
	d.mu.Lock()
	s.pid = pid
	d.mu.Unlock()
	err = d.net.plugForeign(s.ID, ns, s.container)
	ns.Close() // the veth keeps nothing alive: the namespace dies with the container
	if err != nil {
		return err
	}
	if d.links == LinksKernel {
		if err := d.applyKernel(octx, s); err != nil {
			return err
		}
	}
	if err := d.waitReady(ctx, s); err != nil {
		return err
	}
	d.mu.Lock()
	s.alive = true
	d.mu.Unlock()
	return nil
}

func (d *dockerCluster) applyKernel(ctx context.Context, s *dockerServer) error {
	return applyInContainer(ctx, d.cli, s.container, s.ID, d.addrs, d.plan)
}

// applyInContainer installs server self's links of plan on eth0 of a running container,
// from the host: the handle to its network namespace comes from its process.
func applyInContainer(ctx context.Context, cli *client.Client, name string, self int, addrs map[int]netip.Addr, plan netem.Plan) error {
	ns, err := containerNetns(ctx, cli, name)
	if err != nil {
		return err
	}
	defer ns.Close()
	if err := netem.Apply(ctx, netem.Target{NS: ns, Dev: "eth0", Self: self, Addrs: addrs}, plan); err != nil {
		return fmt.Errorf("netem in %s: %w", name, err)
	}
	return nil
}

func containerNetns(ctx context.Context, cli *client.Client, name string) (netns.NsHandle, error) {
	ns, _, err := containerNetnsPid(ctx, cli, name)
	return ns, err
}

// containerNetnsPid is containerNetns, and the pid of the container's first process
// on the engine's host (this one: the engine must be local).
func containerNetnsPid(ctx context.Context, cli *client.Client, name string) (netns.NsHandle, int, error) {
	info, err := cli.ContainerInspect(ctx, name)
	if err != nil {
		return 0, 0, fmt.Errorf("inspect %s: %w", name, err)
	}
	if info.State == nil || info.State.Pid == 0 {
		return 0, 0, fmt.Errorf("%s is not running", name)
	}
	path := fmt.Sprintf("/proc/%d/ns/net", info.State.Pid)
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return 0, 0, fmt.Errorf("network namespace of %s (%s; the engine must be local and the harness root): %w", name, path, err)
	}
	return ns, info.State.Pid, nil
}

// DockerApply installs plan's kernel links in running containers (server id → container
// name), each reaching the others at their addresses on its one network: how `polebench
// netem apply` emulates the wide area for docker-compose.yml. It needs root on the
// engine's host and a kernel with sch_netem (netem.Probe). Apply again after a
// container restarts: its namespace is new.
func DockerApply(ctx context.Context, plan netem.Plan, containers map[int]string) error {
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
		if err := applyInContainer(ctx, cli, name, id, addrs, plan); err != nil {
			errs = append(errs, fmt.Errorf("p%d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// DockerClear removes what DockerApply installed.
func DockerClear(ctx context.Context, containers map[int]string) error {
	cli, err := image.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	var errs []error
	for id, name := range containers {
		ns, err := containerNetns(ctx, cli, name)
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
func (d *dockerCluster) waitReady(ctx context.Context, s *dockerServer) error {
	ctx, cancel := context.WithTimeout(ctx, dockerReadyTimeout)
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

func (d *dockerCluster) logTail(ctx context.Context, name string, lines int) string {
	return logText(d.cli.ContainerLogs(ctx, name, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(lines)}))
}

// logText is what an engine's multiplexed log stream (a container's or a service's)
// says, for an error message.
func logText(rc io.ReadCloser, err error) string {
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := stdcopy.StdCopy(&buf, &buf, rc); err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	return strings.TrimRight(buf.String(), "\n")
}

func (d *dockerCluster) server(id int) (*dockerServer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("docker cluster is closed")
	}
	return byID(d.servers, id)
}

// byID is server id (1..N) of a backend's list.
func byID[T any](servers []*T, id int) (*T, error) {
	if id < 1 || id > len(servers) {
		return nil, fmt.Errorf("no server p%d (servers are p1..p%d)", id, len(servers))
	}
	return servers[id-1], nil
}

func (d *dockerCluster) Servers() []Server {
	d.mu.Lock()
	defer d.mu.Unlock()
	return serverViews(d.servers, func(s *dockerServer) Server { return s.Server })
}

// serverViews is what Servers reports of a backend's list.
func serverViews[T any](list []*T, get func(*T) Server) []Server {
	out := make([]Server, len(list))
	for i, s := range list {
		out[i] = get(s)
	}
	return out
}

// killContainer sends SIGKILL to a container on eng and waits until it has stopped;
// one that had stopped already is not an error.
func killContainer(ctx context.Context, eng *client.Client, cid string, id int) error {
	if err := eng.ContainerKill(ctx, cid, "SIGKILL"); err != nil {
		info, ierr := eng.ContainerInspect(ctx, cid)
		if ierr != nil || info.State == nil || info.State.Running {
			return fmt.Errorf("kill p%d: %w", id, err)
		}
	}
	waitc, errc := eng.ContainerWait(ctx, cid, container.WaitConditionNotRunning)
	select {
	case <-waitc:
	case err := <-errc:
		return fmt.Errorf("kill p%d: waiting for it to stop: %w", id, err)
	}
	return nil
}

// Kill sends SIGKILL to the server's container and waits until it has stopped. Killing
// a server that is not running is not an error.
func (d *dockerCluster) Kill(ctx context.Context, id int) error {
	s, err := d.server(id)
	if err != nil {
		return err
	}
	if err := killContainer(ctx, d.cli, s.container, id); err != nil {
		return err
	}
	d.mu.Lock()
	s.alive = false
	d.mu.Unlock()
	d.log.Info("killed", "server", id)
	return nil
}

// Restart starts the killed server's container again: same address, same volume.
// Its network namespace is new, so the kernel link plan is installed again.
func (d *dockerCluster) Restart(ctx context.Context, id int) error {
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
func (d *dockerCluster) Alive(id int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return id >= 1 && id <= len(d.servers) && d.servers[id-1].alive
}

func (d *dockerCluster) Links() string { return d.links }

// Pid is server id's poled as this host sees it (the engine is local), 0 while it is
// not running.
func (d *dockerCluster) Pid(id int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id < 1 || id > len(d.servers) || !d.servers[id-1].alive {
		return 0
	}
	return d.servers[id-1].pid
}

// CollectLogs writes each container's output (stdout and stderr, every start of it)
// to dir/p<ID>.log.
func (d *dockerCluster) CollectLogs(ctx context.Context, dir string) error {
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

func (d *dockerCluster) collectLog(ctx context.Context, id int, path string) error {
	s, err := d.server(id)
	if err != nil {
		return err
	}
	return writeLog(path)(d.cli.ContainerLogs(ctx, s.container, container.LogsOptions{ShowStdout: true, ShowStderr: true}))
}

// writeLog returns what writes an engine's multiplexed log stream (a container's or a
// service's) into path, stdout and stderr together.
func writeLog(path string) func(io.ReadCloser, error) error {
	return func(rc io.ReadCloser, err error) error {
		if err != nil {
			return err
		}
		defer rc.Close()
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if _, err := stdcopy.StdCopy(f, f, rc); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
}

// Close removes every container, volume and network of the run (found by label, so
// also what a cancelled start left half made). With a context that is already done it
// still tries, for up to 30 s.
func (d *dockerCluster) Close(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = dockerDetach(ctx)
		defer cancel()
	}
	removed, err := dockerRemoveRun(ctx, d.cli, d.label)
	if d.net != nil {
		d.net.close()
	}
	gone, nerr := NetnsDown(ctx, d.label)
	d.log.Info("cluster removed", "objects", len(removed)+len(gone))
	return errors.Join(err, nerr, d.cli.Close())
}

// DockerDown removes every container, volume and network labeled polebench.run=label
// (every polebench run's when label is empty), and the run's switch namespace: the
// leftovers of a harness that crashed. It returns what it removed, as "container
// NAME", "volume NAME", "network NAME", "namespace NAME", "host veth NAME".
func DockerDown(ctx context.Context, label string) (removed []string, err error) {
	cli, err := image.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	removed, err = dockerRemoveRun(ctx, cli, label)
	if label == "" {
		return removed, err // NetnsDown("") would take every netns cluster too: cluster.Down does
	}
	gone, nerr := NetnsDown(ctx, label)
	return append(removed, gone...), errors.Join(err, nerr)
}

func dockerRunFilter(label string) filters.Args {
	if label == "" {
		return filters.NewArgs(filters.Arg("label", LabelRun))
	}
	return filters.NewArgs(filters.Arg("label", LabelRun+"="+label))
}

// dockerObject is a container, volume or network a run made.
type dockerObject struct{ kind, name, id string }

func (o dockerObject) String() string { return o.kind + " " + o.name }

// dockerObjects lists what carries label (any polebench run's if label is empty):
// containers first, then volumes, then networks, the order they can be removed in.
func dockerObjects(ctx context.Context, cli *client.Client, label string) ([]dockerObject, error) {
	f := dockerRunFilter(label)
	var out []dockerObject
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs {
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		out = append(out, dockerObject{"container", name, c.ID})
	}
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	for _, v := range vs.Volumes {
		out = append(out, dockerObject{"volume", v.Name, v.Name})
	}
	ns, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	for _, n := range ns {
		out = append(out, dockerObject{"network", n.Name, n.ID})
	}
	return out, nil
}

// dockerRemoveRun removes every object of the run, going on past errors, and checks that
// nothing is left.
func dockerRemoveRun(ctx context.Context, cli *client.Client, label string) ([]string, error) {
	objs, err := dockerObjects(ctx, cli, label)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, o := range objs {
		var err error
		switch o.kind {
		case "container":
			err = cli.ContainerRemove(ctx, o.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		case "volume":
			err = cli.VolumeRemove(ctx, o.id, false) // force would hide "in use"
		case "network":
			err = cli.NetworkRemove(ctx, o.id)
		}
		if err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, fmt.Errorf("remove %v: %w", o, err))
			continue
		}
		removed = append(removed, o.String())
	}
	if left, err := dockerObjects(ctx, cli, label); err != nil {
		errs = append(errs, err)
	} else if len(left) > 0 {
		errs = append(errs, fmt.Errorf("still there after removal: %v", left))
	}
	return removed, errors.Join(errs...)
}

// detach is a context for one step that must not be abandoned half done when ctx is
// cancelled (Ctrl-C): making an object, or removing what a run made. It is bounded.
func dockerDetach(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), dockerCleanupTimeout)
}

// dockerName maps a label onto the characters Docker allows in names.
func dockerName(label string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, label)
}

// dockerTar packs files (name → content) into a tar for CopyToContainer.
func dockerTar(files map[string][]byte) ([]byte, error) {
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
