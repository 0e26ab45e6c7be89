// Package swarm is the swarm backend: every server a Docker Swarm service of one task,
// placed on a node of its data center, across machines. Its test harness, package
// swarmtest, makes a swarm of this machine's engines.
package swarm

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/swarm"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/image"
	"github.com/polebench/polebench/cluster/internal/engine"
	"github.com/polebench/polebench/cluster/swarm/internal/single"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/topology"
)

// The swarm backend runs each server as a Docker Swarm service of one task, placed on
// a node of its data center, on an attachable overlay network of the run. The replicas
// emulate their own links (replica.LinksAuto): the kernel plan on their own interface
// when they have CAP_NET_ADMIN (every task gets it) and the node's kernel has
// sch_netem, else user space. Peers reach each other by service name (DNS round robin,
// so a name is the task's own address: no virtual IP, no IPVS), which is how a replica
// learns its peers' addresses for the kernel plan's filters, again after a restart.
// Clients reach a server at its node's address, on ports published in host mode.

func init() {
	// Its links are declared user space though a node whose kernel has sch_netem
	// applies them there: a spec cannot know which node a server lands on.
	notHere := "its servers are neither paused by the backend nor processes of this host"
	cluster.Register(cluster.Backend{Name: backend.Swarm, Rank: 40, New: New, Down: Down, Check: Check, Prepare: Prepare,
		Carries: backend.Carries{
			Faults: backend.AllBut(nemesis.Pause, nemesis.Resume, nemesis.LoseUnsynced, nemesis.TornTail),
			Links:  backend.Links{UserSpace: true, RateLoss: true},
			Why: map[string]string{
				string(nemesis.Pause): notHere, string(nemesis.Resume): notHere,
				string(nemesis.LoseUnsynced): "its servers' poled logs are not on this host",
				string(nemesis.TornTail):     "its servers' poled logs are not on this host",
			},
		}})
}

// LabelRun marks everything the swarm backend creates (services, their containers,
// configs, networks, volumes) with the run's label. It is not the docker backend's
// docker.LabelRun, so neither backend's cleanup touches the other's objects.
const LabelRun = "polebench.swarm"

// LabelDC is the node label that puts a data center's servers on a node:
// `docker node update --label-add polebench.dc=D1 NODE`.
const LabelDC = "polebench.dc"

// The swarm backend's settings from the environment (ConfigFromEnv): where the nodes'
// engines are, a registry to use instead of loading the image into each, and the first
// published port. They describe the machines, not the experiment, so they are not spec
// fields.
const (
	EnginesEnv  = "POLEBENCH_SWARM_ENGINES"  // comma-separated engine addresses (DOCKER_HOST syntax)
	RegistryEnv = "POLEBENCH_SWARM_REGISTRY" // host:port of a registry the nodes pull from
	PortsEnv    = "POLEBENCH_SWARM_PORTS"    // first published port (default PortBase)
)

// PortBase is where published ports start: server N publishes its client port as
// PortBase+N and its admin port as PortBase+100+N on its node.
const PortBase = 21800

// maxServers keeps the published ports of client and admin apart.
const maxServers = 99

// How long a task may take to run and listen, and how long removal may take.
const (
	readyTimeout   = 2 * time.Minute
	linksTimeout   = 30 * time.Second
	removeTimeout  = time.Minute
	clientRTTProbe = 10 // connections timed per server
)

// subnets is where run networks come from: 10.216.k.0/24 (netns runs use 10.215).
var subnets = netip.MustParsePrefix("10.216.0.0/16")

// Config holds the swarm backend's settings beyond cluster.Options.
type Config struct {
	// Engines are addresses of the nodes' Docker engines (unix://..., tcp://HOST:2375)
	// besides the manager's own and those of the Docker CLI's contexts.
	Engines []string
	// Registry, if set, is a registry (host:port) the image is pushed to and every
	// node pulls it from, instead of loading it into each node's engine.
	Registry string
	// PortBase is the first published port (0: the package's PortBase).
	PortBase int
	// Image, Binary and Source choose the poled image as docker.Config's do.
	Image, Binary, Source string
}

