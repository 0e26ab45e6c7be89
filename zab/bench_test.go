package zab

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkCommitThroughput measures commits per second of a 5-server cluster in
// one process: the core of every server, the binary codec on every message, an
// in-memory network without delay and synchronous disks; 1 kB writes from clients
// spread over all servers, `inflight` outstanding at a time.
//
//	go test ./zab/ -run '^$' -bench CommitThroughput -benchtime 20000x
func BenchmarkCommitThroughput(b *testing.B) {
	for _, inflight := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			cfg := defaultSimConfig()
			cfg.loadUS, cfg.localSnap, cfg.lean = 0, 0, true
			cfg.delayUS = func(a, b int) int64 { return 0 }
			s := newSim(b, 1, cfg)
			s.runFor(200 * ms)
			if s.leaderServing() == nil {
				b.Fatal("no leader")
			}
			issued, done := 0, 0
			issue := func() {
				if issued < b.N && s.clientWrite(0) {
					issued++
				}
			}
			s.onResult = func(_ *simNode, r Result) {
				if r.Err != nil {
					b.Fatalf("request %d: %v", r.ReqID, r.Err)
				}
				done++
				issue()
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range inflight {
				issue()
			}
			for done < b.N {
				s.runFor(1 * ms)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
		})
	}
}
