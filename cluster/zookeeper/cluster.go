package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/internal/procs"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/freeport"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/score"
)

func init() {
	withWarmUp := func(start func(context.Context, cluster.Options) (*Cluster, error)) cluster.Constructor {
		return func(ctx context.Context, opts cluster.Options) (cluster.Cluster, error) {
			if opts.WarmUp == 0 {
				opts.WarmUp = WarmUp
			}
			z, err := start(ctx, opts)
			if err != nil {
				return nil, err // not a nil *Cluster in a non-nil interface
			}
			return z, nil
		}
	}
	cluster.RegisterFlavor(cluster.Flavor{
		Name: backend.FlavorZooKeeper,
		On:   map[string]cluster.Constructor{backend.Local: withWarmUp(NewLocal), backend.Netns: withWarmUp(NewNetns)},
		// Its servers have no admin port (cuts, disk, status): the harness kills,
		// restarts and pauses their JVMs, and cuts the links their peer traffic
		// crosses (CutLinks), which keep the plan they start with.
		Carries: backend.Carries{
			Faults: []nemesis.Kind{nemesis.Crash, nemesis.Kill, nemesis.Restart, nemesis.Pause, nemesis.Resume,
				nemesis.Partition, nemesis.Isolate, nemesis.IsolateLeader, nemesis.OneWay, nemesis.Heal},
			Why: map[string]string{
				"oracle":         "ZooKeeper's own election",
				"initial_leader": "ZooKeeper's first election picks the highest id among servers in sync",
				"preload_mb":     "preloading state is a poled feature; ZooKeeper starts empty",
				"outdate":        "an outdated server needs its broadcast channel cut by the replica itself, which ZooKeeper cannot do",
				"faults":         "disk faults are poled's, which ZooKeeper cannot do",
				"schedules":      "its links are set once, when its servers start",
				"placement":      "ZooKeeper has no leader transfer: no request hands leadership to a chosen server, its leader is whoever wins its own election, and the only way to move it is to stop the leader, a crash rather than a placement",
			},
		},
		Oracles:      []string{score.History},
		HighestFirst: true,
		Down:         func(_ context.Context, label string) ([]string, error) { return Down(label) },
		Check:        func(context.Context) error { return Available() },
	})
}

// Cluster is a cluster of Apache ZooKeeper servers, one JVM each: on loopback (the
// local backend) or one per network namespace (netns). It gives the harness what a
// poled cluster does, and reads each server's timeline off its log (Timeline), and
// the RTTs its user-space links measured (MeasuredRTTs), since ZooKeeper has no
// admin endpoint for either. Through cluster.New it warms up for WarmUp unless
// Options.WarmUp says otherwise.
type Cluster struct {
	procs   *procs.Set
	e       *ensemble
	servers []cluster.Server
	links   string
	// cuts is what CutLinks cuts: the user-space proxies or the kernel's netem
	// (bridge.Kernel); nil without a plan.
	cuts interface {
		Cut(ctx context.Context, pairs [][2]int, both, cut bool) error
	}
	// teardown removes what the backend made around the JVMs (the network).
	teardown   func() error
	removeRoot bool
	warm       time.Duration // cluster.Options.WarmUp

	closeOnce sync.Once
	closeErr  error
}

// newCluster is a cluster of e's servers, each JVM started by startIn (on loopback,
// or in its namespace).
func newCluster(e *ensemble, links string, removeRoot bool, warm time.Duration, startIn func(id int, cmd *exec.Cmd) (*procs.Proc, error), teardown func() error) *Cluster {
	z := &Cluster{e: e, links: links, removeRoot: removeRoot, warm: warm, teardown: teardown}
	z.procs = procs.NewSet("zookeeper", e.log, e.logFile, func(id, n int) (*procs.Proc, error) {
		lf, err := e.openLog(id, n)
		if err != nil {
			return nil, err
		}
		defer lf.Close() // the child has its own copy
		cmd := e.command(id)
		cmd.Stdout, cmd.Stderr = lf, lf
		return startIn(id, cmd)
	})
	return z
}

