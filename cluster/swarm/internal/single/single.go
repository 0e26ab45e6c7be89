// Package single makes the local Docker engine a single-node swarm manager for a
// while and then leaves the engine as it found it. The tests (swarmtest.Manager) and
// the nightly's swarm entry (swarm.Prepare) share it, and its machine-wide lock, so
// that two never init or leave a swarm at once.
package single

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/swarm"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/vishvananda/netlink"
)

// LockFile serialises everything that changes the local engine's swarm mode.
const LockFile = "/run/lock/polebench-swarmtest.lock"

// marker names the swarm a lease made (node ID, and whether the gateway bridge was
// there before), until the lease leaves it: a killed holder's swarm is found by it.
const marker = "/run/polebench-swarmtest.manager"

// gwbridge is the bridge Docker makes for swarm tasks' outside traffic; leaving a
// swarm keeps it.
const gwbridge = "docker_gwbridge"

// labelRun is swarm.LabelRun (package swarm imports this one).
const labelRun = "polebench.swarm"

// ErrNotManager is why a lease cannot be had: the engine is in a swarm, but not as
// its manager, and leaving that swarm is not this package's to do.
var ErrNotManager = errors.New("the engine is in a swarm, but not as a manager")

// Lease is the local engine as a swarm manager, held until Release.
type Lease struct {
	cli       *client.Client
	lock      *os.File
	made      bool // the lease initialised the swarm (or took over a killed holder's): Release leaves it
	hadBridge bool
	// Note says what Take did, for a log line.
	Note string
}

// Take makes the engine cli talks to a swarm manager until Release: a single-node
// swarm it initialises when the engine is in none, the engine's own swarm when it
// manages one (used as it is, never left), or the swarm a killed holder made (the
// marker says so), with what that holder's runs left removed, then left as that
// holder would have. It waits for the machine-wide lock until ctx ends.
func Take(ctx context.Context, cli *client.Client) (*Lease, error) {
	lock, err := acquire(ctx)
	if err != nil {
		return nil, err
	}
	l := &Lease{cli: cli, lock: lock}
	if err := l.take(ctx); err != nil {
		lock.Close()
		return nil, err
	}
	return l, nil
}

func (l *Lease) take(ctx context.Context) error {
	info, err := l.cli.Info(ctx)
	if err != nil {
		return err
	}
	mark, _ := os.ReadFile(marker)
	node, bridge, _ := strings.Cut(strings.TrimSpace(string(mark)), " ")
	st := info.Swarm
	switch {
	case st.LocalNodeState == swarm.LocalNodeStateActive && st.ControlAvailable && node == st.NodeID:
		n, err := removeLeftovers(ctx, l.cli)
		l.made, l.hadBridge = true, bridge == "had-bridge"
		l.Note = fmt.Sprintf("the engine manages the swarm a killed holder made (node %s): taken over, to be left; removed what its runs left (%s)", node, n)
		return err
	case st.LocalNodeState == swarm.LocalNodeStateActive && st.ControlAvailable:
		l.Note = fmt.Sprintf("the engine manages a swarm already (node %s): used as it is", st.NodeID)
		return nil
	case st.LocalNodeState != swarm.LocalNodeStateInactive:
		return fmt.Errorf("%w (%s): leave it (`docker swarm leave`) or point DOCKER_HOST at a manager", ErrNotManager, st.LocalNodeState)
	}
	_, gwErr := l.cli.NetworkInspect(ctx, gwbridge, network.InspectOptions{})
	l.hadBridge = gwErr == nil
	t0 := time.Now()
	req := swarm.InitRequest{ListenAddr: "0.0.0.0:2377"}
	if _, err := l.cli.SwarmInit(ctx, req); err != nil {
		// Several addresses to choose from: the one of the default route's interface.
		if req.AdvertiseAddr, err = defaultAddr(); err != nil {
			return fmt.Errorf("swarm init: %w", err)
		}
		if _, err := l.cli.SwarmInit(ctx, req); err != nil {
			return fmt.Errorf("swarm init (advertising %s): %w", req.AdvertiseAddr, err)
		}
	}
	l.made = true
	if info, err = l.cli.Info(ctx); err != nil {
		return errors.Join(err, l.leave(context.WithoutCancel(ctx)))
	}
	bridge = "no-bridge"
	if l.hadBridge {
		bridge = "had-bridge"
	}
	if err := os.WriteFile(marker, []byte(info.Swarm.NodeID+" "+bridge+"\n"), 0o644); err != nil {
		return errors.Join(err, l.leave(context.WithoutCancel(ctx)))
	}
	l.Note = fmt.Sprintf("a single-node swarm initialised on the local engine in %v, to be left after", time.Since(t0).Round(time.Millisecond))
	return nil
}

