// Package local is the local backend, the embedded default: every server a poled node
// inside this process, on loopback, with the link plan applied in user space by each
// node's peer transport. It needs no root, no Docker and no kernel netem. It also runs
// poled as processes on loopback without links (Processes), what a benchmark compares
// with ZooKeeper's JVMs.
package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/internal/procs"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/replica"
)

func init() {
	cluster.Register(cluster.Backend{Name: backend.Local, Rank: 10, New: func(ctx context.Context, opts cluster.Options) (cluster.Cluster, error) {
		c, err := New(ctx, opts)
		if err != nil {
			return nil, err // not a nil *Cluster in a non-nil interface
		}
		return c, nil
	},
		// Pause is the node's frozen loop; the links are each node's delay lines.
		Carries: backend.Carries{Faults: nemesis.Kinds(), Links: backend.Links{UserSpace: true, Schedules: true, RateLoss: true}}})
}

// Cluster runs every server as a poled node inside this process, on loopback, with the
// link plan applied in user space by each node's peer transport.
type Cluster struct {
	opts    cluster.Options
	log     *slog.Logger
	root    string
	ownRoot bool // root was made here and is removed on Close
	cfgs    map[int]replica.Config

	mu        sync.Mutex
	nodes     map[int]*replica.Node
	linkStart int64 // when the links' schedules started (netem.Now's clock), 0 before
	logs      map[int]*os.File

	releaseProcs func()
}

// New starts the cluster and returns once every node listens.
func New(ctx context.Context, opts cluster.Options) (_ *Cluster, err error) {
	if opts.Flavor != "" && opts.Flavor != cluster.Poled {
		return nil, fmt.Errorf("the local backend runs only the %s flavor, not %q", cluster.Poled, opts.Flavor)
	}
	if opts.Topology == nil {
		return nil, errors.New("local backend: no topology")
	}
	l := &Cluster{opts: opts, log: opts.Logger, root: opts.DataRoot, cfgs: map[int]replica.Config{},
		nodes: map[int]*replica.Node{}, logs: map[int]*os.File{}}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.root == "" {
		if l.root, err = os.MkdirTemp("", "polebench-local-"); err != nil {
			return nil, err
		}
		l.ownRoot = true
	}
	if err := os.MkdirAll(l.root, 0o755); err != nil {
		return nil, err
	}
	l.releaseProcs = tuneProcs(len(opts.Topology.Servers())) // Close gives them back
	defer func() {
		if err != nil {
			l.Close(context.WithoutCancel(ctx))
		}
	}()
	planPath := ""
	if len(opts.Plan.Links) > 0 {
		planPath = filepath.Join(l.root, "links.json")
		if err := netem.WritePlan(planPath, opts.Plan); err != nil {
			return nil, err
		}
	}
	// Reserve every port first: each node's config lists all of them.
	lns := map[int]replica.Listeners{}
	var peers []replica.Peer
	for _, id := range opts.Topology.Servers() {
		var ls [4]net.Listener
		for i := range ls {
			if ls[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
				return nil, fmt.Errorf("reserve a port: %w", err)
			}
		}
		port := func(i int) int { return ls[i].Addr().(*net.TCPAddr).Port }
		lns[id] = replica.Listeners{Client: ls[0], Peer: ls[1], Election: ls[2], Admin: ls[3]}
		peers = append(peers, replica.Peer{ID: id, Host: "127.0.0.1", ClientPort: port(0), PeerPort: port(1), ElectionPort: port(2), AdminPort: port(3)})
	}
	for _, id := range opts.Topology.Servers() {
		cfg := opts.ReplicaConfig(id, peers)
		cfg.DataDir, cfg.LinkPlan = filepath.Join(l.root, fmt.Sprintf("p%d", id)), planPath
		l.cfgs[id] = cfg
	}
	for _, id := range opts.Topology.Servers() {
		if err := l.start(ctx, id, lns[id]); err != nil {
			return nil, err
		}
	}
	return l, nil
}

var _ cluster.LinkSchedules = (*Cluster)(nil)

