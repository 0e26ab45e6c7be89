package workload

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/workload/arrival"
	"github.com/polebench/polebench/zkserver"
)

// The harness's own path for a write, the pacer and the client, run against poled's
// client port over a single node that applies each write at
// once (zkserver.Standalone, no replication), in this process on loopback.

// standalone serves a Standalone backend on a loopback port until the test ends.
func standalone(t testing.TB) string {
	t.Helper()
	b := zkserver.NewStandalone(datatree.New(), nil)
	srv, err := zkserver.New(zkserver.Config{ServerID: 1, Tick: 50 * time.Millisecond}, b)
	if err != nil {
		t.Fatal(err)
	}
	b.OnApplied(srv.Applied)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); ln.Close(); <-done })
	return ln.Addr().String()
}

// openLoop runs rate req/s of 1 kB writes (split over two DCs, as the paper's) for d
// and returns the stats.
func openLoop(t *testing.T, rate float64, d time.Duration, kind arrival.Kind) Stats {
	t.Helper()
	addr := standalone(t)
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Servers: []Server{{ID: 1, DC: "D1", Addr: addr}, {ID: 2, DC: "D2", Addr: addr}},
		Rates: map[string]float64{"D1": rate / 2, "D2": rate / 2}, Arrival: kind, Seed: 1, Duration: d, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	st := res.Stats
	t.Logf("offered %.0f req/s (%s) for %v: achieved %.0f, ok %d of %d; send lag p50 %v p99 %v max %v",
		st.OfferedRate, kind, d, st.AchievedRate, st.OK, st.Requests, st.SendLag.P50, st.SendLag.P99, st.SendLag.Max)
	if st.OK != st.Requests {
		t.Fatalf("%d of %d requests not acknowledged", st.Requests-st.OK, st.Requests)
	}
	return st
}

// TestOpenLoopRate: the pacer and client drive an open loop at twice the paper's rate:
// every request is sent and acknowledged, and the achieved rate is within 2x of the
// schedule (a claim that holds by a factor on any host; how fast the pacer can go and
// its send lag are benchmarks' and the nightly suite's measurements).
func TestOpenLoopRate(t *testing.T) {
	st := openLoop(t, 2000, 3*time.Second, arrival.Poisson)
	if st.AchievedRate < st.ScheduledRate/2 {
		t.Errorf("achieved %.0f req/s of %.0f scheduled", st.AchievedRate, st.ScheduledRate)
	}
}

// deadAddr is a loopback address nothing listens on: a port just released.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestPrepareConnectFor: Prepare gives up on a server whose sessions never come, after
// ConnectFor, naming that server and its DC; a live server beside it does not hide it.
func TestPrepareConnectFor(t *testing.T) {
	live, dead := standalone(t), deadAddr(t)
	for _, tc := range []struct {
		name    string
		servers []Server
		want    string
	}{
		{"nothing listens", []Server{{ID: 1, DC: "D1", Addr: dead}}, "server 1 of D1 (" + dead + ")"},
		{"one of two", []Server{{ID: 1, DC: "D1", Addr: live}, {ID: 2, DC: "D2", Addr: dead}},
			"server 2 of D2 (" + dead + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := New(Config{Servers: tc.servers, SessionsPerServer: 1, ConnectFor: 500 * time.Millisecond, Log: testLog(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			err = w.Prepare(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Prepare: %v; want an error naming %q, a deadline exceeded", err, tc.want)
			}
		})
	}
}