var (
	_ cluster.Cluster    = (*Cluster)(nil)
	_ cluster.Pids       = (*Cluster)(nil)
	_ cluster.Timelines  = (*Cluster)(nil)
	_ cluster.RTTMeter   = (*Cluster)(nil)
	_ cluster.LinkCutter = (*Cluster)(nil)
	_ cluster.Applier    = (*Cluster)(nil)
)

const startTimeout = 60 * time.Second // a JVM on a busy small machine takes seconds

// NewLocal starts opts.Topology's servers as ZooKeeper JVMs on loopback, with
// the link plan applied by user-space proxies on loopback too.
func NewLocal(ctx context.Context, opts cluster.Options) (_ *Cluster, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if opts.Topology == nil || opts.Topology.N() == 0 {
		return nil, errors.New("zookeeper: no topology")
	}
	ids := opts.Topology.Servers()
	ports, err := freeport.Loopback(3 * len(ids))
	if err != nil {
		return nil, err
	}
	// The root is made last before the cluster, whose Close removes a temporary one.
	root, removeRoot := opts.DataRoot, false
	if root == "" {
		if root, err = os.MkdirTemp("", "polebench-zk-"); err != nil {
			return nil, err
		}
		removeRoot = true
	} else if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	label := opts.Label
	if label == "" {
		label = fmt.Sprintf("t%x", time.Now().UnixNano()&0xffffffff)
	}
	addrs := map[int]hostPorts{}
	for i, id := range ids {
		addrs[id] = hostPorts{Host: "127.0.0.1", Client: ports[3*i], Quorum: ports[3*i+1], Election: ports[3*i+2]}
	}
	z := newCluster(newEnsemble(opts, label, root, addrs), cluster.LinksNone, removeRoot, opts.WarmUp,
		func(_ int, cmd *exec.Cmd) (*procs.Proc, error) { return procs.Start(cmd) }, func() error { return nil })
	defer func() {
		if err != nil {
			z.Close(context.WithoutCancel(ctx))
		}
	}()
	if len(opts.Plan.Links) > 0 {
		if z.e.links, err = newProxies(z.e, opts.Plan, "127.0.0.1"); err != nil {
			return nil, err
		}
		z.links, z.cuts = cluster.LinksUserSpace, &z.e.links.set
	}
	return z, z.start(ctx)
}

// start writes the configurations and starts the servers, the highest id first.
func (z *Cluster) start(ctx context.Context) error {
	t0 := time.Now()
	for _, id := range z.e.ids() {
		a := z.e.addrs[id]
		z.servers = append(z.servers, cluster.Server{ID: id, DC: z.e.topo.DC(id), Client: a.client()})
	}
	if err := z.e.writeConfigs(); err != nil {
		return err
	}
	z.e.watcher.Start()
	order := z.e.startOrder()
	for i, id := range order {
		if err := z.procs.Spawn(id); err != nil {
			return err
		}
		if i == 0 {
			// The highest id takes part in the first election from its start.
			a := z.e.addrs[id]
			if err := z.procs.WaitListening(ctx, id, startTimeout, net.JoinHostPort(a.Host, strconv.Itoa(a.Election))); err != nil {
				return err
			}
		}
	}
	for _, id := range order {
		if err := z.procs.WaitListening(ctx, id, startTimeout, z.e.addrs[id].client()); err != nil {
			return err
		}
	}
	z.e.log.Info("zookeeper cluster up", "label", z.e.label, "servers", len(order), "links", z.links,
		"data", z.e.root, "took", time.Since(t0).Round(time.Millisecond))
	if z.warm > 0 {
		return z.warmUp(ctx, z.warm)
	}
	return nil
}

