package swarm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/swarm"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/polebench/polebench/cluster/image"
	"github.com/polebench/polebench/cluster/internal/engine"
)

// Down removes every service, config and overlay network labelled LabelRun=label from
// the swarm the local engine (DOCKER_HOST) manages, and the task containers and volumes
// from every node engine it finds (as New finds them): the leftovers of a harness that
// crashed. An empty label means every run's. Without a reachable engine there is
// nothing it could remove (the docker backend's Down reports the engine); an engine
// that is no swarm manager has only its own containers and volumes.
func Down(ctx context.Context, label string) ([]string, error) {
	cli, err := image.Connect(ctx)
	if err != nil {
		return nil, nil
	}
	defer cli.Close()
	engines := nodeEngines{"": cli}
	if info, err := cli.Info(ctx); err == nil && info.Swarm.ControlAvailable && info.Swarm.Cluster != nil {
		sc, err := ConfigFromEnv()
		if err != nil {
			return nil, err
		}
		engines = connectEngines(ctx, cli, info.Swarm.NodeID, info.Swarm.Cluster.ID, sc.Engines, slog.New(slog.DiscardHandler))
		defer engines.close(cli)
	}
	return removeRun(ctx, cli, engines, label)
}

func runFilter(label string) filters.Args {
	if label == "" {
		return filters.NewArgs(filters.Arg("label", LabelRun))
	}
	return filters.NewArgs(filters.Arg("label", LabelRun+"="+label))
}

// objects lists what carries the run's label, in the order it can be removed:
// services, then on every engine containers and volumes, then configs and networks.
// A manager lists swarm objects; an engine outside a swarm has none.
func objects(ctx context.Context, cli *client.Client, engines nodeEngines, label string) ([]engine.Object, error) {
	f := runFilter(label)
	var out []engine.Object
	manager := true
	svcs, err := cli.ServiceList(ctx, swarm.ServiceListOptions{Filters: f})
	if err != nil {
		if !strings.Contains(err.Error(), "not a swarm manager") {
			return nil, fmt.Errorf("list services: %w", err)
		}
		manager = false
	}
	for _, s := range svcs {
		out = append(out, engine.Object{Kind: "service", Name: s.Spec.Name, ID: s.ID})
	}
	for node, eng := range engines {
		cs, err := eng.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
		if err != nil {
			return nil, fmt.Errorf("list containers on node %s: %w", node, err)
		}
		for _, c := range cs {
			name := c.ID[:12]
			if len(c.Names) > 0 {
				name = strings.TrimPrefix(c.Names[0], "/")
			}
			out = append(out, engine.Object{Kind: "container", Name: name, ID: node + "/" + c.ID})
		}
	}
	for node, eng := range engines {
		vs, err := eng.VolumeList(ctx, volume.ListOptions{Filters: f})
		if err != nil {
			return nil, fmt.Errorf("list volumes on node %s: %w", node, err)
		}
		for _, v := range vs.Volumes {
			out = append(out, engine.Object{Kind: "volume", Name: v.Name, ID: node + "/" + v.Name})
		}
	}
	if !manager {
		return out, nil
	}
	cfgs, err := cli.ConfigList(ctx, swarm.ConfigListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list configs: %w", err)
	}
	for _, c := range cfgs {
		out = append(out, engine.Object{Kind: "config", Name: c.Spec.Name, ID: c.ID})
	}
	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	for _, n := range nets {
		out = append(out, engine.Object{Kind: "network", Name: n.Name, ID: n.ID})
	}
	return out, nil
}

// removeRun removes the run's objects. Removing a service makes its node's agent
// remove the task's container, a moment later, and the volume and the network are in
// use until then: the removal goes round until nothing is left or the context ends,
// forcing a container the agent left behind. Without a deadline it gives up after
// removeTimeout, so an object that cannot be removed ends it with an error.
func removeRun(ctx context.Context, cli *client.Client, engines nodeEngines, label string) ([]string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, removeTimeout)
		defer cancel()
	}
	var removed []string
	var last []error
	for round := 0; ; round++ {
		objs, err := objects(ctx, cli, engines, label)
		if err != nil {
			return removed, err
		}
		if len(objs) == 0 {
			slices.Sort(removed)
			return slices.Compact(removed), nil
		}
		last = nil
		for _, o := range objs {
			node, id, _ := strings.Cut(o.ID, "/")
			var err error
			switch o.Kind {
			case "service":
				err = cli.ServiceRemove(ctx, o.ID)
			case "container":
				if round < 10 { // ~5 s for the agent to do it
					continue
				}
				err = engines[node].ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
			case "volume":
				err = engines[node].VolumeRemove(ctx, id, false)
			case "config":
				err = cli.ConfigRemove(ctx, o.ID)
			case "network":
				err = cli.NetworkRemove(ctx, o.ID)
			}
			if err != nil && !client.IsErrNotFound(err) {
				last = append(last, fmt.Errorf("remove %v: %w", o, err))
				continue
			}
			removed = append(removed, o.String())
		}
		select {
		case <-ctx.Done():
			left, _ := objects(context.WithoutCancel(ctx), cli, engines, label)
			return removed, errors.Join(append(last, fmt.Errorf("still there: %v: %w", left, ctx.Err()))...)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