// ConfigFromEnv reads the swarm backend's settings from the environment.
func ConfigFromEnv() (Config, error) {
	c := Config{Binary: os.Getenv(cluster.PoledEnv), Registry: os.Getenv(RegistryEnv)}
	for h := range strings.SplitSeq(os.Getenv(EnginesEnv), ",") {
		if h = strings.TrimSpace(h); h != "" {
			if !strings.Contains(h, "://") {
				return c, fmt.Errorf("%s: %q is not an engine address (unix:///PATH or tcp://HOST:PORT)", EnginesEnv, h)
			}
			c.Engines = append(c.Engines, h)
		}
	}
	if v := os.Getenv(PortsEnv); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1024 || p+100+maxServers > 65535 {
			return c, fmt.Errorf("%s: %q is not a port between 1024 and %d", PortsEnv, v, 65535-100-maxServers)
		}
		c.PortBase = p
	}
	return c, nil
}

// New starts opts' cluster on the Docker Swarm whose manager DOCKER_HOST names (the
// local engine by default), with ConfigFromEnv's settings.
func New(ctx context.Context, opts cluster.Options) (cluster.Cluster, error) {
	c, err := ConfigFromEnv()
	if err != nil {
		return nil, fmt.Errorf("swarm backend: %w", err)
	}
	return NewWith(ctx, opts, c)
}

// Check says why this machine cannot run the swarm backend: no Docker engine that
// answers, or one that is no swarm manager.
func Check(ctx context.Context) error {
	cli, err := image.Connect(ctx)
	if err != nil {
		return fmt.Errorf("swarm backend: %w", err)
	}
	defer cli.Close()
	info, err := cli.Info(ctx)
	if err != nil {
		return fmt.Errorf("swarm backend: %w", err)
	}
	if err := manager(cli, info); err != nil {
		return fmt.Errorf("swarm backend: %w", err)
	}
	return nil
}

// manager says why the engine cli answered info for cannot manage a swarm run; an
// engine in no swarm is one Prepare mends.
func manager(cli *client.Client, info system.Info) error {
	if info.Swarm.LocalNodeState != swarm.LocalNodeStateActive || !info.Swarm.ControlAvailable {
		err := fmt.Errorf("the Docker engine at %s is not a swarm manager (swarm %s): run `docker swarm init` there, or point DOCKER_HOST at a manager",
			cli.DaemonHost(), cmp.Or(string(info.Swarm.LocalNodeState), "inactive"))
		if cmp.Or(info.Swarm.LocalNodeState, swarm.LocalNodeStateInactive) == swarm.LocalNodeStateInactive {
			return cluster.Unprepared(err)
		}
		return err
	}
	return nil
}

// prepareWait bounds Prepare's wait for the machine-wide lock of swarm mode, which
// a swarm test holds while it runs.
const prepareWait = 10 * time.Minute

// Prepare makes the engine DOCKER_HOST names (the local one by default) a swarm
// manager until release: a single-node swarm, initialised when the engine is in none
// and left on release, or the engine's own swarm as it is (single.Take).
func Prepare(ctx context.Context) (string, func(context.Context) error, error) {
	cli, err := image.Connect(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("swarm backend: %w", err)
	}
	tctx, cancel := context.WithTimeout(ctx, prepareWait)
	defer cancel()
	l, err := single.Take(tctx, cli)
	if err != nil {
		cli.Close()
		return "", nil, fmt.Errorf("swarm backend: %w", err)
	}
	return l.Note, func(ctx context.Context) error {
		defer cli.Close()
		if err := l.Release(ctx); err != nil {
			return fmt.Errorf("swarm backend: %w", err)
		}
		return nil
	}, nil
}

type server struct {
	cluster.Server
	service string // name; also the host name peers reach it by
	node    string // node ID it is pinned to (its volume lives there)
	addr    string // its address on the run's network, while it runs
	alive   bool
}

// services is a run's cluster of services.
type services struct {
	cli     *client.Client // the manager
	engines nodeEngines    // node ID -> engine
	log     *slog.Logger
	label   string
	name    string // polebench-<label>: services, configs, volumes and the network
	links   string

	mu      sync.Mutex
	servers []*server // index id-1
	closed  bool
}

var _ cluster.Cluster = (*services)(nil)