func (l *Cluster) start(ctx context.Context, id int, lns replica.Listeners) error {
	cfg := l.cfgs[id]
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(l.root, fmt.Sprintf("p%d.log", id)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// Each node lives as long as the cluster, not as long as the caller's ctx. Its
	// goroutines carry its id as a profiler label: a profile of the process tells the
	// replicas apart.
	var n *replica.Node
	pprof.Do(context.WithoutCancel(ctx), pprof.Labels("server", fmt.Sprintf("p%d", id)), func(ctx context.Context) {
		n, err = replica.Start(ctx, cfg, lns, log)
	})
	if err != nil {
		f.Close()
		return fmt.Errorf("start p%d: %w", id, err)
	}
	l.mu.Lock()
	l.nodes[id], l.logs[id] = n, f
	if l.linkStart != 0 {
		n.SetLinkStart(l.linkStart) // a restart within a run keeps the run's schedule
	}
	l.mu.Unlock()
	return nil
}

// PlayLinkSchedules has every node's user-space links count the plan's schedules from
// start (each line switches by itself at the instants) and reports each instant as
// it comes.
func (l *Cluster) PlayLinkSchedules(ctx context.Context, start time.Time, report func(netem.Instant)) error {
	l.mu.Lock()
	l.linkStart = netem.At(start)
	for _, n := range l.nodes {
		n.SetLinkStart(l.linkStart)
	}
	l.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(l.opts.Topology.Servers()))
	for i, id := range l.opts.Topology.Servers() {
		wg.Go(func() {
			errs[i] = netem.PlaySchedule(ctx, id, l.opts.Plan, start, func(time.Duration) error { return nil }, report)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Servers lists the servers and their addresses.
func (l *Cluster) Servers() []cluster.Server {
	var out []cluster.Server
	for _, id := range l.opts.Topology.Servers() {
		self := l.cfgs[id].Self()
		out = append(out, cluster.Server{ID: id, DC: l.opts.Topology.DC(id), Client: self.ClientAddr(), Admin: self.AdminAddr()})
	}
	return out
}

// Kill stops server id at once.
func (l *Cluster) Kill(_ context.Context, id int) error {
	l.mu.Lock()
	n, f := l.nodes[id], l.logs[id]
	delete(l.nodes, id)
	delete(l.logs, id)
	l.mu.Unlock()
	if n == nil {
		return fmt.Errorf("p%d is not running", id)
	}
	n.Stop()
	f.Close()
	return nil
}

// Restart starts a killed server again from its data directory, on the same ports.
func (l *Cluster) Restart(ctx context.Context, id int) error {
	if l.Alive(id) {
		return fmt.Errorf("p%d is running", id)
	}
	if _, ok := l.cfgs[id]; !ok {
		return fmt.Errorf("no server p%d", id)
	}
	return l.start(ctx, id, replica.Listeners{})
}

// Alive reports whether server id runs.
func (l *Cluster) Alive(id int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nodes[id] != nil
}

// Node returns the running node id, for in-process inspection.
func (l *Cluster) Node(id int) *replica.Node {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nodes[id]
}

// Pause freezes server id's loop (replica.Node.Pause): the servers share this
// process, so there is no process to stop.
func (l *Cluster) Pause(_ context.Context, id int) error {
	n := l.Node(id)
	if n == nil {
		return fmt.Errorf("p%d is not running", id)
	}
	if !n.Pause() {
		return fmt.Errorf("p%d is paused already", id)
	}
	return nil
}

// Resume lets a paused server's loop run again.
func (l *Cluster) Resume(_ context.Context, id int) error {
	n := l.Node(id)
	if n == nil {
		return fmt.Errorf("p%d is not running", id)
	}
	if !n.Resume() {
		return fmt.Errorf("p%d is not paused", id)
	}
	return nil
}

// DataDir is server id's data directory.
func (l *Cluster) DataDir(id int) string { return l.cfgs[id].DataDir }

// Links: the local backend always emulates links in user space.
func (l *Cluster) Links() string { return "user-space" }

// CollectLogs copies each server's log into dir.
func (l *Cluster) CollectLogs(_ context.Context, dir string) error {
	var errs []error
	for _, id := range l.opts.Topology.Servers() {
		name := fmt.Sprintf("p%d.log", id)
		if err := procs.CopyFile(filepath.Join(l.root, name), filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close stops every node and removes the data it made.
func (l *Cluster) Close(context.Context) error {
	l.mu.Lock()
	nodes, logs := l.nodes, l.logs
	l.nodes, l.logs = map[int]*replica.Node{}, map[int]*os.File{}
	l.mu.Unlock()
	var wg sync.WaitGroup
	for id, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Stop()
			logs[id].Close()
		}()
	}
	wg.Wait()
	l.releaseProcs()
	if l.ownRoot {
		return os.RemoveAll(l.root)
	}
	return nil
}
