// Package etcdclient is the workload's driver for etcd's protocol: the same open-loop
// per-DC writes as the ZooKeeper protocol's (package workload: the same schedules,
// keys, server picks and values from the same seeds, latency from the intended send
// time, the same records), sent as Puts through etcd's Go client (clientv3), each
// client pinned to one member of its DC. The read-back reads every key through every
// live member and judges the history as workload.Verify does (workload.Judge: lost
// acknowledged writes, porcupine on each key's register).
package etcdclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/connectivity"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/workload"
	"github.com/polebench/polebench/workload/client"
)

// Workload is a prepared run: clients to every member and a keyspace.
type Workload struct {
	cfg     workload.Config
	log     *slog.Logger
	servers map[int]*server
	dcs     []*dc // by name
	ready   atomic.Bool
	ran     atomic.Bool
	start   time.Time
	hard    chan struct{} // closed when waiting requests must give up
	stop    context.CancelFunc
	ctx     context.Context // of the requests: cancelled once the drain is over
	done    [4]atomic.Int64
}

var _ workload.Driver = (*Workload)(nil)

type dc struct {
	name    string
	index   int
	rate    float64
	servers servers
	client  *client.DC
}

// servers are a DC's servers as the client core reads them (client.Servers).
type servers []*server

func (ss servers) Len() int          { return len(ss) }
func (ss servers) Usable(i int) bool { return ss[i].usable() }
func (ss servers) Down(i int) bool   { return ss[i].killed.Load() }

type server struct {
	workload.Server
	killed  atomic.Bool
	clients []*clientv3.Client
	rr      atomic.Uint32
	sem     chan struct{}
}

// New checks cfg (workload.Config's defaults apply) and builds the workload; no I/O.
func New(cfg workload.Config) (*Workload, error) {
	cfg, err := cfg.Resolved()
	if err != nil {
		return nil, err
	}
	w := &Workload{cfg: cfg, log: cfg.Log, servers: map[int]*server{}, hard: make(chan struct{})}
	w.ctx, w.stop = context.WithCancel(context.Background())
	byDC := map[string]*dc{}
	for _, s := range cfg.Servers {
		d := byDC[s.DC]
		if d == nil {
			d = &dc{name: s.DC, rate: cfg.Rates[s.DC]}
			byDC[s.DC] = d
			w.dcs = append(w.dcs, d)
		}
		srv := &server{Server: s, sem: make(chan struct{}, cfg.MaxInFlight)}
		d.servers = append(d.servers, srv)
		w.servers[s.ID] = srv
	}
	slices.SortFunc(w.dcs, func(a, b *dc) int { return strings.Compare(a.name, b.name) })
	for i, d := range w.dcs {
		d.index = i
		_, _, pickSeed := workload.Seeds(cfg.Seed, d.name)
		d.client = client.NewDC(client.Config{Seed: cfg.Seed, RetryFor: cfg.RetryFor}, d.name, d.servers, pickSeed)
	}
	return w, nil
}

// dialTimeout bounds a client's first connection to its member.
const dialTimeout = 5 * time.Second

func newClient(addr string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{"http://" + addr}, DialTimeout: dialTimeout,
		Logger: zap.NewNop(), MaxCallSendMsgSize: 4 << 20})
}

// Prepare connects SessionsPerServer clients to every member not marked down and
// writes every key's initial value (request id 0).
func (w *Workload) Prepare(ctx context.Context) error {
	for _, s := range w.sorted() {
		if s.killed.Load() {
			continue
		}
		for range w.cfg.SessionsPerServer {
			cli, err := newClient(s.Addr)
			if err != nil {
				return fmt.Errorf("etcdclient: client of server %d (%s): %w", s.ID, s.Addr, err)
			}
			s.clients = append(s.clients, cli)
		}
	}
	if w.cfg.RunID == "" {
		w.cfg.RunID = fmt.Sprintf("%x", time.Now().UnixNano())
	}
	if err := w.createKeys(ctx); err != nil {
		return err
	}
	w.ready.Store(true)
	return nil
}