// NewWith is New with explicit settings. It places every server on a node (LabelDC; a
// swarm of one node takes every DC), gets the poled image onto those
// nodes, creates the run's overlay network, one config per server plus the link plan,
// and one service per server, and returns once every server listens and has its
// links in place. On error it removes whatever it created.
func NewWith(ctx context.Context, opts cluster.Options, sc Config) (cluster.Cluster, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := opts.Topology
	if t == nil {
		return nil, errors.New("swarm backend: no topology")
	}
	if opts.Flavor != "" && opts.Flavor != cluster.Poled {
		return nil, fmt.Errorf("swarm backend: flavor %q is not supported (only %q)", opts.Flavor, cluster.Poled)
	}
	if n := t.N(); n > maxServers {
		return nil, fmt.Errorf("swarm backend: %d servers, at most %d", n, maxServers)
	}
	if err := opts.Plan.Validate(); err != nil || len(opts.Plan.Links) == 0 {
		return nil, fmt.Errorf("swarm backend: link plan: %v (make one with netem.NewPlan)", cmp.Or(err, errors.New("empty")))
	}
	if got := opts.Plan.Servers(); !slices.Equal(got, t.Servers()) {
		return nil, fmt.Errorf("swarm backend: the link plan covers servers %v, the topology has %v", got, t.Servers())
	}
	if sc.PortBase == 0 {
		sc.PortBase = PortBase
	}
	label := opts.Label
	if label == "" {
		label = "run-" + time.Now().UTC().Format("20060102-150405") + "-" + strconv.Itoa(os.Getpid())
	}
	if err := cluster.CheckLabel(label); err != nil {
		return nil, fmt.Errorf("swarm backend: %w", err)
	}
	cli, err := image.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("swarm backend: %w", err)
	}
	info, err := cli.Info(ctx)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("swarm backend: %w", err)
	}
	if err := manager(cli, info); err != nil {
		cli.Close()
		return nil, fmt.Errorf("swarm backend: %w", err)
	}
	s := &services{cli: cli, log: log.With("backend", "swarm", "run", label), label: label, name: runName(label)}
	s.engines = connectEngines(ctx, cli, info.Swarm.NodeID, info.Swarm.Cluster.ID, sc.Engines, s.log)
	if left, err := objects(ctx, cli, s.engines, label); err != nil || len(left) > 0 {
		s.engines.close(cli)
		cli.Close()
		if err != nil {
			return nil, fmt.Errorf("swarm backend: %w", err)
		}
		return nil, fmt.Errorf("swarm backend: run %q already exists (%v; a crashed run?): remove it with `polebench cluster down %s`", label, left, label)
	}
	if err := s.start(ctx, opts, sc); err != nil {
		cctx, cancel := engine.Detach(ctx)
		defer cancel()
		if cerr := s.Close(cctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup: %w", cerr))
		}
		return nil, fmt.Errorf("swarm backend: %w", err)
	}
	return s, nil
}

func (s *services) start(ctx context.Context, opts cluster.Options, sc Config) error {
	t := opts.Topology
	nodes, err := s.cli.NodeList(ctx, swarm.NodeListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	placed, err := place(t, nodes, opts.Nodes)
	if err != nil {
		return err
	}
	used := map[string]swarm.Node{}
	for _, nd := range placed {
		used[nd.ID] = nd
	}
	var noEngine []string
	for id, nd := range used {
		if s.engines[id] == nil {
			noEngine = append(noEngine, nodeName(nd))
		}
	}
	if len(noEngine) > 0 {
		slices.Sort(noEngine)
		return fmt.Errorf("no Docker engine address for node %s: add it to %s (e.g. tcp://ADDR:2375) or create a Docker context for it (docker context create NAME --docker host=tcp://ADDR:2376,ca=...,cert=...,key=...)",
			strings.Join(noEngine, ", "), EnginesEnv)
	}

	ref, err := s.image(ctx, sc, used)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	octx, cancel := engine.Detach(ctx)
	netID, subnet, err := s.createNetwork(octx)
	cancel()
	if err != nil {
		return err
	}
	peers := make([]replica.Peer, 0, t.N())
	for _, id := range t.Servers() {
		peers = append(peers, replica.Peer{ID: id, Host: s.service(id), ClientPort: cluster.ClientPort, PeerPort: cluster.PeerPort,
			ElectionPort: cluster.ElectionPort, AdminPort: cluster.AdminPort})
	}
	planJSON, err := json.MarshalIndent(opts.Plan, "", "  ")
	if err != nil {
		return err
	}
	octx, cancel = engine.Detach(ctx)
	planRef, err := s.createConfig(octx, s.name+"-plan", planJSON)
	cancel()
	if err != nil {
		return err
	}
	for _, id := range t.Servers() {
		nd := placed[id]
		addr := nodeAddr(nd)
		sv := &server{
			Server: cluster.Server{ID: id, DC: t.DC(id), Node: nodeName(nd),
				Client: net.JoinHostPort(addr, strconv.Itoa(sc.PortBase+id)),
				Admin:  net.JoinHostPort(addr, strconv.Itoa(sc.PortBase+100+id))},
			service: s.service(id), node: nd.ID,
		}
		cfg := opts.ReplicaConfig(id, peers)
		cfg.DataDir, cfg.ListenHost = image.DataDir, "0.0.0.0"
		cfg.LinkPlan, cfg.LinkMode = image.ConfigDir+"/plan.json", replica.LinksAuto
		check := cfg
		check.Defaults()
		if err := check.Validate(); err != nil {
			return fmt.Errorf("p%d config: %w", id, err)
		}
		s.mu.Lock()
		s.servers = append(s.servers, sv)
		s.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return err
		}
		octx, cancel := engine.Detach(ctx)
		err := s.createService(octx, sv, ref, netID, cfg, planRef, sc.PortBase)
		cancel()
		if err != nil {
			return fmt.Errorf("p%d: %w", id, err)
		}
	}
	errs := make([]error, len(s.servers))
	var wg sync.WaitGroup
	for i, sv := range s.servers {
		wg.Go(func() { errs[i] = s.waitRunning(ctx, sv, "") })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := s.waitLinks(ctx); err != nil {
		return err
	}
	s.measureClients(ctx)
	s.log.Info("cluster up", "servers", len(s.servers), "nodes", len(used), "network", s.name, "subnet", subnet, "links", s.links)
	return nil
}

// runName names the run's swarm objects: the swarm wants DNS name components (at
// most 63 letters, digits and hyphens), and services and configs add to this name.
func runName(label string) string {
	name := "polebench-" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, label)
	if len(name) > 45 {
		sum := sha256.Sum256([]byte(label))
		name = fmt.Sprintf("%s-%x", strings.TrimRight(name[:36], "-"), sum[:4])
	}
	return name
}

