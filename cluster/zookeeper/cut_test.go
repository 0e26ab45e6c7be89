package zookeeper_test

import (
	"os"
	"testing"

	"github.com/polebench/polebench/cluster/internal/clustertest"
	"github.com/polebench/polebench/cluster/internal/cuttest"
	"github.com/polebench/polebench/cluster/zookeeper"
	"github.com/polebench/polebench/progress"
)

// zkCuts isolates the leader (p5, the highest id) for 20 s, longer than ZooKeeper's
// own bounds on a silent peer (syncLimit 5 ticks of 2 s), then cuts one way what p5
// sends the others for 5 s.
const zkCuts = `name: zk-cuts
datacenters:
  - {name: D1, endpoint: tud, servers: [1, 2]}
  - {name: D2, endpoint: cern, servers: [3, 4, 5]}
rates: {total: 100}
initial_leader: 5
crash_at: none
duration: 36s
repetitions: 1
flavor: zookeeper
faults:
  - {at: 3s, isolate: leader}
  - {at: 23s, heal: true}
  - {at: 26s, one_way: [[5], [1, 2, 3, 4]]}
  - {at: 31s, heal: true}
`

// TestZooKeeperCuts plays the cuts on real ZooKeeper JVMs on the local backend, their
// peer traffic (quorum and election ports) through the proxies the harness cuts:
// what cuttest.Cuts checks of every cut run (a leader on the majority side while the
// old one is cut off, none of its writes acknowledged meanwhile, no acknowledged write
// lost, the history linearizable, nothing left behind).
func TestZooKeeperCuts(t *testing.T) {
	if err := zookeeper.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("real ZooKeeper needed under CI: %v", err)
		}
		t.Skip(err)
	}
	if testing.Short() {
		t.Skip("a 36 s experiment after a 25 s warm-up; -short skips it")
	}
	cuttest.Cuts(t, "zk-cuts.yaml", zkCuts, progress.NewPlain(clustertest.Writer{T: t}))
}