// createKeys writes the keyspace through the first live member, 32 Puts at a time (one
// at a time would cost a WAN round trip per key).
func (w *Workload) createKeys(ctx context.Context) error {
	var cli *clientv3.Client
	for _, s := range w.sorted() {
		if len(s.clients) > 0 {
			cli = s.clients[0]
			break
		}
	}
	if cli == nil {
		return errors.New("etcdclient: creating keys: no live server")
	}
	init := workload.Value(w.cfg.RunID, 0, w.cfg.PayloadBytes)
	keys := make(chan string)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for k := range keys {
				err := w.putInit(ctx, cli, k, string(init))
				if err != nil {
					mu.Lock()
					first = cmp.Or(first, fmt.Errorf("etcdclient: creating %s: %w", k, err))
					mu.Unlock()
				}
			}
		})
	}
	for i := range w.cfg.Keys {
		keys <- workload.KeyPath(w.cfg.Prefix, i)
	}
	close(keys)
	wg.Wait()
	if first == nil {
		w.log.Info("keyspace ready", "prefix", w.cfg.Prefix, "keys", w.cfg.Keys, "run", w.cfg.RunID)
	}
	return first
}

// createKeysFor bounds how long Prepare retries a key's initial write: a leader
// elected anew meanwhile (the run's schedule may start early) times writes out.
const createKeysFor = 20 * time.Second

