package workload

import (
	"context"
	"testing"
	"time"

	"github.com/polebench/polebench/workload/internal/zktest"
)

// BenchmarkRate1000 runs the paper's load, 1000 req/s of 1 kB writes, against a real
// standalone ZooKeeper for 10 s after a 3 s warm-up (the JVM compiles its hot paths) and
// reports the achieved rate and the send lag. Run it once:
//
//	go test ./workload -run '^$' -bench Rate1000 -benchtime 1x
func BenchmarkRate1000(b *testing.B) {
	zkc := zktest.StartT(b, 1, false)
	servers := []Server{{ID: 1, DC: "D1", Addr: zkc.Server(1).ClientAddr}, {ID: 2, DC: "D2", Addr: zkc.Server(1).ClientAddr}}
	run := func(d time.Duration, seed uint64) Stats {
		ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
		defer cancel()
		res, err := Run(ctx, Config{Servers: servers, Rates: map[string]float64{"D1": 500, "D2": 500},
			Seed: seed, Duration: d, Keys: 1000, Log: testLog(b)})
		if err != nil {
			b.Fatal(err)
		}
		if res.Stats.OK != res.Stats.Requests {
			b.Fatalf("not every request ok: %+v", res.Stats)
		}
		return res.Stats
	}
	run(3*time.Second, 1)
	b.ResetTimer()
	for i := range b.N {
		st := run(10*time.Second, uint64(i+2))
		b.ReportMetric(st.AchievedRate, "req/s")
		b.ReportMetric(float64(st.SendLag.P50.Microseconds())/1000, "lag_p50_ms")
		b.ReportMetric(float64(st.SendLag.P99.Microseconds())/1000, "lag_p99_ms")
		b.ReportMetric(float64(st.SendLag.Max.Microseconds())/1000, "lag_max_ms")
		b.Logf("offered %.0f req/s, scheduled %.1f, achieved %.1f; send lag p50 %v p99 %v max %v; %d requests",
			st.OfferedRate, st.ScheduledRate, st.AchievedRate, st.SendLag.P50, st.SendLag.P99, st.SendLag.Max, st.Requests)
	}
}
