package local

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

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/internal/procs"
	"github.com/polebench/polebench/freeport"
	"github.com/polebench/polebench/replica"
)

// Processes is a cluster of poled processes on loopback, each its own binary
// (cmd/poled, as the netns backend finds or builds it), without emulated links: what a
// benchmark compares with ZooKeeper's JVMs, process against process.
type Processes struct {
	procs   *procs.Set
	bin     string
	root    string
	ownRoot bool
	opts    cluster.Options
	cfgs    map[int]replica.Config
	servers []cluster.Server
}

var (
	_ cluster.Cluster = (*Processes)(nil)
	_ cluster.Pids    = (*Processes)(nil)
)

// NewProcesses starts opts.Topology's servers as poled processes on loopback and
// returns once each accepts client connections.
func NewProcesses(ctx context.Context, opts cluster.Options) (_ *Processes, err error) {
	if opts.Topology == nil || opts.Topology.N() == 0 {
		return nil, errors.New("poled processes: no topology")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Processes{opts: opts, root: opts.DataRoot, cfgs: map[int]replica.Config{}}
	c.procs = procs.NewSet("poled", log, func(id int) string { return c.file(id, ".log") }, c.spawnProc)
	if c.bin, err = procs.Poled(ctx, log); err != nil {
		return nil, fmt.Errorf("poled processes: %w", err)
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
		c.servers = append(c.servers, cluster.Server{ID: id, DC: opts.Topology.DC(id), Client: peers[i].ClientAddr(), Admin: peers[i].AdminAddr()})
	}
	for _, id := range ids {
		cfg := opts.ReplicaConfig(id, peers)
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
		if err := c.procs.Spawn(id); err != nil {
			return nil, err
		}
	}
	for _, s := range c.servers {
		if err := c.procs.WaitListening(ctx, s.ID, procs.StartTimeout, s.Client); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Processes) file(id int, ext string) string {
	return filepath.Join(c.root, "p"+strconv.Itoa(id)+ext)
}

// spawnProc is the set's start: the poled binary with server id's config file.
func (c *Processes) spawnProc(id, _ int) (*procs.Proc, error) {
	lf, err := os.OpenFile(c.file(id, ".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer lf.Close() // the child has its own copy
	cmd := exec.Command(c.bin, "--config", c.file(id, ".json"))
	cmd.Dir = c.file(id, "")
	cmd.Stdout, cmd.Stderr = lf, lf
	return procs.Start(cmd)
}

// Servers lists the servers, ordered by id.
func (c *Processes) Servers() []cluster.Server { return append([]cluster.Server(nil), c.servers...) }

// Links: a benchmark on loopback emulates no links.
func (c *Processes) Links() string { return cluster.LinksNone }

// Pid is server id's process id, 0 if it is not running.
func (c *Processes) Pid(id int) int { return c.procs.Pid(id) }

// Alive reports whether server id's process runs.
func (c *Processes) Alive(id int) bool { return c.procs.Alive(id) }

// Kill sends server id SIGKILL and waits until it is gone.
func (c *Processes) Kill(ctx context.Context, id int) error { return c.procs.Kill(ctx, id) }

// Restart starts a killed server again from its data directory.
func (c *Processes) Restart(ctx context.Context, id int) error {
	cfg, ok := c.cfgs[id]
	if !ok {
		return fmt.Errorf("poled: no server p%d", id)
	}
	if err := c.procs.Spawn(id); err != nil {
		return err
	}
	return c.procs.WaitListening(ctx, id, procs.StartTimeout, cfg.Self().ClientAddr())
}

// CollectLogs copies each server's log into dir as p<ID>.log.
func (c *Processes) CollectLogs(ctx context.Context, dir string) error {
	return c.procs.CollectLogs(ctx, c.opts.Topology.Servers(), dir)
}

// Close stops every process (SIGTERM, then SIGKILL) and removes a temporary root.
func (c *Processes) Close(context.Context) error {
	c.procs.StopAll(procs.Grace)
	if c.ownRoot {
		return os.RemoveAll(c.root)
	}
	return nil
}

// Poled is the poled binary the processes run ($POLEBENCH_POLED, else ./cmd/poled
// built once), for whatever starts poled itself (zkcompat's launcher, in the nightly
// suite's kazoo entry).
func Poled(ctx context.Context, log *slog.Logger) (string, error) { return procs.Poled(ctx, log) }
