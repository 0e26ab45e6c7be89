package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/polebench/polebench/freeport"
	"github.com/polebench/polebench/replica"
)

// PoledProcs is a cluster of poled processes on loopback, each its own binary
// (cmd/poled, as the netns backend finds or builds it), without emulated links: what a
// benchmark compares with ZooKeeper's JVMs, process against process.
type PoledProcs struct {
	bin     string
	root    string
	ownRoot bool
	opts    Options
	cfgs    map[int]replica.Config
	servers []Server

	mu    sync.Mutex
	procs map[int]*nsProc
}

var _ Cluster = (*PoledProcs)(nil)

// NewPoledProcs starts opts.Topology's servers as poled processes on loopback and
// returns once each accepts client connections.
func NewPoledProcs(ctx context.Context, opts Options) (_ *PoledProcs, err error) {
	if opts.Topology == nil || opts.Topology.N() == 0 {
		return nil, errors.New("poled processes: no topology")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &PoledProcs{opts: opts, root: opts.DataRoot, cfgs: map[int]replica.Config{}, procs: map[int]*nsProc{}}
	if c.bin, err = netnsPoled(ctx, log); err != nil {
		return nil, err
	}
	if c.root == "" {
		if c.root, err = os.MkdirTemp("", "polebench-poled-"); err != nil {
			return nil, err
		}
		c.ownRoot = true
	}
	defer func() {
		if err != nil {
			c.Close(context.WithoutCancel(ctx))
		}
	}()
	ids := opts.Topology.Servers()
	ports, err := freeport.Loopback(4 * len(ids))
	if err != nil {
		return nil, err
	}
	var peers []replica.Peer
	for i, id := range ids {
		peers = append(peers, replica.Peer{ID: id, Host: "127.0.0.1", ClientPort: ports[4*i], PeerPort: ports[4*i+1],
			ElectionPort: ports[4*i+2], AdminPort: ports[4*i+3]})
		c.servers = append(c.servers, Server{ID: id, DC: opts.Topology.DC(id), Client: peers[i].ClientAddr(), Admin: peers[i].AdminAddr()})
	}
	for _, id := range ids {
		cfg := opts.replicaConfig(id, peers)
		cfg.DataDir = c.file(id, "")
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, err
		}
		b, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(c.file(id, ".json"), b, 0o644); err != nil {
			return nil, err
		}
		c.cfgs[id] = cfg
	}
	for _, id := range ids {
		if err := c.spawn(id); err != nil {
			return nil, err
		}
	}
	for _, s := range c.servers {
		if err := c.waitPort(ctx, s.ID, s.Client); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *PoledProcs) file(id int, ext string) string {
	return filepath.Join(c.root, "p"+strconv.Itoa(id)+ext)
}

func (c *PoledProcs) spawn(id int) error {
	lf, err := os.OpenFile(c.file(id, ".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	cmd := exec.Command(c.bin, "--config", c.file(id, ".json"))
	cmd.Dir = c.file(id, "")
	cmd.Stdout, cmd.Stderr = lf, lf
	p, err := startLocal(cmd)
	if err != nil {
		return fmt.Errorf("poled p%d: %w", id, err)
	}
	c.mu.Lock()
	c.procs[id] = p
	c.mu.Unlock()
	return nil
}

func (c *PoledProcs) waitPort(ctx context.Context, id int, addr string) error {
	c.mu.Lock()
	p := c.procs[id]
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, netnsStartTimeout)
	defer cancel()
	if err := waitListening(ctx, addr, func() bool { return !p.alive() }); err != nil {
		b, _ := os.ReadFile(c.file(id, ".log"))
		return fmt.Errorf("poled p%d does not listen on %s (%s): %w; its log ends:\n%s", id, addr, p.exitString(), err, lastLines(string(b), 15))
	}
	return nil
}

// Servers lists the servers, ordered by id.
func (c *PoledProcs) Servers() []Server { return append([]Server(nil), c.servers...) }

// Links: a benchmark on loopback emulates no links.
func (c *PoledProcs) Links() string { return LinksNone }

// Alive reports whether server id's process runs.
func (c *PoledProcs) Alive(id int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.procs[id]
	return p != nil && p.alive()
}

// Pid is server id's process id (for profiling), 0 if it is not running.
func (c *PoledProcs) Pid(id int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.procs[id]; p != nil && p.alive() {
		return p.pid()
	}
	return 0
}

// Kill sends server id SIGKILL and waits until it is gone.
func (c *PoledProcs) Kill(ctx context.Context, id int) error {
	c.mu.Lock()
	p := c.procs[id]
	c.mu.Unlock()
	if p == nil || !p.alive() {
		return fmt.Errorf("poled p%d is not running", id)
	}
	p.kill()
	return p.wait(ctx)
}

// Restart starts a killed server again from its data directory.
func (c *PoledProcs) Restart(ctx context.Context, id int) error {
	if c.Alive(id) {
		return fmt.Errorf("poled p%d is running", id)
	}
	if _, ok := c.cfgs[id]; !ok {
		return fmt.Errorf("no server p%d", id)
	}
	if err := c.spawn(id); err != nil {
		return err
	}
	return c.waitPort(ctx, id, c.cfgs[id].Self().ClientAddr())
}

// CollectLogs copies each server's log into dir as p<ID>.log.
func (c *PoledProcs) CollectLogs(_ context.Context, dir string) error {
	var errs []error
	for _, s := range c.servers {
		name := "p" + strconv.Itoa(s.ID) + ".log"
		if err := copyFile(c.file(s.ID, ".log"), filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close stops every process (SIGTERM, then SIGKILL) and removes a temporary root.
func (c *PoledProcs) Close(context.Context) error {
	c.mu.Lock()
	procs := c.procs
	c.procs = map[int]*nsProc{}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { p.stop(5 * time.Second) })
	}
	wg.Wait()
	if c.ownRoot {
		return os.RemoveAll(c.root)
	}
	return nil
}