func (s *services) service(id int) string { return s.name + "-p" + strconv.Itoa(id) }

func (s *services) labels(id int) map[string]string {
	l := map[string]string{LabelRun: s.label}
	if id > 0 {
		l[engine.LabelServer] = strconv.Itoa(id)
	}
	return l
}

// place gives every server a node: a data center's servers go round robin over the
// nodes named[DC] lists (host names or IDs, in that order), or else over the ready,
// active nodes labelled LabelDC=<DC> (ordered by host name, then ID). A swarm of one
// such node with no LabelDC label and no names takes every server.
// Each server stays on its node for the run: its volume is there.
func place(t *topology.Topology, nodes []swarm.Node, named map[string][]string) (map[int]swarm.Node, error) {
	var usable []swarm.Node
	labelled := false
	for _, nd := range nodes {
		if nd.Status.State == swarm.NodeStateReady && nd.Spec.Availability == swarm.NodeAvailabilityActive {
			usable = append(usable, nd)
			_, ok := nd.Spec.Labels[LabelDC]
			labelled = labelled || ok
		}
	}
	if len(usable) == 0 {
		return nil, errors.New("no ready, active node in the swarm")
	}
	slices.SortFunc(usable, func(a, b swarm.Node) int {
		return cmp.Or(strings.Compare(a.Description.Hostname, b.Description.Hostname), strings.Compare(a.ID, b.ID))
	})
	place := map[int]swarm.Node{}
	if len(usable) == 1 && !labelled && len(named) == 0 {
		for _, id := range t.Servers() {
			place[id] = usable[0]
		}
		return place, nil
	}
	var errs []error
	for _, dc := range t.DCs() {
		var in []swarm.Node
		if names := named[dc.Name]; len(names) > 0 {
			for _, name := range names {
				i := slices.IndexFunc(usable, func(nd swarm.Node) bool { return nd.Description.Hostname == name || nd.ID == name })
				if i < 0 {
					errs = append(errs, fmt.Errorf("DC %s's nodes: no ready, active node has the host name or ID %q (usable: %s)", dc.Name, name, nodeNames(usable)))
					continue
				}
				in = append(in, usable[i])
			}
			if len(in) < len(names) {
				continue
			}
		} else {
			for _, nd := range usable {
				if nd.Spec.Labels[LabelDC] == dc.Name {
					in = append(in, nd)
				}
			}
		}
		if len(in) == 0 {
			errs = append(errs, fmt.Errorf("no ready node is labelled %s=%s for DC %s's servers %v (docker node update --label-add %s=%s NODE)",
				LabelDC, dc.Name, dc.Name, dc.Servers, LabelDC, dc.Name))
			continue
		}
		for i, id := range dc.Servers {
			place[id] = in[i%len(in)]
		}
	}
	return place, errors.Join(errs...)
}