// putInit writes a key's initial value, again while it times out (the same value:
// writing it twice is writing it once) for up to createKeysFor.
func (w *Workload) putInit(ctx context.Context, cli *clientv3.Client, key, val string) error {
	deadline := time.Now().Add(createKeysFor)
	for {
		pctx, cancel := context.WithTimeout(ctx, w.cfg.SessionTimeout)
		_, err := cli.Put(pctx, key, val)
		cancel()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		w.log.Warn("creating a key again", "key", key, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Progress counts the requests completed so far: ok, failed, unknown.
func (w *Workload) Progress() (ok, failed, unknown int64) {
	return w.done[workload.OK].Load(), w.done[workload.Failed].Load(), w.done[workload.Unknown].Load()
}

// ServerDown tells the workload that server id was killed: no new request goes to it.
func (w *Workload) ServerDown(id int) error {
	s, ok := w.servers[id]
	if !ok {
		return fmt.Errorf("etcdclient: server down: unknown server %d", id)
	}
	s.killed.Store(true)
	return nil
}

// ServerUp undoes ServerDown (a restart); the clients reconnect by themselves.
func (w *Workload) ServerUp(id int) error {
	s, ok := w.servers[id]
	if !ok {
		return fmt.Errorf("etcdclient: server up: unknown server %d", id)
	}
	s.killed.Store(false)
	return nil
}

// RunFrom paces requests from start until Duration or ctx ends, waits up to Drain for
// those in flight (the rest are recorded unknown) and returns every request's record,
// as workload.Workload.RunFrom does.
func (w *Workload) RunFrom(ctx context.Context, start time.Time) (*workload.Result, error) {
	if !w.ready.Load() {
		return nil, errors.New("etcdclient: Run before a successful Prepare")
	}
	if w.ran.Swap(true) {
		return nil, errors.New("etcdclient: Run called twice")
	}
	var rw *workload.RecordWriter
	if w.cfg.RecordsPath != "" {
		var err error
		if rw, err = workload.CreateRecords(w.cfg.RecordsPath); err != nil {
			return nil, err
		}
	}
	w.start = start
	recs := make(chan workload.Record, 8192)
	var all []workload.Record
	var werr error
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for r := range recs {
			all = append(all, r)
			w.done[r.Outcome].Add(1)
			if rw != nil && werr == nil {
				werr = rw.Write(r)
			}
		}
	}()
	stop := make(chan struct{})
	var pacers, reqs sync.WaitGroup
	for _, d := range w.dcs {
		if d.rate <= 0 {
			continue
		}
		arrivalSeed, keySeed, _ := workload.Seeds(w.cfg.Seed, d.name)
		sched, err := workload.NewSchedule(w.cfg.Arrival, d.rate, arrivalSeed)
		if err != nil {
			return nil, err
		}
		queue := make(chan *request, 1<<16)
		for range len(d.servers) * w.cfg.MaxInFlight {
			go func() {
				for r := range queue {
					recs <- w.do(r)
					reqs.Done()
				}
			}()
		}
		pacers.Go(func() {
			defer close(queue)
			w.pace(d, sched, keySeed, stop, &reqs, queue)
		})
	}
	paced := make(chan struct{})
	go func() { pacers.Wait(); close(paced) }()
	select {
	case <-paced:
	case <-ctx.Done():
	}
	close(stop)
	<-paced
	pacingEnd := time.Since(w.start)
	inflight := make(chan struct{})
	go func() { reqs.Wait(); close(inflight) }()
	select {
	case <-inflight:
	case <-time.After(w.cfg.Drain):
		w.log.Warn("requests still in flight after drain; recording them unknown", "drain", w.cfg.Drain)
	}
	close(w.hard)
	w.stop() // what is still in flight returns with an error now
	<-inflight
	close(recs)
	<-writerDone
	if rw != nil {
		werr = errors.Join(werr, rw.Close())
	}
	slices.SortFunc(all, func(a, b workload.Record) int {
		return cmp.Or(cmp.Compare(a.Intended, b.Intended), cmp.Compare(a.ID, b.ID))
	})
	dur := cmp.Or(w.cfg.Duration, pacingEnd)
	var offered float64
	for _, d := range w.dcs {
		offered += d.rate
	}
	res := &workload.Result{Start: w.start, RunID: w.cfg.RunID, Records: all, Stats: workload.ComputeStats(all, dur, offered)}
	w.log.Info("workload done", "requests", len(all), "ok", res.Stats.OK, "failed", res.Stats.Failed, "unknown", res.Stats.Unknown)
	return res, werr
}

// request is one write between its pacer and its outcome.
type request struct {
	c   client.Request
	dc  *dc
	key string
}

// pace issues d's requests on their absolute schedule, sleeping on the kernel's timer
// as the ZooKeeper protocol's pacer does.
func (w *Workload) pace(d *dc, sched *workload.Schedule, keySeed uint64, stop <-chan struct{}, reqs *sync.WaitGroup, queue chan<- *request) {
	keyRng := rand.New(rand.NewPCG(keySeed, 1))
	waker, err := netem.NewWaker()
	if err != nil {
		w.log.Error("pacer without a timer: no requests from this DC", "dc", d.name, "err", err)
		return
	}
	defer waker.Close()
	paced := make(chan struct{})
	defer close(paced)
	go func() {
		select {
		case <-stop:
			waker.Close()
		case <-paced:
		}
	}()
	start := netem.At(w.start)
	for seq := uint64(1); ; seq++ {
		at := sched.Next()
		if w.cfg.Duration > 0 && at >= w.cfg.Duration {
			return
		}
		if err := waker.SleepUntil(start + int64(at)); err != nil {
			return
		}
		select {
		case <-stop:
			return
		default:
		}
		r := &request{c: d.client.Issue(workload.RequestID(d.index, seq), at), dc: d, key: workload.KeyPath(w.cfg.Prefix, keyRng.IntN(w.cfg.Keys))}
		reqs.Add(1)
		queue <- r
	}
}

func (s *server) usable() bool { return !s.killed.Load() && s.client() != nil }

// client is one of s's clients whose connection is up (round robin), or nil.
func (s *server) client() *clientv3.Client {
	n := uint32(len(s.clients))
	start := s.rr.Add(1)
	for i := range n {
		c := s.clients[(start+i)%n]
		if st := c.ActiveConnection().GetState(); st == connectivity.Ready || st == connectivity.Idle {
			return c
		}
	}
	return nil
}

func (w *Workload) since() time.Duration { return time.Since(w.start) }

// do takes r through the client core's steps until it has an outcome, and returns
// its record.
func (w *Workload) do(r *request) workload.Record {
	cl := r.dc.client
	value := string(workload.Value(w.cfg.RunID, r.c.ID, w.cfg.PayloadBytes))
	var resp *clientv3.PutResponse
	for step := cl.Next(&r.c, w.since()); step.Action != client.End; {
		if step.Action == client.Send {
			step, resp = w.send(r, r.dc.servers[step.Server], value)
			continue
		}
		select {
		case <-time.After(step.After):
			step = cl.Next(&r.c, w.since())
		case <-w.hard:
			step = cl.Stop(&r.c, w.since())
		}
	}
	var id int
	if r.c.Server >= 0 {
		id = r.dc.servers[r.c.Server].ID
	}
	rec := workload.RecordOf(&r.c, r.dc.name, r.key, id)
	if r.c.Outcome == workload.OK {
		rec.Zxid, rec.Version = resp.Header.Revision, 1
		if resp.PrevKv != nil {
			rec.Version = int32(resp.PrevKv.Version + 1)
		}
	}
	return rec
}

// send puts r's value through srv's client, as far as srv can take it.
func (w *Workload) send(r *request, srv *server, value string) (client.Step, *clientv3.PutResponse) {
	cl := r.dc.client
	select {
	case srv.sem <- struct{}{}:
	case <-w.hard:
		return cl.Stop(&r.c, w.since()), nil
	}
	cli := srv.client()
	if cli == nil || srv.killed.Load() {
		<-srv.sem
		return cl.Reply(&r.c, w.since(), client.Unavailable, ""), nil
	}
	cl.Sending(&r.c, w.since())
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.SessionTimeout)
	resp, err := cli.Put(ctx, r.key, value, clientv3.WithPrevKV())
	cancel()
	<-srv.sem
	if err != nil {
		return cl.Reply(&r.c, w.since(), replyOf(err), err.Error()), nil
	}
	return cl.Reply(&r.c, w.since(), client.Acked, ""), resp
}

// replyOf maps a Put's error to the client core's reply: etcd's client does not say
// whether a failed Put left, so it may have committed (Lost).
func replyOf(error) client.Reply { return client.Lost }

func (w *Workload) sorted() []*server {
	out := make([]*server, 0, len(w.servers))
	for _, s := range w.servers {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *server) int { return a.ID - b.ID })
	return out
}

