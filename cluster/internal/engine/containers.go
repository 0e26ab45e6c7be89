package engine

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/vishvananda/netns"

	"github.com/polebench/polebench/cluster/internal/bridge"
	"github.com/polebench/polebench/netem"
)

// What the docker backend's runs share, whichever replica their containers run
// (poled, or the etcd flavor's members): the run's label and names, the containers'
// place on the run's bridge and their kernel links, and the removal of what a run made.

// LabelRun marks everything a run on the docker backend creates with its
// Options.Label (LabelServer the server id, on containers and volumes).
const LabelRun = "polebench.run"

// ServerName is the name of server id's container (and volume) in the run labelled
// label (a checked label: Docker allows its characters in names).
func ServerName(label string, id int) string {
	return "polebench-" + label + "-p" + strconv.Itoa(id)
}

// Labels are the labels of server id's objects in the run labelled label.
func Labels(label string, id int) map[string]string {
	return map[string]string{LabelRun: label, LabelServer: strconv.Itoa(id)}
}

// StartOnBridge starts container name, server id, plugs its fresh network namespace
// into the run's bridge n as eth0 and, with a plan (kernel links; nil: none), installs
// server id's links of it there, every server at its address in addrs. It returns the
// pid of the container's first process on this host (the engine must be local).
func StartOnBridge(ctx context.Context, cli *client.Client, n *bridge.Net, id int, name string, plan *netem.Plan, addrs map[int]netip.Addr) (int, error) {
	if err := cli.ContainerStart(ctx, name, container.StartOptions{}); err != nil {
		return 0, fmt.Errorf("start %s: %w", name, err)
	}
	ns, pid, err := ContainerNetns(ctx, cli, name)
	if err != nil {
		return 0, err
	}
	err = n.PlugForeign(id, ns, name)
	ns.Close() // the veth keeps nothing alive: the namespace dies with the container
	if err != nil {
		return 0, err
	}
	if plan != nil {
		if err := ApplyIn(ctx, cli, name, id, addrs, *plan); err != nil {
			return 0, err
		}
	}
	return pid, nil
}

// ApplyIn installs server self's links of plan on eth0 of running container name,
// from the host: the handle to its network namespace comes from its process.
func ApplyIn(ctx context.Context, cli *client.Client, name string, self int, addrs map[int]netip.Addr, plan netem.Plan) error {
	ns, _, err := ContainerNetns(ctx, cli, name)
	if err != nil {
		return err
	}
	defer ns.Close()
	if err := netem.Apply(ctx, netem.Target{NS: ns, Dev: bridge.Dev, Self: self, Addrs: addrs}, plan); err != nil {
		return fmt.Errorf("netem in %s: %w", name, err)
	}
	return nil
}

// ContainerNetns is a handle to running container name's network namespace, and the
// pid of its first process on the engine's host (this one: the engine must be local).
func ContainerNetns(ctx context.Context, cli *client.Client, name string) (netns.NsHandle, int, error) {
	info, err := cli.ContainerInspect(ctx, name)
	if err != nil {
		return 0, 0, fmt.Errorf("inspect %s: %w", name, err)
	}
	if info.State == nil || info.State.Pid == 0 {
		return 0, 0, fmt.Errorf("%s is not running", name)
	}
	path := fmt.Sprintf("/proc/%d/ns/net", info.State.Pid)
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return 0, 0, fmt.Errorf("network namespace of %s (%s; the engine must be local and the harness root): %w", name, path, err)
	}
	return ns, info.State.Pid, nil
}

func runFilter(label string) filters.Args {
	if label == "" {
		return filters.NewArgs(filters.Arg("label", LabelRun))
	}
	return filters.NewArgs(filters.Arg("label", LabelRun+"="+label))
}

// Objects lists what carries LabelRun=label (any run's if label is empty):
// containers first, then volumes, then networks, the order they can be removed in.
func Objects(ctx context.Context, cli *client.Client, label string) ([]Object, error) {
	f := runFilter(label)
	var out []Object
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs {
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		out = append(out, Object{Kind: "container", Name: name, ID: c.ID})
	}
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	for _, v := range vs.Volumes {
		out = append(out, Object{Kind: "volume", Name: v.Name, ID: v.Name})
	}
	ns, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	for _, n := range ns {
		out = append(out, Object{Kind: "network", Name: n.Name, ID: n.ID})
	}
	return out, nil
}

// RemoveRun removes every object of the run labelled label (every run's if empty),
// going on past errors, and checks that nothing is left.
func RemoveRun(ctx context.Context, cli *client.Client, label string) ([]string, error) {
	objs, err := Objects(ctx, cli, label)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, o := range objs {
		var err error
		switch o.Kind {
		case "container":
			err = cli.ContainerRemove(ctx, o.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		case "volume":
			err = cli.VolumeRemove(ctx, o.ID, false) // force would hide "in use"
		case "network":
			err = cli.NetworkRemove(ctx, o.ID)
		}
		if err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, fmt.Errorf("remove %v: %w", o, err))
			continue
		}
		removed = append(removed, o.String())
	}
	if left, err := Objects(ctx, cli, label); err != nil {
		errs = append(errs, err)
	} else if len(left) > 0 {
		errs = append(errs, fmt.Errorf("still there after removal: %v", left))
	}
	return removed, errors.Join(errs...)
}

// Remove removes the run labelled label (every run's if empty): its objects, then,
// for one run, its bridge (package bridge: the switch namespace, the host veth). With
// label "" the bridges are left to the netns backend's Down, which takes every netns
// cluster's. The caller has closed its bridge.Net.
func Remove(ctx context.Context, cli *client.Client, label string) ([]string, error) {
	removed, err := RemoveRun(ctx, cli, label)
	if label == "" {
		return removed, err
	}
	gone, berr := bridge.Down(ctx, label)
	return append(removed, gone...), errors.Join(err, berr)
}