// nodeNames lists nodes as nodeName does, for errors.
func nodeNames(nodes []swarm.Node) string {
	var names []string
	for _, nd := range nodes {
		names = append(names, nodeName(nd))
	}
	return strings.Join(names, ", ")
}

// nodeName is how errors and servers.json name a node: host name and short ID.
func nodeName(nd swarm.Node) string {
	return nd.Description.Hostname + "/" + nd.ID[:min(len(nd.ID), 12)]
}

// nodeAddr is where clients reach a node's published ports: the address it
// advertises to the swarm (a manager may report 0.0.0.0 there; its raft address then).
func nodeAddr(nd swarm.Node) string {
	if a, err := netip.ParseAddr(nd.Status.Addr); err == nil && !a.IsUnspecified() {
		return a.String()
	}
	if nd.ManagerStatus != nil {
		if h, _, err := net.SplitHostPort(nd.ManagerStatus.Addr); err == nil {
			return h
		}
	}
	return nd.Status.Addr
}

// image makes sure every used node has the poled image and returns how services name
// it: by ID when loaded into the engines (no pull is ever tried), by the registry's
// name when pushed there.
func (s *services) image(ctx context.Context, sc Config, used map[string]swarm.Node) (string, error) {
	ref := sc.Image
	if ref == "" {
		var err error
		t0 := time.Now()
		if ref, _, err = image.Poled(ctx, s.cli, image.Options{Binary: sc.Binary, Source: sc.Source, Logger: s.log}); err != nil {
			return "", fmt.Errorf("poled image: %w", err)
		}
		s.log.Info("poled image ready", "tag", ref, "took", time.Since(t0).Round(time.Millisecond))
	}
	if sc.Registry != "" {
		pushed, err := pushImage(ctx, s.cli, ref, sc.Registry)
		if err != nil {
			return "", err
		}
		s.log.Info("poled image pushed; nodes pull it", "image", pushed)
		return pushed, nil
	}
	img, err := s.cli.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("poled image %s: %w", ref, err)
	}
	for id, nd := range used {
		t0 := time.Now()
		loaded, err := loadImage(ctx, s.cli, s.engines[id], ref, img.ID)
		if err != nil {
			return "", fmt.Errorf("node %s: %w", nodeName(nd), err)
		}
		if loaded {
			s.log.Info("poled image loaded", "node", nodeName(nd), "took", time.Since(t0).Round(time.Millisecond))
		}
	}
	return img.ID, nil
}

// createNetwork makes the run's attachable overlay network on a /24 of subnets
// that no network of the manager uses, starting at one the label picks.
func (s *services) createNetwork(ctx context.Context) (string, netip.Prefix, error) {
	nets, err := s.cli.NetworkList(ctx, network.ListOptions{})
	if err != nil {
		return "", netip.Prefix{}, fmt.Errorf("list networks: %w", err)
	}
	taken := map[netip.Prefix]bool{}
	for _, n := range nets {
		for _, c := range n.IPAM.Config {
			if p, err := netip.ParsePrefix(c.Subnet); err == nil {
				taken[p.Masked()] = true
			}
		}
	}
	h := fnv.New32a()
	h.Write([]byte(s.label))
	for i := range 256 {
		b := subnets.Addr().As4()
		b[2] = byte((int(h.Sum32()) + i) % 256)
		p := netip.PrefixFrom(netip.AddrFrom4(b), 24)
		if taken[p] {
			continue
		}
		resp, err := s.cli.NetworkCreate(ctx, s.name, network.CreateOptions{
			Driver: "overlay", Scope: "swarm", Attachable: true, Labels: s.labels(0),
			IPAM: &network.IPAM{Config: []network.IPAMConfig{{Subnet: p.String()}}},
		})
		if err != nil {
			return "", p, fmt.Errorf("create overlay network %s on %s: %w", s.name, p, err)
		}
		return resp.ID, p, nil
	}
	return "", netip.Prefix{}, fmt.Errorf("every /24 of %s is taken", subnets)
}

func (s *services) createConfig(ctx context.Context, name string, data []byte) (*swarm.ConfigReference, error) {
	// A config's content is immutable: a name per content lets a leftover be told apart.
	sum := sha256.Sum256(data)
	name = fmt.Sprintf("%s-%x", name, sum[:4])
	resp, err := s.cli.ConfigCreate(ctx, swarm.ConfigSpec{Annotations: swarm.Annotations{Name: name, Labels: s.labels(0)}, Data: data})
	if err != nil {
		return nil, fmt.Errorf("create config %s: %w", name, err)
	}
	return &swarm.ConfigReference{ConfigID: resp.ID, ConfigName: name}, nil
}

