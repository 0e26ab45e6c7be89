package local

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/internal/clustertest"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/topology"
)

// BenchmarkEnsembleWrites measures a poled ensemble on loopback with no emulated
// delay: 1 kB setData from 32 concurrent clients spread over every server, reporting
// writes/s and the p50/p99 latency of a write. Run it with
//
//	go test ./cluster/local -run '^$' -bench EnsembleWrites -benchtime 20000x
func BenchmarkEnsembleWrites(b *testing.B) {
	for _, n := range []int{3, 5} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			var ids []int
			for id := 1; id <= n; id++ {
				ids = append(ids, id)
			}
			topo, err := topology.New(topology.Config{DCs: []topology.DC{{Name: "lan", Servers: ids}}})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			c, err := New(ctx, cluster.Options{Topology: topo, Oracle: score.Oracle{Name: score.History}, InitialLeader: n})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(context.Background())
			if err := cluster.WaitServing(ctx, c.Servers(), nil); err != nil {
				b.Fatal(err)
			}
			const clients = 32
			var conns []*zk.Conn
			for i := 0; i < clients; i++ {
				s := c.Servers()[i%n]
				conn, _, err := zk.Connect([]string{s.Client}, 10*time.Second, zk.WithLogger(clustertest.Quiet{}))
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				conns = append(conns, conn)
				if _, err := conn.Create(fmt.Sprintf("/b%d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
					b.Fatal(err)
				}
			}
			payload := make([]byte, 1024)
			lat := make([][]time.Duration, clients)
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < clients; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					path := fmt.Sprintf("/b%d", i)
					for k := i; k < b.N; k += clients {
						t0 := time.Now()
						if _, err := conns[i].Set(path, payload, -1); err != nil {
							b.Error(err)
							return
						}
						lat[i] = append(lat[i], time.Since(t0))
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			all := slices.Concat(lat...)
			slices.Sort(all)
			if len(all) == 0 {
				return
			}
			b.ReportMetric(float64(len(all))/elapsed.Seconds(), "writes/s")
			b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
