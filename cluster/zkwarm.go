package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZooKeeperWarmUp is how long New lets a ZooKeeper cluster serve writes before it
// returns it. A fresh JVM interprets its write path until the JIT has compiled it:
// without a warm-up, two-dc's before-crash means landed +47 (in CI) to +350 ms above the
// model, falling through the window, with the harness's own clients starved by the
// compiler threads (send lag p99 up to 1 s). The warm-up's writes per second still
// rose for 20 s (about 370 to 3600 on this project's 2-core machine); after 25 s the
// runs land +8 to +13 ms above the model, the level a 100 s run settles at. What
// polebench measures is ZooKeeper at its steady state, as a production ensemble runs.
const ZooKeeperWarmUp = 25 * time.Second

// Each server gets zkWarmSessions sessions with zkWarmWriters closed-loop writers each
// (many writes in flight: a cold JVM answers slowly, and the JIT compiles what runs often).
const (
	zkWarmSessions = 2
	zkWarmWriters  = 8
)

// warmUp waits for a leader and every server to serve, then writes 1 kB values
// through every server for d (each writer its own ephemeral znode, so nothing is left
// in the tree the run's workload uses). It logs the writes per second, second by
// second: they rise while the JIT compiles and level off once it is done.
func (z *ZKCluster) warmUp(ctx context.Context, d time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, zkStartTimeout)
	defer cancel()
	if _, err := WaitLeader(wctx, z.servers, z.Alive); err != nil {
		return fmt.Errorf("zookeeper warm-up: %w", err)
	}
	if err := WaitServing(wctx, z.servers, z.Alive); err != nil {
		return fmt.Errorf("zookeeper warm-up: %w", err)
	}
	t0 := time.Now()
	deadline := t0.Add(d)
	var mu sync.Mutex
	perSecond := make([]int, int(d/time.Second)+1)
	var wg sync.WaitGroup
	errs := make([]error, len(z.servers)*zkWarmSessions)
	value := make([]byte, 1024)
	for i, s := range z.servers {
		for k := range zkWarmSessions {
			wg.Go(func() {
				prefix := "/polebench-warmup-p" + strconv.Itoa(s.ID) + "-" + strconv.Itoa(k) + "-"
				err := zkWarmSession(ctx, s.Client, prefix, value, deadline, func(start time.Time) {
					mu.Lock()
					perSecond[min(int(start.Sub(t0)/time.Second), len(perSecond)-1)]++
					mu.Unlock()
				})
				if err != nil {
					errs[i*zkWarmSessions+k] = fmt.Errorf("p%d: %w", s.ID, err)
				}
			})
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("zookeeper warm-up: %w", err)
	}
	z.e.log.Info("zookeeper warmed up", "took", time.Since(t0).Round(time.Millisecond), "writes_per_second", perSecond[:len(perSecond)-1])
	return nil
}

// zkWarmSession opens a session to the server at addr, and its zkWarmWriters writers
// each write value to their own znode (prefix and a number), one write at a time, until
// deadline; done is told when each write started.
func zkWarmSession(ctx context.Context, addr, prefix string, value []byte, deadline time.Time, done func(start time.Time)) error {
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)), zk.WithLogInfo(false))
	if err != nil {
		return err
	}
	defer conn.Close()
	errs := make([]error, zkWarmWriters)
	var wg sync.WaitGroup
	for w := range zkWarmWriters {
		wg.Go(func() { errs[w] = zkWarmWriter(ctx, conn, prefix+strconv.Itoa(w), value, deadline, done) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func zkWarmWriter(ctx context.Context, conn *zk.Conn, path string, value []byte, deadline time.Time, done func(start time.Time)) error {
	if _, err := conn.Create(path, value, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	for ctx.Err() == nil {
		start := time.Now()
		if !start.Before(deadline) {
			return nil
		}
		if _, err := conn.Set(path, value, -1); err != nil {
			return fmt.Errorf("set %s: %w", path, err)
		}
		done(start)
	}
	return ctx.Err()
}