// createService makes server sv's service: one replica, never restarted by the swarm,
// pinned to its node, on the run's network under its service name (DNS round robin:
// the name resolves to the task itself), its data on a labelled volume, its config and
// the plan as files, CAP_NET_ADMIN to install its own links, and its client and admin
// ports published in host mode on the node.
func (s *services) createService(ctx context.Context, sv *server, ref, netID string, cfg replica.Config, plan *swarm.ConfigReference, base int) error {
	conf, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	own, err := s.createConfig(ctx, sv.service, conf)
	if err != nil {
		return err
	}
	file := func(ref *swarm.ConfigReference, name string) *swarm.ConfigReference {
		r := *ref
		r.File = &swarm.ConfigReferenceFileTarget{Name: image.ConfigDir + "/" + name, UID: "0", GID: "0", Mode: 0o444}
		return &r
	}
	one := uint64(1)
	labels := s.labels(sv.ID)
	spec := swarm.ServiceSpec{
		Annotations: swarm.Annotations{Name: sv.service, Labels: labels},
		TaskTemplate: swarm.TaskSpec{
			ContainerSpec: &swarm.ContainerSpec{
				Image:         ref,
				Args:          []string{"--config", image.ConfigDir + "/poled.json"},
				Hostname:      "p" + strconv.Itoa(sv.ID),
				Labels:        labels,
				Mounts:        []mount.Mount{{Type: mount.TypeVolume, Source: sv.service, Target: image.DataDir, VolumeOptions: &mount.VolumeOptions{Labels: labels}}},
				Configs:       []*swarm.ConfigReference{file(own, "poled.json"), file(plan, "plan.json")},
				CapabilityAdd: []string{"CAP_NET_ADMIN"},
				StopSignal:    "SIGKILL", // removal at the end needs no grace
			},
			RestartPolicy: &swarm.RestartPolicy{Condition: swarm.RestartPolicyConditionNone},
			Placement:     &swarm.Placement{Constraints: []string{"node.id==" + sv.node}},
			Networks:      []swarm.NetworkAttachmentConfig{{Target: netID}},
			LogDriver:     &swarm.Driver{Name: "json-file"}, // readable by ServiceLogs whatever the nodes' default
		},
		Mode: swarm.ServiceMode{Replicated: &swarm.ReplicatedService{Replicas: &one}},
		EndpointSpec: &swarm.EndpointSpec{Mode: swarm.ResolutionModeDNSRR, Ports: []swarm.PortConfig{
			{Protocol: swarm.PortConfigProtocolTCP, TargetPort: cluster.ClientPort, PublishedPort: uint32(base + sv.ID), PublishMode: swarm.PortConfigPublishModeHost},
			{Protocol: swarm.PortConfigProtocolTCP, TargetPort: cluster.AdminPort, PublishedPort: uint32(base + 100 + sv.ID), PublishMode: swarm.PortConfigPublishModeHost},
		}},
	}
	if _, err := s.cli.ServiceCreate(ctx, spec, swarm.ServiceCreateOptions{}); err != nil {
		return fmt.Errorf("create service %s: %w", sv.service, err)
	}
	return nil
}

