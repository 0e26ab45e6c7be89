package cluster

import (
	"context"
	"strings"
	"testing"

	"github.com/polebench/polebench/cluster/backend"
)

// New refuses a flavor its backend cannot run before it starts anything, and an
// unknown backend by name.
func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct{ backend, flavor, want string }{
		{backend.Docker, ZooKeeper, `flavor zookeeper does not run on backend "docker": only on local, netns`},
		{backend.Swarm, ZooKeeper, `flavor zookeeper does not run on backend "swarm"`},
		{backend.Sim, ZooKeeper, `flavor zookeeper does not run on backend "sim"`},
		{backend.Sim, Poled, `backend "sim" simulates a run`},
		{"k8s", Poled, `unknown backend "k8s"`},
	} {
		cl, err := New(context.Background(), tc.backend, Options{Flavor: tc.flavor})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			if cl != nil {
				cl.Close(context.Background())
			}
			t.Errorf("New(%s, flavor %s): %v, want an error containing %q", tc.backend, tc.flavor, err, tc.want)
		}
	}
}
