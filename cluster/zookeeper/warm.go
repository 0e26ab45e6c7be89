package zookeeper

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

	"github.com/polebench/polebench/cluster"
)

// WarmUp is how long cluster.New lets a ZooKeeper cluster serve writes before it
// returns it. A fresh JVM interprets its write path until the JIT has compiled it:
// without a warm-up, two-dc's before-crash means landed far above the model, falling
// through the window, with the harness's own clients starved by the compiler threads.
// The warm-up's writes per second rise for a while (the log says by how much, second
// by second); after this long the runs land where a long run settles. What polebench
// measures is ZooKeeper at its steady state, as a production ensemble runs.
const WarmUp = 25 * time.Second

// Each server gets warmSessions sessions with warmWriters closed-loop writers each
// (many writes in flight: a cold JVM answers slowly, and the JIT compiles what runs often).
const (
	warmSessions = 2
	warmWriters  = 8
)

// warmUp waits for a leader and every server to serve, then writes 1 kB values
// through every server for d (each writer its own ephemeral znode, so nothing is left
// in the tree the run's workload uses). It logs the writes per second, second by
// second: they rise while the JIT compiles and level off once it is done.
func (z *Cluster) warmUp(ctx context.Context, d time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if _, err := cluster.WaitLeader(wctx, z.servers, z.Alive); err != nil {
		return fmt.Errorf("zookeeper warm-up: %w", err)
	}
	if err := cluster.WaitServing(wctx, z.servers, z.Alive); err != nil {
		return fmt.Errorf("zookeeper warm-up: %w", err)
	}
	t0 := time.Now()
	deadline := t0.Add(d)
	var mu sync.Mutex
	perSecond := make([]int, int(d/time.Second)+1)
	var wg sync.WaitGroup
	errs := make([]error, len(z.servers)*warmSessions)
	value := make([]byte, 1024)
	for i, s := range z.servers {
		for k := range warmSessions {
			wg.Go(func() {
				prefix := "/polebench-warmup-p" + strconv.Itoa(s.ID) + "-" + strconv.Itoa(k) + "-"
				err := warmSession(ctx, s.Client, prefix, value, deadline, func(start time.Time) {
					mu.Lock()
					perSecond[min(int(start.Sub(t0)/time.Second), len(perSecond)-1)]++
					mu.Unlock()
				})
				if err != nil {
					errs[i*warmSessions+k] = fmt.Errorf("p%d: %w", s.ID, err)
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

// warmSession opens a session to the server at addr, and its warmWriters writers
// each write value to their own znode (prefix and a number), one write at a time, until
// deadline; done is told when each write started.
func warmSession(ctx context.Context, addr, prefix string, value []byte, deadline time.Time, done func(start time.Time)) error {
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)), zk.WithLogInfo(false))
	if err != nil {
		return err
	}
	defer conn.Close()
	errs := make([]error, warmWriters)
	var wg sync.WaitGroup
	for w := range warmWriters {
		wg.Go(func() { errs[w] = warmWriter(ctx, conn, prefix+strconv.Itoa(w), value, deadline, done) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func warmWriter(ctx context.Context, conn *zk.Conn, path string, value []byte, deadline time.Time, done func(start time.Time)) error {
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
