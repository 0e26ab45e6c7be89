package all

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
)

// Every backend registered, in the fixed order, each with the flavors it runs.
func TestBackendRegistry(t *testing.T) {
	want := []string{backend.Local, backend.Netns, backend.Docker, backend.Swarm, backend.Sim}
	if got := backend.Names(); !slices.Equal(got, want) {
		t.Errorf("backend.Names() = %v, want %v", got, want)
	}
	if got := cluster.Backends(); !slices.Equal(got, want) {
		t.Errorf("cluster.Backends() = %v, want %v", got, want)
	}
	if got := backend.For(backend.FlavorPoled); !slices.Equal(got, want) {
		t.Errorf("backend.For(poled) = %v, want every backend", got)
	}
	if got, want := backend.For(backend.FlavorZooKeeper), []string{backend.Local, backend.Netns}; !slices.Equal(got, want) {
		t.Errorf("backend.For(zookeeper) = %v, want %v", got, want)
	}
	for _, c := range []struct {
		name, flavor string
		runs         bool
	}{
		{"", "", true}, {"", backend.FlavorZooKeeper, true}, {backend.Netns, backend.FlavorZooKeeper, true},
		{backend.Docker, backend.FlavorZooKeeper, false}, {backend.Sim, backend.FlavorPoled, true}, {"k8s", "", false},
	} {
		if got := backend.Runs(c.name, c.flavor); got != c.runs {
			t.Errorf("backend.Runs(%q, %q) = %v, want %v", c.name, c.flavor, got, c.runs)
		}
	}
}

// New refuses a flavor its backend cannot run before it starts anything, and an
// unknown backend by name.
func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct{ backend, flavor, want string }{
		{backend.Docker, cluster.ZooKeeper, `flavor zookeeper does not run on backend "docker": only on local, netns`},
		{backend.Swarm, cluster.ZooKeeper, `flavor zookeeper does not run on backend "swarm"`},
		{backend.Sim, cluster.ZooKeeper, `flavor zookeeper does not run on backend "sim"`},
		{backend.Sim, cluster.Poled, `backend "sim" simulates a run`},
		{"k8s", cluster.Poled, `unknown backend "k8s" (known: [local netns docker swarm sim])`},
		{backend.Local, "raft", `unknown flavor "raft" (known: poled, etcd, zookeeper)`},
	} {
		cl, err := cluster.New(context.Background(), tc.backend, cluster.Options{Flavor: tc.flavor})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			if cl != nil {
				cl.Close(context.Background())
			}
			t.Errorf("New(%s, flavor %s): %v, want an error containing %q", tc.backend, tc.flavor, err, tc.want)
		}
	}
}

// Check refuses what New refuses, and has nothing to check for the simulator.
func TestCheckRefuses(t *testing.T) {
	if err := cluster.Check(context.Background(), backend.Docker, backend.FlavorZooKeeper); err == nil ||
		!strings.Contains(err.Error(), `flavor zookeeper does not run on backend "docker": only on local, netns`) {
		t.Errorf("Check(docker, zookeeper): %v", err)
	}
	if err := cluster.Check(context.Background(), backend.Sim, ""); err != nil {
		t.Errorf("Check(sim): %v", err)
	}
	if err := cluster.Check(context.Background(), "", ""); err != nil {
		t.Errorf("Check(local): %v", err)
	}
}