// Servers lists the servers, ordered by id. ZooKeeper has no admin endpoint.
func (z *Cluster) Servers() []cluster.Server { return append([]cluster.Server(nil), z.servers...) }

// Pid is server id's JVM's process id, 0 if it is not running.
func (z *Cluster) Pid(id int) int { return z.procs.Pid(id) }

// Alive reports whether server id's JVM runs.
func (z *Cluster) Alive(id int) bool { return z.procs.Alive(id) }

// Kill sends server id's JVM SIGKILL and waits until it is gone.
func (z *Cluster) Kill(ctx context.Context, id int) error { return z.procs.Kill(ctx, id) }

// Links says how the plan is applied: "kernel", "user-space" (the proxies) or "none".
func (z *Cluster) Links() string { return z.links }

// CutLinks cuts or restores the pairs' links on what carries the servers' peer
// traffic (ZooKeeper cannot cut itself): the proxies' or the kernel's.
func (z *Cluster) CutLinks(ctx context.Context, pairs [][2]int, oneWay, cut bool) error {
	if z.cuts == nil {
		return errors.New("zookeeper: no links to cut: the plan is empty, and the servers reach each other directly")
	}
	return z.cuts.Cut(ctx, pairs, !oneWay, cut)
}

// Restart starts a killed server's JVM again on its data directory and waits until it
// accepts client connections.
func (z *Cluster) Restart(ctx context.Context, id int) error {
	if _, ok := z.e.addrs[id]; !ok {
		return fmt.Errorf("zookeeper: no server p%d", id)
	}
	if err := z.procs.Spawn(id); err != nil {
		return err
	}
	return z.procs.WaitListening(ctx, id, startTimeout, z.e.addrs[id].client())
}

// Applied says whether server id serves (srvr answers with a Mode: it has a leader
// and is in sync) and its data tree's last zxid (srvr's Zxid line, equal on two
// servers that applied the same): what a check's convergence compares, since
// ZooKeeper reports no poled status.
func (z *Cluster) Applied(ctx context.Context, id int) (bool, string, error) {
	a, ok := z.e.addrs[id]
	if !ok {
		return false, "", fmt.Errorf("zookeeper: no server p%d", id)
	}
	out, err := fourLetter(ctx, a.client(), "srvr")
	if err != nil {
		return false, "", fmt.Errorf("p%d: srvr: %w", id, err)
	}
	m := zxidRe.FindStringSubmatch(out)
	if m == nil {
		return false, "", fmt.Errorf("p%d: srvr answered without a Zxid line: %.120q", id, out)
	}
	return strings.Contains(out, "Mode: "), "0x" + m[1], nil
}

// Timeline is server id's timeline so far, read off its log (see events.go).
func (z *Cluster) Timeline(id int) []event.Event { return z.e.watcher.Timeline(id, nil) }

// MeasuredRTTs are the RTTs between servers that the user-space links measured (nil
// with kernel links or none).
func (z *Cluster) MeasuredRTTs() map[string]any {
	if z.e.links == nil {
		return nil
	}
	return z.e.links.set.RTTs(z.e.ids())
}

// CollectLogs copies each server's log into dir as p<ID>.log.
func (z *Cluster) CollectLogs(ctx context.Context, dir string) error {
	return z.procs.CollectLogs(ctx, z.e.ids(), dir)
}

// Close stops every JVM (SIGTERM, SIGKILL after a grace period), the links, the
// watcher, and removes the network and a temporary data root. It runs to the end
// whatever ctx says; a second call returns the first one's result.
func (z *Cluster) Close(ctx context.Context) error {
	z.closeOnce.Do(func() {
		z.procs.StopAll(procs.Grace)
		z.e.close()
		errs := []error{z.teardown()}
		if z.removeRoot {
			errs = append(errs, os.RemoveAll(z.e.root))
		}
		z.closeErr = errors.Join(errs...)
	})
	return z.closeErr
}
