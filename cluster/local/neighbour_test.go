package local

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/internal/clustertest"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/score"
)

// TestNeighbourNeverBehind: on the local backend, with the two-DC spec's user-space
// links (0.1 ms of RTT inside a DC, 20.75 ms across), the leader is killed 20 times (10
// in each of two clusters side by side) under closed-loop writes through every server,
// each time a few milliseconds after the load resumed, and restarted once the next
// leader commits. A follower in the dead leader's DC gets each of its messages 10 ms
// before the followers across the WAN, and hears of its death 10 ms sooner, after them;
// so it must enter the election with a zxid no lower than any far follower's (once p4
// entered one behind p1-p3 and history elected p3). Before the fix some kills broke it
// (docs/crash.md): the break of a follower's own stream to the dead leader was reported
// before the leader's last proposals, still on the link, were handed over, and the
// follower dropped them.
func TestNeighbourNeverBehind(t *testing.T) {
	t.Parallel()
	for i := range 2 {
		t.Run(fmt.Sprint("cluster", i+1), func(t *testing.T) {
			t.Parallel()
			killLeaders(t, 10, uint64(i))
		})
	}
}

// killLeaders kills a two-DC local cluster's leader under load that many times, and
// checks that the dead leader's neighbours never enter the election behind a far
// follower.
func killLeaders(t *testing.T, kills int, seed uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	topo := clustertest.TwoDC(t)
	c, err := New(ctx, cluster.Options{
		// No initial leader: history elects p5 first anyway (every zxid is 0, the
		// highest id wins), and a restarted initial leader would claim its first
		// election again (pole.Initial).
		Topology: topo, Oracle: score.Oracle{Name: score.History},
		Plan: netem.NewPlan(topo, netem.DefaultOptions(0)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	servers := c.Servers()
	if err := cluster.WaitServing(ctx, servers, c.Alive); err != nil {
		t.Fatal(err)
	}
	if _, err := clustertest.Connect(t, servers[0].Client).Create("/k", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	// Closed-loop writers, four through each server: proposals are always in flight.
	var acked atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	writers := 0
	for _, s := range servers {
		conn := clustertest.Connect(t, s.Client)
		for w := range 4 {
			writers++
			go func() {
				defer func() { done <- struct{}{} }()
				path := fmt.Sprintf("/k/p%d-%d", s.ID, w)
				val := make([]byte, 1024)
				for {
					select {
					case <-stop:
						return
					default:
					}
					_, err := conn.Set(path, val, -1)
					if err == zk.ErrNoNode {
						_, err = conn.Create(path, val, 0, zk.WorldACL(zk.PermAll))
					}
					if err != nil {
						time.Sleep(5 * time.Millisecond) // no session (the server is looking or dead)
						continue
					}
					acked.Add(1)
				}
			}()
		}
	}
	defer func() {
		close(stop)
		for range writers {
			<-done
		}
	}()

	// committed waits until n more writes were acknowledged.
	committed := func(n int64, what string) {
		for from := acked.Load(); acked.Load() < from+n; {
			if ctx.Err() != nil {
				t.Fatalf("%s: the load did not resume", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	rng := rand.New(rand.NewPCG(26, seed))
	for k := 1; k <= kills; k++ {
		leader, err := cluster.WaitLeader(ctx, servers, c.Alive)
		if err != nil {
			t.Fatal(err)
		}
		if err := cluster.WaitServing(ctx, servers, c.Alive); err != nil {
			t.Fatal(err)
		}
		// Kill under load: once the writers' sessions are back and 100 writes more
		// committed, at a random instant.
		committed(100, fmt.Sprintf("before kill %d", k))
		time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
		killedAt := time.Now().UnixNano()
		if err := c.Kill(ctx, leader); err != nil {
			t.Fatal(err)
		}
		if _, err := cluster.WaitLeader(ctx, servers, c.Alive); err != nil {
			t.Fatal(err)
		}
		// The zxid each follower entered the election with: its first ELECTION
		// since the kill.
		zxids := map[int]uint64{}
		var near, far []int
		for _, s := range servers {
			if s.ID == leader {
				continue
			}
			for _, e := range c.Node(s.ID).Timeline().Events() {
				if e.Kind == event.Election && e.TimeNS > killedAt {
					zxids[s.ID] = uint64(e.Zxid)
					break
				}
			}
			if _, ok := zxids[s.ID]; !ok {
				t.Logf("kill %d of p%d: p%d entered no election", k, leader, s.ID)
				continue
			}
			if topo.DC(s.ID) == topo.DC(leader) {
				near = append(near, s.ID)
			} else {
				far = append(far, s.ID)
			}
		}
		var line strings.Builder
		for _, id := range slices.Sorted(maps.Keys(zxids)) {
			fmt.Fprintf(&line, " p%d=%#x", id, zxids[id])
		}
		t.Logf("kill %d of p%d, zxids entering the election:%s", k, leader, line.String())
		if len(near) == 0 || len(far) == 0 {
			t.Errorf("kill %d of p%d: no neighbour and far follower to compare (near %v, far %v)", k, leader, near, far)
		}
		for _, n := range near {
			for _, f := range far {
				if zxids[n] < zxids[f] {
					t.Errorf("kill %d of p%d: its neighbour p%d entered the election at %#x, behind p%d across the WAN at %#x",
						k, leader, n, zxids[n], f, zxids[f])
				}
			}
		}
		// The new leader commits before the dead one comes back, so that each kill
		// starts from a settled cluster (a server restarted mid-election is pole's
		// restart_*.txt tests' matter, not this one's).
		committed(100, fmt.Sprintf("after kill %d", k))
		if err := c.Restart(ctx, leader); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d writes acknowledged", acked.Load())
}