// Close closes every client. Safe to call more than once.
func (w *Workload) Close() {
	w.stop()
	for _, s := range w.servers {
		for _, c := range s.clients {
			c.Close()
		}
	}
}

// Verify reads every key back through each member (a linearizable range read: the
// member confirms it has what the leader committed first; one marked down is skipped
// if it does not answer) and judges
// recs: etcd's mod revision stands for the zxid, the key's version for the data
// version.
func (w *Workload) Verify(ctx context.Context, recs []workload.Record) (*workload.Verification, error) {
	var finals []workload.Final
	var ids []int
	for _, s := range w.sorted() {
		f, err := w.readAll(ctx, s)
		if err != nil && s.killed.Load() {
			// Down, or restarted but not yet serving when the load ended.
			w.log.Info("read-back skips a server marked down", "server", s.ID, "err", err)
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
	v := workload.Judge(recs, finals, w.cfg.RunID, 10*time.Second, ids, w.cfg.Keys)
	w.log.Info("verification", "reads", v.Reads, "acknowledged", v.Acknowledged, "lost", v.LostAcknowledgedWrites,
		"anomalies", len(v.Anomalies), "committed_unknown", v.CommittedUnknown, "linearizability", v.Linearizability)
	return v, nil
}

// readAll reads every key from server s with a fresh client (the run's are closed).
func (w *Workload) readAll(ctx context.Context, s *server) ([]workload.Final, error) {
	cli, err := newClient(s.Addr)
	if err != nil {
		return nil, fmt.Errorf("etcdclient: read-back client of server %d: %w", s.ID, err)
	}
	defer cli.Close()
	var resp *clientv3.GetResponse
	for try := 0; ; try++ {
		rctx, cancel := context.WithTimeout(ctx, w.cfg.SessionTimeout)
		resp, err = cli.Get(rctx, w.cfg.Prefix+"/", clientv3.WithPrefix())
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
	out := make([]workload.Final, 0, w.cfg.Keys)
	for i := range w.cfg.Keys {
		k := workload.KeyPath(w.cfg.Prefix, i)
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
