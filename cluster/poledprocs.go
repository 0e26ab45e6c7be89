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

	"github.com/polebench/polebench/freeport"
	"github.com/polebench/polebench/replica"
)

// PoledProcs is a cluster of poled processes on loopback, each its own binary
// (cmd/poled, as the netns backend finds or builds it), without emulated links: what a
// benchmark compares with ZooKeeper's JVMs, process against process.
type PoledProcs struct {
	*procSet
	bin     string
	root    string
	ownRoot bool
	opts    Options
	cfgs    map[int]replica.Config
	servers []Server
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
	c := &PoledProcs{opts: opts, root: opts.DataRoot, cfgs: map[int]replica.Config{}}
	c.procSet = newProcSet("poled", log, func(id int) string { return c.file(id, ".log") }, c.spawnProc)
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
		if err := c.waitListening(ctx, s.ID, netnsStartTimeout, s.Client); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *PoledProcs) file(id int, ext string) string {
	return filepath.Join(c.root, "p"+strconv.Itoa(id)+ext)
}

// spawnProc is procSet's start: the poled binary with server id's config file.
func (c *PoledProcs) spawnProc(id, _ int) (*nsProc, error) {
	lf, err := os.OpenFile(c.file(id, ".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer lf.Close() // the child has its own copy
	cmd := exec.Command(c.bin, "--config", c.file(id, ".json"))
	cmd.Dir = c.file(id, "")
	cmd.Stdout, cmd.Stderr = lf, lf
	return startLocal(cmd)
}

// Servers lists the servers, ordered by id.
func (c *PoledProcs) Servers() []Server { return append([]Server(nil), c.servers...) }

// Links: a benchmark on loopback emulates no links.
func (c *PoledProcs) Links() string { return LinksNone }

// Restart starts a killed server again from its data directory.
func (c *PoledProcs) Restart(ctx context.Context, id int) error {
	cfg, ok := c.cfgs[id]
	if !ok {
		return fmt.Errorf("poled: no server p%d", id)
	}
	if err := c.spawn(id); err != nil {
		return err
	}
	return c.waitListening(ctx, id, netnsStartTimeout, cfg.Self().ClientAddr())
}

// CollectLogs copies each server's log into dir as p<ID>.log.
func (c *PoledProcs) CollectLogs(ctx context.Context, dir string) error {
	return c.collectLogs(ctx, c.opts.Topology.Servers(), dir)
}

// Close stops every process (SIGTERM, then SIGKILL) and removes a temporary root.
func (c *PoledProcs) Close(context.Context) error {
	c.stopAll(netnsGrace)
	if c.ownRoot {
		return os.RemoveAll(c.root)
	}
	return nil
}
