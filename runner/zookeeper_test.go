package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/zookeeper"
)

// TestZooKeeperFlavor runs the two-DC experiment with Apache ZooKeeper as the
// replicas: on the local backend (JVMs on loopback behind user-space proxies) and the
// netns backend (a JVM per namespace). ZooKeeper's own election is history: it must
// elect p4 (or the server that was ahead; for ZooKeeper, any server as up to date as
// that one: FLE breaks no ties by id across a WAN), lose no acknowledged write, record
// its election in causal order, and leave nothing behind. How far above the model
// ZooKeeper lands, beside poled on the same spec, is the nightly suite's measurement.
// 400 writes/s: five JVMs and the harness share two cores.
const zkRate = "rate=400"

// electionLines are the lines of the run's server logs about elections, for a test
// that disagrees with whom ZooKeeper elected.
func electionLines(t *testing.T, dir string) string {
	var b strings.Builder
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "p*.log"))
	for _, f := range logs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Log(err)
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "New election") || strings.Contains(line, "LEADING") || strings.Contains(line, "FOLLOWING") {
				fmt.Fprintf(&b, "%s: %s\n", filepath.Base(f), line)
			}
		}
	}
	return b.String()
}

func TestZooKeeperFlavor(t *testing.T) {
	if err := zookeeper.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("real ZooKeeper needed under CI: %v", err)
		}
		t.Skip(err)
	}
	for _, backend := range []string{"local", "netns"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			if backend == "netns" && os.Geteuid() != 0 {
				if os.Getenv("CI") != "" {
					t.Fatal("the netns backend needs root, and CI runs as root")
				}
				t.Skip("needs root")
			}
			s := specFor(t, "two-dc", zkRate, "flavor=zookeeper", "backend="+backend)
			runChecked(t, s, func(sum *analysis.Summary, dir string) {
				want := historyWinner(t, s, sum, 4)
				switch {
				case sum.NewLeader == want:
				case sum.ElectionZxids[sum.NewLeader] == sum.ElectionZxids[want]:
					// ZooKeeper's FastLeaderElection elects a server with the latest zxid,
					// but among equals not always the highest id: p4's votes can reach p1
					// and p2 across the WAN while they still follow p5, and p3 gather
					// {p1, p2, p3} and decide after finalizeWait, before p4's vote reaches it.
					t.Logf("ZooKeeper elected p%d, as up to date as history's p%d (zxids %v): FLE does not break ties by id across a WAN", sum.NewLeader, want, sum.ElectionZxids)
				default:
					t.Fatalf("elected p%d, want p%d (zxids proposed at the election: %v); the servers' logs say:\n%s",
						sum.NewLeader, want, sum.ElectionZxids, electionLines(t, dir))
				}
				label := runLabel(t, dir)
				if left, err := cluster.Down(context.Background(), label); err != nil || len(left) > 0 {
					t.Fatalf("after the run, cluster down %s removed %v (err %v): the run left them behind", label, left, err)
				}
			})
		})
	}
}
