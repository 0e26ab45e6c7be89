package replica

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/polebench/polebench/zab"
)

// BenchmarkTraceCost measures what Config.Trace costs: the writes per second a 3-node
// ensemble on loopback (no emulated delay) takes from 64 clients writing as fast as
// they can through a follower, without and with the trace, in five alternating rounds so a
// shared machine's noise falls on both. Run it once:
//
//	go test ./replica -run '^$' -bench TraceCost -benchtime 1x
func BenchmarkTraceCost(b *testing.B) {
	rates := map[bool][]float64{}
	for range 5 {
		for _, on := range []bool{false, true} {
			rates[on] = append(rates[on], closedLoopRate(b, on, 3*time.Second))
		}
	}
	med := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
	off, on := med(rates[false]), med(rates[true])
	b.ReportMetric(off, "writes/s_off")
	b.ReportMetric(on, "writes/s_on")
	b.ReportMetric(100*(off-on)/off, "%cost")
	b.Logf("writes/s without trace %.0f %v, with %.0f %v: %.1f %% fewer", off, rates[false], on, rates[true], 100*(off-on)/off)
}

func closedLoopRate(b *testing.B, trace bool, d time.Duration) float64 {
	b.Helper()
	cfgs, lns := ensemble(b, 3)
	nodes := make([]*Node, 3)
	for i, c := range cfgs {
		c.Trace = trace
		n, err := Start(context.Background(), c, lns[i], nil)
		if err != nil {
			b.Fatal(err)
		}
		nodes[i] = n
	}
	defer func() {
		for _, n := range nodes {
			n.Stop()
		}
	}()
	for _, n := range nodes {
		waitServing(b, n)
	}
	var conns []*zk.Conn
	for range 4 {
		c, _, err := zk.Connect([]string{cfgs[0].Self().ClientAddr()}, 5*time.Second, zk.WithLogger(quiet{}))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	val := make([]byte, 1024)
	var done atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if _, err := conns[i%len(conns)].Set("/", val, -1); err != nil {
					b.Error(err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / d.Seconds()
}

// BenchmarkTraceGroupCommit: what a leader's tracer spends on one Ready after a group
// commit that stepped 4 followers' ACKs for 500 writes and commits them all (a stall's
// backlog): go test ./replica -run '^$' -bench TraceGroupCommit.
func BenchmarkTraceGroupCommit(b *testing.B) {
	const e, writes = zab.Epoch(1), 500
	io := &markIO{}
	tr := newTracer(5, io)
	st := zab.Status{Role: zab.Leading, Serving: true, Epoch: e}
	var rd zab.Ready
	for c := range writes {
		rd.Committed = append(rd.Committed, zab.Txn{Zxid: zab.MakeZxid(e, uint32(c+1))})
	}
	for b.Loop() {
		for c := range writes {
			for f := 1; f <= 4; f++ {
				tr.step(time.Duration(c*10+f), zab.Message{Type: zab.MsgAck, From: f, Zxid: zab.MakeZxid(e, uint32(c+1))})
			}
		}
		tr.ready(rd, st)
		io.marks = io.marks[:0]
	}
}