// Made says the lease initialised the swarm it holds (or took over a killed
// holder's), so Release leaves it.
func (l *Lease) Made() bool { return l.made }

// Release leaves a swarm the lease made, removes the gateway bridge unless it was
// there before, checks that the engine is out of swarm mode, and lets go of the lock.
func (l *Lease) Release(ctx context.Context) error {
	defer l.lock.Close() // closing releases the lock
	if !l.made {
		return nil
	}
	return l.leave(ctx)
}

func (l *Lease) leave(ctx context.Context) error {
	var errs []error
	if err := l.cli.SwarmLeave(ctx, true); err != nil {
		errs = append(errs, fmt.Errorf("swarm leave: %w", err))
	}
	os.Remove(marker)
	if !l.hadBridge {
		var err error
		for range 20 { // the gateway's endpoints go a moment after the swarm
			if err = l.cli.NetworkRemove(ctx, gwbridge); err == nil || client.IsErrNotFound(err) {
				err = nil
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", gwbridge, err))
		}
	}
	if info, err := l.cli.Info(ctx); err != nil || info.Swarm.LocalNodeState != swarm.LocalNodeStateInactive {
		errs = append(errs, fmt.Errorf("the engine is not back out of swarm mode: %v %v", info.Swarm.LocalNodeState, err))
	}
	return errors.Join(errs...)
}

// Lock takes the machine-wide lock without changing swarm mode (a test that needs
// the engine out of a swarm while it runs), waiting until ctx ends; unlock lets go.
func Lock(ctx context.Context) (unlock func(), err error) {
	f, err := acquire(ctx)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

func acquire(ctx context.Context) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(LockFile), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(LockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", LockFile, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: held by another holder of the swarm: %w", LockFile, context.Cause(ctx))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// removeLeftovers removes the services, containers and volumes that swarm runs of a
// killed holder left (their published ports would be taken), and says how many.
func removeLeftovers(ctx context.Context, cli *client.Client) (string, error) {
	f := filters.NewArgs(filters.Arg("label", labelRun))
	svcs, err := cli.ServiceList(ctx, swarm.ServiceListOptions{Filters: f})
	if err != nil {
		return "", fmt.Errorf("leftovers: %w", err)
	}
	var errs []error
	for _, sv := range svcs {
		if err := cli.ServiceRemove(ctx, sv.ID); err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, fmt.Errorf("leftover service %s: %w", sv.Spec.Name, err))
		}
	}
	for t0 := time.Now(); time.Since(t0) < 30*time.Second; time.Sleep(250 * time.Millisecond) {
		if cs, err := cli.ContainerList(ctx, container.ListOptions{Filters: f}); err == nil && len(cs) == 0 {
			break // the agent removed the tasks' containers
		}
	}
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return "", errors.Join(append(errs, fmt.Errorf("leftovers: %w", err))...)
	}
	for _, c := range cs {
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, fmt.Errorf("leftover container %s: %w", c.ID, err))
		}
	}
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return "", errors.Join(append(errs, fmt.Errorf("leftovers: %w", err))...)
	}
	for _, v := range vs.Volumes {
		if err := cli.VolumeRemove(ctx, v.Name, true); err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, fmt.Errorf("leftover volume %s: %w", v.Name, err))
		}
	}
	return fmt.Sprintf("%d services, %d containers, %d volumes", len(svcs), len(cs), len(vs.Volumes)), errors.Join(errs...)
}

// defaultAddr is the first IPv4 address of the default route's interface.
func defaultAddr() (string, error) {
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return "", err
	}
	for _, r := range routes {
		if r.Dst != nil && r.Dst.String() != "0.0.0.0/0" {
			continue
		}
		l, err := netlink.LinkByIndex(r.LinkIndex)
		if err != nil {
			continue
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		if err == nil && len(addrs) > 0 {
			return addrs[0].IP.String(), nil
		}
	}
	return "", errors.New("no IPv4 address on the default route's interface")
}