// task is the service's task that should run (the newest), if any.
func (s *services) task(ctx context.Context, sv *server) (*swarm.Task, error) {
	ts, err := s.cli.TaskList(ctx, swarm.TaskListOptions{Filters: filters.NewArgs(filters.Arg("service", sv.service))})
	if err != nil {
		return nil, fmt.Errorf("tasks of %s: %w", sv.service, err)
	}
	if len(ts) == 0 {
		return nil, nil
	}
	newest := slices.MaxFunc(ts, func(a, b swarm.Task) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return &newest, nil
}

// waitRunning waits until sv's newest task (other than the task prev) runs and its
// ports answer, and fails at once, with the task's error and its last log lines, if
// the task ends.
func (s *services) waitRunning(ctx context.Context, sv *server, prev string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var dialer net.Dialer
	state := "no task"
	retries := 2
	for {
		t, err := s.task(ctx, sv)
		if err != nil {
			return err
		}
		if t != nil && t.ID != prev {
			state = string(t.Status.State)
			switch t.Status.State {
			case swarm.TaskStateFailed, swarm.TaskStateRejected, swarm.TaskStateShutdown, swarm.TaskStateComplete, swarm.TaskStateOrphaned:
				if retries > 0 && t.Status.State == swarm.TaskStateFailed && strings.Contains(t.Status.Err, engineRemountRace) {
					// The engine never started poled: a new task is what swarm's own
					// restart policy would have made.
					retries--
					s.log.Warn("the engine failed to start the container (moby/moby#48783): starting a new task", "server", sv.ID, "task", t.ID, "err", t.Status.Err)
					if err := s.forceNewTask(ctx, sv); err != nil {
						return fmt.Errorf("p%d: %w", sv.ID, err)
					}
					prev = t.ID
					continue
				}
				return fmt.Errorf("p%d: task %s on node %s %s: %s %s\n%s", sv.ID, t.ID[:12], sv.Node, t.Status.State,
					t.Status.Message, t.Status.Err, s.logTail(ctx, sv, 20))
			case swarm.TaskStateRunning:
				ready := true
				for _, addr := range []string{sv.Client, sv.Admin} {
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
					s.mu.Lock()
					sv.alive, sv.addr = true, taskAddr(t)
					s.mu.Unlock()
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("p%d does not run and listen on %s and %s (task: %s): %w", sv.ID, sv.Client, sv.Admin, state, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// taskAddr is a task's address on the run's network (its only attachment).
func taskAddr(t *swarm.Task) string {
	for _, na := range t.NetworksAttachments {
		if na.Network.Spec.Name == "ingress" {
			continue
		}
		for _, a := range na.Addresses {
			if p, err := netip.ParsePrefix(a); err == nil {
				return p.Addr().String()
			}
		}
	}
	return ""
}

// waitLinks waits until every live server says how it emulates its links and, where
// it installs them in the kernel, filters on every live peer's current address, then
// records each server's mode. A restarted peer has a new address: until its peers see
// it, their packets to it would not be delayed.
func (s *services) waitLinks(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, linksTimeout)
	defer cancel()
	for {
		s.mu.Lock()
		live := map[int]string{}
		var servers []*server
		for _, sv := range s.servers {
			if sv.alive {
				live[sv.ID] = sv.addr
				servers = append(servers, sv)
			}
		}
		s.mu.Unlock()
		var waiting []string
		modes := map[string]bool{}
		for _, sv := range servers {
			st, err := cluster.NodeStatus(ctx, sv.Server)
			if err != nil {
				waiting = append(waiting, fmt.Sprintf("p%d: %v", sv.ID, err))
				continue
			}
			l := st.Links
			for id, addr := range live {
				if l.Mode == replica.LinksKernel && id != sv.ID && l.Peers[id] != addr {
					waiting = append(waiting, fmt.Sprintf("p%d filters p%d at %q, not %s (%s)", sv.ID, id, l.Peers[id], addr, l.Error))
				}
			}
			s.mu.Lock()
			sv.Links = l.Mode
			s.mu.Unlock()
			modes[l.Mode] = true
			if l.Reason != "" {
				s.log.Debug("links", "server", sv.ID, "mode", l.Mode, "reason", l.Reason)
			}
		}
		if len(waiting) == 0 {
			s.mu.Lock()
			if s.links == "" { // "kernel+user-space": nodes whose kernels differ
				s.links = strings.Join(slices.Sorted(maps.Keys(modes)), "+")
			}
			s.mu.Unlock()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("links not in place: %s: %w", strings.Join(waiting, "; "), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// measureClients times TCP connects from the harness to each server's client port:
// the hop a client's request takes beyond the model's (clients beside their servers),
// recorded per server.
func (s *services) measureClients(ctx context.Context) {
	for _, sv := range s.servers {
		var rtts []time.Duration
		for range clientRTTProbe {
			t0 := time.Now()
			c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", sv.Client)
			if err != nil {
				continue
			}
			rtts = append(rtts, time.Since(t0))
			c.Close()
		}
		if len(rtts) == 0 {
			continue
		}
		slices.Sort(rtts)
		ms := float64(rtts[len(rtts)/2].Microseconds()) / 1000
		s.mu.Lock()
		sv.ClientRTTms = ms
		s.mu.Unlock()
		s.log.Info("client hop", "server", sv.ID, "node", sv.Node, "client", sv.Client, "rtt_ms", ms)
	}
}

func (s *services) logTail(ctx context.Context, sv *server, lines int) string {
	return engine.LogText(s.cli.ServiceLogs(ctx, sv.service, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(lines)}))
}

func (s *services) server(id int) (*server, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("swarm cluster is closed")
	}
	return engine.ByID(s.servers, id)
}

func (s *services) Servers() []cluster.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return engine.ServerViews(s.servers, func(sv *server) cluster.Server { return sv.Server })
}

// Kill sends SIGKILL to the server's task container through its node's engine, the
// instant way (the swarm's own stop goes through the orchestrator and the agent), and
// waits until it has stopped. The swarm does not restart it: restart policy none.
func (s *services) Kill(ctx context.Context, id int) error {
	sv, err := s.server(id)
	if err != nil {
		return err
	}
	t, err := s.task(ctx, sv)
	if err != nil {
		return fmt.Errorf("kill p%d: %w", id, err)
	}
	if t == nil || t.Status.ContainerStatus == nil || t.Status.ContainerStatus.ContainerID == "" {
		return fmt.Errorf("kill p%d: no container (task %v)", id, t)
	}
	if err := engine.KillContainer(ctx, s.engines[t.NodeID], t.Status.ContainerStatus.ContainerID, id); err != nil {
		return err
	}
	s.mu.Lock()
	sv.alive = false
	s.mu.Unlock()
	s.log.Info("killed", "server", id, "node", sv.Node)
	return nil
}

// Restart starts the killed server again: a forced update of its service makes a new
// task on the same node with the same volume. The task gets a new address on the
// network; Restart returns once its peers filter on it (kernel links).
func (s *services) Restart(ctx context.Context, id int) error {
	sv, err := s.server(id)
	if err != nil {
		return err
	}
	if s.Alive(id) {
		return fmt.Errorf("restart p%d: it is running", id)
	}
	var prev string
	if t, err := s.task(ctx, sv); err != nil {
		return fmt.Errorf("restart p%d: %w", id, err)
	} else if t != nil {
		prev = t.ID // the killed one: until the new task shows, it is the newest
	}
	if err := s.forceNewTask(ctx, sv); err != nil {
		return fmt.Errorf("restart p%d: %w", id, err)
	}
	if err := s.waitRunning(ctx, sv, prev); err != nil {
		return fmt.Errorf("restart p%d: %w", id, err)
	}
	if err := s.waitLinks(ctx); err != nil {
		return fmt.Errorf("restart p%d: %w", id, err)
	}
	s.log.Info("restarted", "server", id, "node", sv.Node, "addr", sv.addr)
	return nil
}

// engineRemountRace is the Docker engine's error when it fails, now and then, to
// remount a container's configs read-only before starting it (moby/moby#48783).
const engineRemountRace = "unable to remount dir as readonly"

// forceNewTask has swarm replace sv's task (docker service update --force).
func (s *services) forceNewTask(ctx context.Context, sv *server) error {
	svc, _, err := s.cli.ServiceInspectWithRaw(ctx, sv.service, swarm.ServiceInspectOptions{})
	if err != nil {
		return err
	}
	spec := svc.Spec
	spec.TaskTemplate.ForceUpdate++
	if _, err := s.cli.ServiceUpdate(ctx, svc.ID, svc.Version, spec, swarm.ServiceUpdateOptions{}); err != nil {
		return fmt.Errorf("update service %s: %w", sv.service, err)
	}
	return nil
}

// Alive says whether the server runs as far as this cluster knows.
func (s *services) Alive(id int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return id >= 1 && id <= len(s.servers) && s.servers[id-1].alive
}

// Links says how the replicas emulate their links, as they reported it: "kernel",
// "user-space", or both joined by "+" when the nodes' kernels differ.
func (s *services) Links() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.links
}

// CollectLogs writes each service's output (every task of it, through the manager)
// to dir/p<ID>.log.
func (s *services) CollectLogs(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	for _, sv := range s.Servers() {
		if err := s.collectLog(ctx, s.service(sv.ID), filepath.Join(dir, "p"+strconv.Itoa(sv.ID)+".log")); err != nil {
			errs = append(errs, fmt.Errorf("log of p%d: %w", sv.ID, err))
		}
	}
	return errors.Join(errs...)
}

func (s *services) collectLog(ctx context.Context, service, path string) error {
	return engine.WriteLog(path)(s.cli.ServiceLogs(ctx, service, container.LogsOptions{ShowStdout: true, ShowStderr: true}))
}

// Close removes every service, container, volume, config and network of the run
// (found by label, so also what a cancelled start left half made), on the manager and
// on every node's engine. With a context that is already done it still tries.
func (s *services) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		defer cancel()
	}
	removed, err := removeRun(ctx, s.cli, s.engines, s.label)
	s.log.Info("cluster removed", "objects", len(removed))
	s.engines.close(s.cli)
	return errors.Join(err, s.cli.Close())
}
