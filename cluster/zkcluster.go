package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
	e       *zkEnsemble
	servers []Server
	links   string
	spawnIn func(id int, cmd *exec.Cmd) (*nsProc, error)
	// teardown removes what the backend made around the JVMs (the network).
	teardown   func() error
	removeRoot bool
	warm       time.Duration // Options.WarmUp

	mu     sync.Mutex
	procs  map[int]*nsProc
	starts map[int]int
	closed bool

	closeOnce sync.Once
	closeErr  error
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
	z := &ZKCluster{e: newZKEnsemble(opts, label, root, addrs), links: LinksNone, removeRoot: removeRoot, warm: opts.WarmUp,
		procs: map[int]*nsProc{}, starts: map[int]int{},
		spawnIn:  func(_ int, cmd *exec.Cmd) (*nsProc, error) { return startLocal(cmd) },
		teardown: func() error { return nil }}
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
			if err := z.waitPort(ctx, id, net.JoinHostPort(a.Host, strconv.Itoa(a.Election))); err != nil {
				return err
			}
		}
	}
	for _, id := range order {
		if err := z.waitPort(ctx, id, z.e.addrs[id].client()); err != nil {
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

func (z *ZKCluster) spawn(id int) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.closed {
		return errors.New("zookeeper: cluster closed")
	}
	if p := z.procs[id]; p != nil && p.alive() {
		return fmt.Errorf("zookeeper: p%d is running (pid %d)", id, p.pid())
	}
	z.starts[id]++
	lf, err := z.e.openLog(id, z.starts[id])
	if err != nil {
		return err
	}
	defer lf.Close() // the child has its own copy
	cmd := z.e.command(id)
	cmd.Stdout, cmd.Stderr = lf, lf
	p, err := z.spawnIn(id, cmd)
	if err != nil {
		return fmt.Errorf("zookeeper: start p%d: %w", id, err)
	}
	z.procs[id] = p
	z.e.log.Debug("zookeeper: started", "server", id, "pid", p.pid(), "start", z.starts[id])
	return nil
}

// waitPort waits until server id accepts connections on addr.
func (z *ZKCluster) waitPort(ctx context.Context, id int, addr string) error {
	z.mu.Lock()
	p := z.procs[id]
	z.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, zkStartTimeout)
	defer cancel()
	if err := waitListening(ctx, addr, func() bool { return !p.alive() }); err != nil {
		return fmt.Errorf("zookeeper: p%d does not listen on %s (%s): %w; its log ends:\n%s", id, addr, p.exitString(), err, z.logTail(id))
	}
	return nil
}

func (z *ZKCluster) logTail(id int) string {
	b, err := os.ReadFile(z.e.logFile(id))
	if err != nil {
		return err.Error()
	}
	return lastLines(string(b), 15)
}

// Servers lists the servers, ordered by id. ZooKeeper has no admin endpoint.
func (z *ZKCluster) Servers() []Server { return append([]Server(nil), z.servers...) }

// Links says how the plan is applied: "kernel", "user-space" (the proxies) or "none".
func (z *ZKCluster) Links() string { return z.links }

// Alive reports whether server id's JVM runs.
func (z *ZKCluster) Alive(id int) bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	p := z.procs[id]
	return p != nil && p.alive()
}

// Kill sends server id's JVM SIGKILL and waits until it is gone.
func (z *ZKCluster) Kill(ctx context.Context, id int) error {
	z.mu.Lock()
	p := z.procs[id]
	z.mu.Unlock()
	if p == nil || !p.alive() {
		return fmt.Errorf("zookeeper: p%d is not running", id)
	}
	p.kill()
	if err := p.wait(ctx); err != nil {
		return fmt.Errorf("zookeeper: kill p%d: %w", id, err)
	}
	z.e.log.Info("zookeeper: killed", "server", id, "pid", p.pid())
	return nil
}

// Restart starts a killed server's JVM again on its data directory and waits until it
// accepts client connections.
func (z *ZKCluster) Restart(ctx context.Context, id int) error {
	if _, ok := z.e.addrs[id]; !ok {
		return fmt.Errorf("zookeeper: no server p%d", id)
	}
	if err := z.spawn(id); err != nil {
		return err
	}
	return z.waitPort(ctx, id, z.e.addrs[id].client())
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
func (z *ZKCluster) CollectLogs(_ context.Context, dir string) error {
	var errs []error
	for _, id := range z.e.ids() {
		name := "p" + strconv.Itoa(id) + ".log"
		if err := copyFile(z.e.logFile(id), filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close stops every JVM (SIGTERM, SIGKILL after a grace period), the links, the
// watcher, and removes the network and a temporary data root. It runs to the end
// whatever ctx says; a second call returns the first one's result.
func (z *ZKCluster) Close(ctx context.Context) error {
	z.closeOnce.Do(func() {
		z.mu.Lock()
		z.closed = true
		procs := z.procs
		z.mu.Unlock()
		var wg sync.WaitGroup
		for _, p := range procs {
			wg.Go(func() { p.stop(netnsGrace) })
		}
		wg.Wait()
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
