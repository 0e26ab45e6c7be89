package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"golang.org/x/sys/unix"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/image"
	"github.com/polebench/polebench/cluster/internal/bridge"
	"github.com/polebench/polebench/cluster/internal/engine"
	"github.com/polebench/polebench/cluster/internal/procs"
	"github.com/polebench/polebench/netem"
)

// Repo is the repository of the etcd image: this host's etcd FROM scratch, with its
// interpreter and shared objects (image.Program), tagged by their hash.
const Repo = "polebench/etcd"

// Image makes sure the image of this host's etcd exists on cli's engine and returns
// its tag; built says whether it had to be built (the binary or a library changed).
func Image(ctx context.Context, cli *client.Client, log *slog.Logger) (tag string, built bool, err error) {
	bin, err := exec.LookPath(Binary)
	if err != nil {
		return "", false, fmt.Errorf("etcd image: %w", err)
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return "", false, err
	}
	r, err := image.Program(bin)
	if err != nil {
		return "", false, fmt.Errorf("etcd image: %w", err)
	}
	r.Repo, r.Entrypoint = Repo, []string{bin}
	r.Files = append(r.Files, image.File{Path: "/tmp/", Mode: 0o1777})
	return image.EnsureRoot(ctx, cli, r, log)
}

// NewDocker starts opts.Topology's servers as etcd containers on the local Docker
// engine, as the docker backend runs poled's: labelled with the run (engine.Labels,
// so the backend's Down finds them), network mode none, each start plugging a veth
// into the container's fresh namespace on the run's bridge (package bridge) at a fixed
// address, on etcd's usual ports. The plan is applied by the kernel's netem in each
// container's namespace, at every start, where netem.Probe passes; else by the
// user-space links, as on netns. The members' log files and data directories (on
// tmpfs without fsync) are the host's, mounted at their own paths, so the timelines,
// Status, the workload and verification are the local backend's code.
func NewDocker(ctx context.Context, opts cluster.Options) (_ *Cluster, err error) {
	ids, err := bridge.Servers(opts, "etcd", Available)
	if err != nil {
		return nil, err
	}
	cli, err := image.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker backend: %w", err)
	}
	c, err := newCluster(opts)
	if err != nil {
		cli.Close()
		return nil, err
	}
	c.inContainer = true
	c.teardown = cli.Close // until the run has objects of its own
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close(context.WithoutCancel(ctx)))
		}
	}()
	if left, err := engine.Objects(ctx, cli, c.label); err != nil || len(left) > 0 {
		return nil, fmt.Errorf("docker backend: run %q already exists (%v, %v; a crashed run?): remove it with `polebench cluster down %s`", c.label, left, err, c.label)
	}
	tag, built, err := Image(ctx, cli, c.log)
	if err != nil {
		return nil, err
	}
	c.log.Info("etcd image ready", "tag", tag, "built", built)
	if c.mode, err = bridge.LinkMode(ctx, opts.Plan, c.log, c.label, "a delaying proxy per ordered pair of members"); err != nil {
		return nil, err
	}
	if err := c.containers(ctx, cli, opts.Plan, ids, tag); err != nil {
		return nil, err
	}
	return c, c.start(ctx, opts.InitialLeader)
}

// containers makes the run's bridge, the members' addresses on it and their links,
// and a container per member, which startIn starts.
func (c *Cluster) containers(ctx context.Context, cli *client.Client, p netem.Plan, ids []int, tag string) error {
	n, err := bridge.Create(c.label, nil)
	if err != nil {
		return fmt.Errorf("docker backend: %w", err)
	}
	c.teardown = func() error {
		n.Close()
		ctx, cancel := engine.Detach(ctx)
		defer cancel()
		_, err := engine.Remove(ctx, cli, c.label)
		return errors.Join(err, cli.Close())
	}
	addrs := map[int]netip.Addr{}
	for _, id := range ids {
		addrs[id] = n.ServerAddr(id)
		m := c.members[id]
		m.client = net.JoinHostPort(addrs[id].String(), strconv.Itoa(clientPort))
		m.peer = net.JoinHostPort(addrs[id].String(), strconv.Itoa(peerPort))
		m.adv = m.peer
	}
	var plan *netem.Plan // kernel links, installed at each start
	switch c.mode {
	case cluster.LinksUserSpace:
		if err := c.userSpaceOnBridge("docker backend", p, n.HostAddr(), addrs); err != nil {
			return err
		}
	case cluster.LinksKernel:
		plan = &p
	}
	for _, id := range ids {
		if err := c.create(ctx, cli, id, tag); err != nil {
			return err
		}
	}
	c.startIn = func(id int, _ *exec.Cmd) (*procs.Proc, error) {
		ctx, cancel := engine.Detach(ctx)
		defer cancel()
		name := engine.ServerName(c.label, id)
		pid, err := engine.StartOnBridge(ctx, cli, n, id, name, plan, addrs)
		if err != nil {
			return nil, err
		}
		return procs.Attach(pid, signaller(cli, name), waiter(cli, name)), nil
	}
	return nil
}

// create makes member id's container: etcd's command line as on the other backends
// (the image's entrypoint is the binary), the cluster's root and tmpfs directories
// mounted at their own paths. A request is not abandoned half done (engine.Detach).
func (c *Cluster) create(ctx context.Context, cli *client.Client, id int, tag string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("docker backend: p%d: %w", id, err)
	}
	mounts := []mount.Mount{{Type: mount.TypeBind, Source: c.root, Target: c.root}}
	if c.shm != "" {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: c.shm, Target: c.shm})
	}
	ctx, cancel := engine.Detach(ctx)
	defer cancel()
	_, err := cli.ContainerCreate(ctx,
		&container.Config{Image: tag, Hostname: name(id), Cmd: c.command(c.members[id]).Args[1:], Env: c.env(), Labels: engine.Labels(c.label, id)},
		&container.HostConfig{
			NetworkMode: "none", // each start plugs eth0 in
			Mounts:      mounts,
			LogConfig:   container.LogConfig{Type: "json-file"}, // what etcd says before its log opens, for errors
		},
		nil, nil, engine.ServerName(c.label, id))
	if err != nil {
		return fmt.Errorf("docker backend: p%d: create container: %w", id, err)
	}
	return nil
}

// signaller delivers a signal to container name's etcd through its engine, which
// knows the container whatever became of its pid.
func signaller(cli *client.Client, name string) func(os.Signal) error {
	return func(sig os.Signal) error {
		s, ok := sig.(syscall.Signal)
		if !ok {
			return fmt.Errorf("signal %v: not a syscall.Signal", sig)
		}
		ctx, cancel := engine.Detach(context.Background())
		defer cancel()
		return cli.ContainerKill(ctx, name, unix.SignalName(s))
	}
}

// waiter waits until container name stops, and says how it ended: a code other than
// 0 with the end of what the container printed (etcd's own log is its file).
func waiter(cli *client.Client, name string) func() error {
	return func() error {
		waitc, errc := cli.ContainerWait(context.Background(), name, container.WaitConditionNotRunning)
		select {
		case w := <-waitc:
			if w.StatusCode == 0 {
				return nil
			}
			ctx, cancel := engine.Detach(context.Background())
			defer cancel()
			out := engine.LogText(cli.ContainerLogs(ctx, name, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: "5"}))
			return fmt.Errorf("container %s exited with code %d; it printed: %s", name, w.StatusCode, out)
		case err := <-errc:
			return fmt.Errorf("container %s: %w", name, err)
		}
	}
}
