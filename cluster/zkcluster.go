package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/freeport"
	"github.com/polebench/polebench/netem"
)

// ZKCluster is a cluster of Apache ZooKeeper servers, one JVM each: on loopback (the
// local backend) or one per network namespace (netns). It gives the harness what a
// poled cluster does, and reads each server's timeline off its log (Timeline), and
// the RTTs its user-space links measured (MeasuredRTTs), since ZooKeeper has no
// admin endpoint for either.
type ZKCluster struct {
	*procSet
	e       *zkEnsemble
	servers []Server
	links   string
	// teardown removes what the backend made around the JVMs (the network).
	teardown   func() error
	removeRoot bool
	warm       time.Duration // Options.WarmUp

	closeOnce sync.Once
	closeErr  error
}

// newZKCluster is a cluster of e's servers, each JVM started by startIn (on loopback,
// or in its namespace).
func newZKCluster(e *zkEnsemble, links string, removeRoot bool, warm time.Duration, startIn func(id int, cmd *exec.Cmd) (*nsProc, error), teardown func() error) *ZKCluster {
	z := &ZKCluster{e: e, links: links, removeRoot: removeRoot, warm: warm, teardown: teardown}
	z.procSet = newProcSet("zookeeper", e.log, e.logFile, func(id, n int) (*nsProc, error) {
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

var _ Cluster = (*ZKCluster)(nil)

const zkStartTimeout = 60 * time.Second // a JVM on a busy 2-core machine takes seconds

// NewZooKeeperLocal starts opts.Topology's servers as ZooKeeper JVMs on loopback, with
// the link plan applied by user-space proxies on loopback too.
func NewZooKeeperLocal(ctx context.Context, opts Options) (_ *ZKCluster, err error) {
	if err := ZooKeeperAvailable(); err != nil {
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
	addrs := map[int]zkAddr{}
	for i, id := range ids {
		addrs[id] = zkAddr{Host: "127.0.0.1", Client: ports[3*i], Quorum: ports[3*i+1], Election: ports[3*i+2]}
	}
	z := newZKCluster(newZKEnsemble(opts, label, root, addrs), LinksNone, removeRoot, opts.WarmUp,
		func(_ int, cmd *exec.Cmd) (*nsProc, error) { return startLocal(cmd) }, func() error { return nil })
	defer func() {
		if err != nil {
			z.Close(context.WithoutCancel(ctx))
		}
	}()
	if len(opts.Plan.Links) > 0 {
		if z.e.links, err = newZKLinks(z.e, opts.Plan, "127.0.0.1"); err != nil {
			return nil, err
		}
		z.links = LinksUserSpace
	}
	return z, z.start(ctx)
}

// start writes the configurations and starts the servers, the highest id first.
func (z *ZKCluster) start(ctx context.Context) error {
	t0 := time.Now()
	for _, id := range z.e.ids() {
		a := z.e.addrs[id]
		z.servers = append(z.servers, Server{ID: id, DC: z.e.topo.DC(id), Client: a.client()})
	}
	if err := z.e.writeConfigs(); err != nil {
		return err
	}
	z.e.watcher.start()
	order := z.e.startOrder()
	for i, id := range order {
		if err := z.spawn(id); err != nil {
			return err
		}
		if i == 0 {
			// The highest id takes part in the first election from its start.
			a := z.e.addrs[id]
			if err := z.waitListening(ctx, id, zkStartTimeout, net.JoinHostPort(a.Host, strconv.Itoa(a.Election))); err != nil {
				return err
			}
		}
	}
	for _, id := range order {
		if err := z.waitListening(ctx, id, zkStartTimeout, z.e.addrs[id].client()); err != nil {
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
func (z *ZKCluster) Servers() []Server { return append([]Server(nil), z.servers...) }

// Links says how the plan is applied: "kernel", "user-space" (the proxies) or "none".
func (z *ZKCluster) Links() string { return z.links }

// Restart starts a killed server's JVM again on its data directory and waits until it
// accepts client connections.
func (z *ZKCluster) Restart(ctx context.Context, id int) error {
	if _, ok := z.e.addrs[id]; !ok {
		return fmt.Errorf("zookeeper: no server p%d", id)
	}
	if err := z.spawn(id); err != nil {
		return err
	}
	return z.waitListening(ctx, id, zkStartTimeout, z.e.addrs[id].client())
}

// Timeline is server id's timeline so far, read off its log (see zkevents.go).
func (z *ZKCluster) Timeline(id int) []event.Event { return z.e.watcher.timeline(id) }

// MeasuredRTTs are the RTTs between servers that the user-space links measured (nil
// with kernel links or none).
func (z *ZKCluster) MeasuredRTTs() map[string]any {
	if z.e.links == nil {
		return nil
	}
	return z.e.links.rtts(z.e.ids())
}

// CollectLogs copies each server's log into dir as p<ID>.log.
func (z *ZKCluster) CollectLogs(ctx context.Context, dir string) error {
	return z.collectLogs(ctx, z.e.ids(), dir)
}

// Close stops every JVM (SIGTERM, SIGKILL after a grace period), the links, the
// watcher, and removes the network and a temporary data root. It runs to the end
// whatever ctx says; a second call returns the first one's result.
func (z *ZKCluster) Close(ctx context.Context) error {
	z.closeOnce.Do(func() {
		z.stopAll(netnsGrace)
		z.e.close()
		errs := []error{z.teardown()}
		if z.removeRoot {
			errs = append(errs, os.RemoveAll(z.e.root))
		}
		z.closeErr = errors.Join(errs...)
	})
	return z.closeErr
}

// applyKernelLinks applies the plan in every namespace (the netns backend with a
// kernel that has sch_netem).
func applyKernelLinks(ctx context.Context, n *netnsNet, ids []int, plan netem.Plan) error {
	for _, id := range ids {
		t := netem.Target{NS: n.ns[id], Dev: netnsDev, Self: id, Addrs: n.addrs}
		if err := netem.Apply(ctx, t, plan); err != nil {
			return fmt.Errorf("p%d: %w", id, err)
		}
	}
	return nil
}
