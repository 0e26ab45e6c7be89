// Package etcdclient is the workload's protocol for etcd (workload.Protocol): the same
// open-loop per-DC writes as the ZooKeeper protocol's, from the same loop, sent as Puts
// through etcd's Go client (clientv3), each client pinned to one member of its DC.
// The read-back reads every key through every live member and judges the history as
// workload.Verify does (workload.Judge: lost acknowledged writes, porcupine on each
// key's register).
package etcdclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/connectivity"

	"github.com/polebench/polebench/workload"
	"github.com/polebench/polebench/workload/client"
)

// Protocol is etcd's client protocol under the workload's loop (workload.NewWith) and
// the write benchmark's (package bench).
var Protocol workload.Protocol = protocol{}

type protocol struct{}

// dialTimeout bounds a client's first connection to its member.
const dialTimeout = 5 * time.Second

func newClient(addr string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{"http://" + addr}, DialTimeout: dialTimeout,
		Logger: zap.NewNop(), MaxCallSendMsgSize: 4 << 20})
}

// conn is one member's clients.
type conn struct {
	timeout time.Duration // of a Put
	clients []*clientv3.Client
	rr      atomic.Uint32
	closed  atomic.Bool
}

// Dial makes SessionsPerServer clients of member s; they connect in the background.
func (protocol) Dial(cfg workload.Config, s workload.Server, _ func() bool) (workload.Conn, error) {
	c := &conn{timeout: cfg.SessionTimeout}
	for range cfg.SessionsPerServer {
		cli, err := newClient(s.Addr)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("etcdclient: client of server %d (%s): %w", s.ID, s.Addr, err)
		}
		c.clients = append(c.clients, cli)
	}
	return c, nil
}

func up(c *clientv3.Client) bool {
	st := c.ActiveConnection().GetState()
	return st == connectivity.Ready || st == connectivity.Idle
}

func (c *conn) Ready() (ready, of int) {
	for _, cli := range c.clients {
		if up(cli) {
			ready++
		}
	}
	return ready, len(c.clients)
}

func (c *conn) Usable() bool { return c.client() != nil }

// client is one of c's clients whose connection is up (round robin), or nil.
func (c *conn) client() *clientv3.Client {
	n := uint32(len(c.clients))
	start := c.rr.Add(1)
	for i := range n {
		if cli := c.clients[(start+i)%n]; up(cli) {
			return cli
		}
	}
	return nil
}

// Put puts value at key through a client that is up. etcd's client does not say
// whether a failed Put left, so it may have committed (client.Lost).
func (c *conn) Put(ctx context.Context, key string, value []byte, sending func()) (workload.Written, client.Reply, string) {
	cli := c.client()
	if cli == nil {
		return workload.Written{}, client.Unavailable, ""
	}
	sending()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	resp, err := cli.Put(ctx, key, string(value), clientv3.WithPrevKV())
	cancel()
	if err != nil {
		return workload.Written{}, client.Lost, err.Error()
	}
	w := workload.Written{Zxid: resp.Header.Revision, Version: 1}
	if resp.PrevKv != nil {
		w.Version = int32(resp.PrevKv.Version + 1)
	}
	return w, client.Acked, ""
}

func (c *conn) Close() {
	if c.closed.Swap(true) {
		return
	}
	for _, cli := range c.clients {
		cli.Close()
	}
}

// createKeysFor bounds how long Prepare retries a key's initial write: a leader
// elected anew meanwhile (the run's schedule may start early) times writes out.
const createKeysFor = 20 * time.Second

// CreateKeys writes the keyspace through the first live member, each key again while
// it times out (the same value: writing it twice is writing it once) for up to
// createKeysFor.
func (protocol) CreateKeys(ctx context.Context, cfg workload.Config, conns []workload.Conn) error {
	cli := conns[0].(*conn).clients[0]
	init := string(workload.Value(cfg.RunID, 0, cfg.PayloadBytes))
	return workload.PutKeys(ctx, cfg, func(key string) error {
		for deadline := time.Now().Add(createKeysFor); ; {
			pctx, cancel := context.WithTimeout(ctx, cfg.SessionTimeout)
			_, err := cli.Put(pctx, key, init)
			cancel()
			if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
				return err
			}
			cfg.Log.Warn("creating a key again", "key", key, "err", err)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
}

// Verify reads every key back through each member (a linearizable range read: the
// member confirms it has what the leader committed first; one marked down is skipped
// if it does not answer) and judges recs: etcd's mod revision stands for the zxid,
// the key's version for the data version.
func (protocol) Verify(ctx context.Context, cfg workload.VerifyConfig, recs []workload.Record) (*workload.Verification, error) {
	all := append(slices.Clone(cfg.Servers), cfg.Down...)
	slices.SortFunc(all, func(a, b workload.Server) int { return a.ID - b.ID })
	var finals []workload.Final
	var ids []int
	for _, s := range all {
		f, err := readAll(ctx, cfg, s)
		if err != nil && slices.Contains(cfg.Down, s) {
			// Down, or restarted but not yet serving when the load ended.
			cfg.Log.Info("read-back skips a server marked down", "server", s.ID, "err", err)
			continue
		}
		if err != nil {
			return nil, err
		}
		ids = append(ids, s.ID)
		finals = append(finals, f...)
	}
	if len(ids) == 0 {
		return nil, errors.New("etcdclient: verify: no live server")
	}
	v := workload.Judge(recs, finals, cfg.RunID, cmp.Or(cfg.Linearizability, 10*time.Second), ids, cfg.Keys)
	cfg.Log.Info("verification", "reads", v.Reads, "acknowledged", v.Acknowledged, "lost", v.LostAcknowledgedWrites,
		"anomalies", len(v.Anomalies), "committed_unknown", v.CommittedUnknown, "linearizability", v.Linearizability)
	return v, nil
}

// readAll reads every key from server s with a fresh client (the run's are closed).
func readAll(ctx context.Context, cfg workload.VerifyConfig, s workload.Server) ([]workload.Final, error) {
	cli, err := newClient(s.Addr)
	if err != nil {
		return nil, fmt.Errorf("etcdclient: read-back client of server %d: %w", s.ID, err)
	}
	defer cli.Close()
	var resp *clientv3.GetResponse
	for try := 0; ; try++ {
		rctx, cancel := context.WithTimeout(ctx, cfg.SessionTimeout)
		resp, err = cli.Get(rctx, cfg.Prefix+"/", clientv3.WithPrefix())
		cancel()
		if err == nil || try == 2 || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("etcdclient: read-back of server %d: %w", s.ID, err)
	}
	got := map[string]int{}
	for i, kv := range resp.Kvs {
		got[string(kv.Key)] = i
	}
	out := make([]workload.Final, 0, cfg.Keys)
	for i := range cfg.Keys {
		k := workload.KeyPath(cfg.Prefix, i)
		f := workload.Final{Server: s.ID, Key: k}
		if j, ok := got[k]; ok {
			kv := resp.Kvs[j]
			f.Data, f.Mzxid, f.Version = kv.Value, kv.ModRevision, int32(kv.Version)
		} else {
			f.Err = errors.New("no such key")
		}
		out = append(out, f)
	}
	return out, nil
}
