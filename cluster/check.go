package cluster

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/docker/docker/api/types/swarm"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"

	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/image"
)

// Check says whether this machine can run the named backend ("" is local) with
// flavor, without starting anything, so a suite of runs can fail an entry at once and
// say why instead of after each repetition's attempt: root for netns and docker, a
// Docker engine that answers for docker and swarm (a swarm manager for swarm), and
// Java with ZooKeeper's jars for the zookeeper flavor. nil for local and sim.
func Check(ctx context.Context, name, flavor string) error {
	name = cmp.Or(name, backend.Local)
	if !backend.Runs(name, cmp.Or(flavor, Poled)) {
		return fmt.Errorf("flavor %s does not run on backend %q: only on %s", flavor, name, strings.Join(backend.For(flavor), ", "))
	}
	if flavor == ZooKeeper {
		if err := ZooKeeperAvailable(); err != nil {
			return err
		}
	}
	switch name {
	case backend.Netns:
		return netnsCheckRoot()
	case backend.Docker:
		if err := netnsCheckRoot(); err != nil {
			return fmt.Errorf("docker backend: %w", err)
		}
		cli, err := image.Connect(ctx)
		if err != nil {
			return fmt.Errorf("docker backend: %w", err)
		}
		return cli.Close()
	case backend.Swarm:
		cli, err := image.Connect(ctx)
		if err != nil {
			return fmt.Errorf("swarm backend: %w", err)
		}
		defer cli.Close()
		info, err := cli.Info(ctx)
		if err != nil {
			return fmt.Errorf("swarm backend: %w", err)
		}
		if err := swarmManager(cli, info); err != nil {
			return fmt.Errorf("swarm backend: %w", err)
		}
	}
	return nil
}

// swarmManager says why the engine cli answered info for cannot manage a swarm run.
func swarmManager(cli *client.Client, info system.Info) error {
	if info.Swarm.LocalNodeState != swarm.LocalNodeStateActive || !info.Swarm.ControlAvailable {
		return fmt.Errorf("the Docker engine at %s is not a swarm manager (swarm %s): run `docker swarm init` there, or point DOCKER_HOST at a manager",
			cli.DaemonHost(), cmp.Or(string(info.Swarm.LocalNodeState), "inactive"))
	}
	return nil
}
