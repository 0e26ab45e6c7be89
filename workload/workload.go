package workload

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

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/workload/arrival"
	"github.com/polebench/polebench/workload/client"
)

// Server is one replica as the workload sees it.
type Server struct {
	ID   int    // 1..N
	DC   string // data center name
	Addr string // client address, host:port
}

// Config describes a run. Zero values take the defaults noted.
type Config struct {
	Servers  []Server
	Rates    map[string]float64 // req/s per DC name; a DC without a rate sends nothing
	Arrival  arrival.Kind       // default arrival.Poisson
	Seed     uint64
	Duration time.Duration // pacing length; 0: until ctx is cancelled

	PayloadBytes      int           // default 1024
	Keys              int           // keyspace size, default 1000
	Prefix            string        // parent znode, default client.DefaultPrefix
	SessionsPerServer int           // default 4
	SessionTimeout    time.Duration // default 10 s
	// RetryFor bounds how long a request that could not be sent (no session of its DC
	// available) keeps waiting for one, from its intended time; default client.DefaultRetryFor.
	RetryFor time.Duration
	// Drain bounds the wait for in-flight requests after pacing ends; default
	// client.DefaultDrain. What is still in flight then is recorded unknown.
	Drain time.Duration
	// ConnectFor bounds Prepare's wait for every session of the servers not marked
	// down; default 30 s (a server just started, on a loaded host, takes seconds).
	ConnectFor time.Duration

	RecordsPath string // CSV records, gzip if it ends in .gz; "" keeps them in memory only
	RunID       string // tag written into every value; default from Start
	Log         *slog.Logger
}

// The defaults of the workload's own settings (the client core has the others).
const (
	defaultKeys           = 1000
	defaultSessionTimeout = 10 * time.Second
	defaultConnectFor     = 30 * time.Second
)

func (c *Config) setDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Arrival == "" {
		c.Arrival = arrival.Poisson
	}
	def(&c.PayloadBytes, 1024)
	def(&c.Keys, defaultKeys)
	def(&c.SessionsPerServer, 4)
	defDur(&c.SessionTimeout, defaultSessionTimeout)
	defDur(&c.RetryFor, client.DefaultRetryFor)
	defDur(&c.Drain, client.DefaultDrain)
	defDur(&c.ConnectFor, defaultConnectFor)
	if c.Prefix == "" {
		c.Prefix = client.DefaultPrefix
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) validate() error {
	if len(c.Servers) == 0 {
		return errors.New("workload: config: no servers")
	}
	seen := map[int]bool{}
	dcs := map[string]bool{}
	for i, s := range c.Servers {
		switch {
		case s.ID <= 0 || seen[s.ID]:
			return fmt.Errorf("workload: config: servers[%d]: id %d is not positive or repeated", i, s.ID)
		case s.DC == "" || s.Addr == "":
			return fmt.Errorf("workload: config: servers[%d] (id %d): dc and addr are required", i, s.ID)
		}
		seen[s.ID], dcs[s.DC] = true, true
	}
	for dc, r := range c.Rates {
		if !dcs[dc] {
			return fmt.Errorf("workload: config: rates: DC %q has no servers", dc)
		}
		if _, err := NewSchedule(arrival.Poisson, r, 0); r != 0 && err != nil {
			return fmt.Errorf("workload: config: rates[%q]: %w", dc, err)
		}
	}
	if c.Arrival != arrival.Poisson && c.Arrival != arrival.Constant {
		return fmt.Errorf("workload: config: arrival %q: want %q or %q", c.Arrival, arrival.Poisson, arrival.Constant)
	}
	if !strings.HasPrefix(c.Prefix, "/") || strings.HasSuffix(c.Prefix, "/") {
		return fmt.Errorf("workload: config: prefix %q must start and not end with /", c.Prefix)
	}
	if strings.ContainsAny(c.RunID, " \n") {
		return fmt.Errorf("workload: config: run id %q must not contain blanks", c.RunID)
	}
	return nil
}

// Protocol is a client protocol under the workload's loop: how to reach one server,
// write through it, create the keyspace and read it back. The loop (pacers, queues,
// the client core's steps, records, drain) is the same for every protocol.
type Protocol interface {
	// Dial starts cfg.SessionsPerServer connections to s without waiting for them;
	// gone says s is marked down (a connection may stop redialing then).
	Dial(cfg Config, s Server, gone func() bool) (Conn, error)
	// CreateKeys writes every key's initial value (request 0) through conns: those of
	// the servers not marked down, by server id.
	CreateKeys(ctx context.Context, cfg Config, conns []Conn) error
	// Verify reads every key back (from cfg.Servers; from cfg.Down if they answer) and
	// judges recs.
	Verify(ctx context.Context, cfg VerifyConfig, recs []Record) (*Verification, error)
}

// Conn is one server's connections. Its methods may be called from any goroutine.
type Conn interface {
	// Ready says how many of its connections are up: Prepare waits for all of them.
	Ready() (ready, of int)
	// Usable says whether a connection can take a request now.
	Usable() bool
	// Put writes value at key through a connection that can take it, calling sending
	// just before the write leaves (not at all if none can: client.Unavailable). ctx
	// ends when the workload gives up on what is in flight. The Written is the server's
	// word on an Acked write.
	Put(ctx context.Context, key string, value []byte, sending func()) (Written, client.Reply, string)
	// Close closes the connections; what is in flight returns.
	Close()
}

// Written is what a server said of an acknowledged write: its zxid (etcd: the
// revision) and the key's version after it.
type Written struct {
	Zxid    int64
	Version int32
}

// Workload is a prepared run: sessions to every server and a keyspace.
// ServerDown and ServerUp may be called from any goroutine while Run runs.
type Workload struct {
	cfg       Config
	proto     Protocol
	log       *slog.Logger
	servers   map[int]*server
	dcs       []*dc // sorted by name
	preparing atomic.Bool
	ready     atomic.Bool // Prepare succeeded
	ran       atomic.Bool
	start     time.Time
	hard      chan struct{}   // closed when waiting requests must give up
	reqs      context.Context // of the writes in flight: ends with hard
	endReqs   context.CancelFunc
	done      [4]atomic.Int64 // completed requests by outcome (OK, Failed, Unknown start at 1), for Progress
}

// Progress counts the requests completed so far: ok, failed, unknown. Safe to call
// from any goroutine while Run runs.
func (w *Workload) Progress() (ok, failed, unknown int64) {
	return w.done[OK].Load(), w.done[Failed].Load(), w.done[Unknown].Load()
}

type dc struct {
	name    string
	index   int
	rate    float64
	servers dcServers
	client  *client.DC
}

// dcServers are a DC's servers as the client core reads them.
type dcServers []*server

func (s dcServers) Len() int          { return len(s) }
func (s dcServers) Usable(i int) bool { return s[i].usable() }
func (s dcServers) Down(i int) bool   { return s[i].killed.Load() }

type server struct {
	Server
	killed atomic.Bool // the harness said it is down
	conn   Conn        // set by Prepare
}

// New checks cfg and builds the workload of the ZooKeeper protocol; no I/O.
func New(cfg Config) (*Workload, error) { return NewWith(cfg, ZooKeeper) }

// NewWith checks cfg and builds the workload of proto; no I/O.
func NewWith(cfg Config, proto Protocol) (*Workload, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	w := &Workload{cfg: cfg, proto: proto, log: cfg.Log, servers: map[int]*server{}, hard: make(chan struct{})}
	w.reqs, w.endReqs = context.WithCancel(context.Background())
	byDC := map[string]*dc{}
	for _, s := range cfg.Servers {
		d := byDC[s.DC]
		if d == nil {
			d = &dc{name: s.DC, rate: cfg.Rates[s.DC]}
			byDC[s.DC] = d
			w.dcs = append(w.dcs, d)
		}
		srv := &server{Server: s}
		d.servers = append(d.servers, srv)
		w.servers[s.ID] = srv
	}
	slices.SortFunc(w.dcs, func(a, b *dc) int { return strings.Compare(a.name, b.name) })
	for i, d := range w.dcs {
		d.index = i
		d.client = client.NewDC(client.Config{Seed: cfg.Seed, RetryFor: cfg.RetryFor}, d.name, d.servers,
			dcSeed(cfg.Seed, d.name, streamPick))
	}
	return w, nil
}

// Prepare opens SessionsPerServer sessions to every server, waits until all have a
// session (but those of servers marked down, which connect when they come back), and
// creates (or resets) the keyspace Prefix/k00000.. with initial values.
func (w *Workload) Prepare(ctx context.Context) error {
	if w.preparing.Swap(true) {
		return errors.New("workload: Prepare called twice")
	}
	for _, s := range w.sortedServers() {
		conn, err := w.proto.Dial(w.cfg, s.Server, s.killed.Load)
		if err != nil {
			return err
		}
		s.conn = conn
	}
	if err := w.awaitSessions(ctx); err != nil {
		return err
	}
	if w.cfg.RunID == "" {
		w.cfg.RunID = fmt.Sprintf("%x", time.Now().UnixNano())
	}
	var live []Conn
	for _, s := range w.sortedServers() {
		if !s.killed.Load() {
			live = append(live, s.conn)
		}
	}
	if len(live) == 0 {
		return errors.New("workload: creating keys: every server is marked down")
	}
	if err := w.proto.CreateKeys(ctx, w.cfg, live); err != nil {
		return err
	}
	w.ready.Store(true)
	return nil
}

// awaitSessions waits, up to ConnectFor, until every server not marked down has all
// its sessions. It polls: a session's readiness is an atomic its client's callback sets.
func (w *Workload) awaitSessions(ctx context.Context) error {
	ctx, cancel := context.WithTimeoutCause(ctx, w.cfg.ConnectFor,
		fmt.Errorf("not within connect_for %v: %w", w.cfg.ConnectFor, context.DeadlineExceeded))
	defer cancel()
	for _, s := range w.sortedServers() {
		for ready, of := s.conn.Ready(); !s.killed.Load() && ready < of; ready, of = s.conn.Ready() {
			select {
			case <-ctx.Done():
				return fmt.Errorf("workload: waiting for sessions to server %d of %s (%s): %d of %d ready: %w",
					s.ID, s.DC, s.Addr, ready, of, context.Cause(ctx))
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return nil
}

// PutKeys writes every key of cfg's keyspace with put, 32 at a time (one at a time
// would cost a WAN round trip per key), until the first error.
func PutKeys(ctx context.Context, cfg Config, put func(key string) error) error {
	keys := make(chan string)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for k := range keys {
				if err := put(k); err != nil {
					select {
					case errc <- fmt.Errorf("workload: creating %s: %w", k, err):
					default:
					}
				}
			}
		})
	}
	var err error
feed:
	for i := range cfg.Keys {
		select {
		case keys <- KeyPath(cfg.Prefix, i):
		case err = <-errc:
			break feed
		case <-ctx.Done():
			err = fmt.Errorf("workload: creating keys: %w", ctx.Err())
			break feed
		}
	}
	close(keys)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	if err == nil {
		cfg.Log.Info("keyspace ready", "prefix", cfg.Prefix, "keys", cfg.Keys, "run", cfg.RunID)
	}
	return err
}

// ServerDown tells the workload that server id was killed: no new request goes to it.
// Requests of a DC with no live server left fail at once.
func (w *Workload) ServerDown(id int) error {
	s, ok := w.servers[id]
	if !ok {
		return fmt.Errorf("workload: server down: unknown server %d", id)
	}
	s.killed.Store(true)
	w.log.Info("server down", "server", id)
	return nil
}

// ServerUp undoes ServerDown (a restart); its sessions reconnect by themselves.
func (w *Workload) ServerUp(id int) error {
	s, ok := w.servers[id]
	if !ok {
		return fmt.Errorf("workload: server up: unknown server %d", id)
	}
	s.killed.Store(false)
	w.log.Info("server up", "server", id)
	return nil
}

// Result is what Run measured.
type Result struct {
	Start   time.Time // zero of the records' offsets
	RunID   string
	Records []Record // sorted by intended time
	Stats   Stats
}

// Run is RunFrom(ctx, time.Now()).
func (w *Workload) Run(ctx context.Context) (*Result, error) { return w.RunFrom(ctx, time.Now()) }

// RunFrom paces requests from start (the zero of the run's clock: records are offsets
// from it, and a harness that picks it shares one clock with its events) until Duration
// or until ctx is cancelled, waits up to Drain for those in flight, closes the sessions
// and returns every request's record. A start in the past makes the pacers catch up.
// It can be called once, after Prepare. Cancelling ctx is a clean stop, not an error;
// errors are about writing the records.
func (w *Workload) RunFrom(ctx context.Context, start time.Time) (*Result, error) {
	if !w.ready.Load() {
		return nil, errors.New("workload: Run before a successful Prepare")
	}
	if w.ran.Swap(true) {
		return nil, errors.New("workload: Run called twice")
	}
	var rw *RecordWriter
	if w.cfg.RecordsPath != "" {
		var err error
		if rw, err = CreateRecords(w.cfg.RecordsPath); err != nil {
			return nil, err
		}
	}
	w.start = start

	recs := make(chan Record, 8192)
	var all []Record
	var werr error
	writerDone := make(chan struct{})
	go func() { // single writer: batches whatever has completed, then flushes it
		defer close(writerDone)
		batch := make([]Record, 0, 1024)
		for r := range recs {
			batch = append(batch[:0], r)
		more:
			for len(batch) < cap(batch) {
				select {
				case r, ok := <-recs:
					if !ok {
						break more
					}
					batch = append(batch, r)
				default:
					break more
				}
			}
			all = append(all, batch...)
			for _, r := range batch {
				if int(r.Outcome) < len(w.done) {
					w.done[r.Outcome].Add(1)
				}
			}
			if rw != nil && werr == nil {
				werr = rw.Write(batch...)
			}
		}
	}()

	stop := make(chan struct{})
	var pacers, reqs sync.WaitGroup
	for _, d := range w.dcs {
		if d.rate <= 0 {
			continue
		}
		sched, _ := NewSchedule(w.cfg.Arrival, d.rate, dcSeed(w.cfg.Seed, d.name, streamArrival)) // validated in New
		pool := &senders{queue: make(chan *request, 1<<16)}
		pool.do = func(r *request) {
			recs <- w.do(r)
			reqs.Done()
		}
		pacers.Add(1)
		go func() {
			defer pacers.Done()
			defer close(pool.queue)
			w.pace(d, sched, stop, &reqs, pool)
		}()
	}
	paced := make(chan struct{})
	go func() { pacers.Wait(); close(paced) }()
	select {
	case <-paced:
	case <-ctx.Done():
		w.log.Info("workload cancelled", "at", time.Since(w.start))
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
	w.closeSessions() // what is still in flight returns with an error now
	<-inflight
	close(recs)
	<-writerDone
	if rw != nil {
		werr = errors.Join(werr, rw.Close())
	}

	slices.SortFunc(all, func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.Intended, b.Intended), cmp.Compare(a.ID, b.ID))
	})
	dur := w.cfg.Duration
	if dur <= 0 {
		dur = pacingEnd
	}
	res := &Result{Start: w.start, RunID: w.cfg.RunID, Records: all, Stats: ComputeStats(all, dur, w.offered())}
	w.log.Info("workload done", "requests", len(all), "ok", res.Stats.OK, "failed", res.Stats.Failed,
		"unknown", res.Stats.Unknown, "achieved_rate", res.Stats.AchievedRate,
		"send_lag_p99", res.Stats.SendLag.P99)
	return res, werr
}

func (w *Workload) offered() float64 {
	var t float64
	for _, d := range w.dcs {
		t += d.rate
	}
	return t
}

// request is one write between its pacer and its outcome.
type request struct {
	dc  *dc
	key string
	c   client.Request
}

// pace issues d's requests on their absolute schedule, to pool's senders. It sleeps
// on the kernel's timer (netem.Waker): Go's timers fire up to a millisecond late,
// which would be most of the send lag at the paper's rate.
func (w *Workload) pace(d *dc, sched *Schedule, stop <-chan struct{}, reqs *sync.WaitGroup, pool *senders) {
	keyRng := rand.New(rand.NewPCG(dcSeed(w.cfg.Seed, d.name, streamKey), 1))
	waker, err := netem.NewWaker()
	if err != nil {
		w.log.Error("pacer without a timer: no requests from this DC", "dc", d.name, "err", err)
		return
	}
	defer waker.Close()
	paced := make(chan struct{})
	defer close(paced)
	go func() { // stop wakes the sleeping pacer
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
			return // stopped
		}
		select {
		case <-stop:
			return
		default:
		}
		r := &request{dc: d, key: KeyPath(w.cfg.Prefix, keyRng.IntN(w.cfg.Keys))}
		r.c = d.client.Issue(RequestID(d.index, seq), at)
		reqs.Add(1)
		pool.push(r)
	}
}

// senders send a DC's requests, a goroutine each, reused: the pool grows whenever a
// request finds no sender free, so that an open loop is never held back by the
// harness. A fixed pool (it was 256 a server) was: on etcd at 1,000 writes/s, the
// writes a follower forwarded to the killed leader each wait out etcd's request
// timeout (5 s plus two election timeouts), and D1's 512 senders were all waiting
// 1 s after the kill, so no write reached the new leader for 5.8 s more; the
// simulator, which has no such bound, served them at once.
type senders struct {
	queue chan *request
	do    func(*request)
	idle  atomic.Int64 // senders waiting for a request that no push has claimed
}

// push hands r to a free sender, or to a new one.
func (s *senders) push(r *request) {
	if s.idle.Add(-1) < 0 {
		s.idle.Add(1)
		go s.run() // claimed for r at its start
	}
	s.queue <- r
}

func (s *senders) run() {
	for r := range s.queue {
		s.do(r)
		s.idle.Add(1)
	}
}

func (s *server) usable() bool { return !s.killed.Load() && s.conn.Usable() }

func (w *Workload) since() time.Duration { return time.Since(w.start) }

// do takes r through the client core's steps until it has an outcome, and returns its record.
func (w *Workload) do(r *request) Record {
	cl := r.dc.client
	value := encodeValue(w.cfg.RunID, r.c.ID, w.cfg.PayloadBytes)
	var written Written
	for step := cl.Next(&r.c, w.since()); step.Action != client.End; {
		if step.Action == client.Send {
			step, written = w.send(r, r.dc.servers[step.Server], value)
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
	rec := RecordOf(&r.c, r.dc.name, r.key, id)
	if r.c.Outcome == OK {
		rec.Zxid, rec.Version = written.Zxid, written.Version
	}
	return rec
}

// send writes r's value through srv, as far as srv can take it.
func (w *Workload) send(r *request, srv *server, value []byte) (client.Step, Written) {
	cl := r.dc.client
	if srv.killed.Load() {
		return cl.Reply(&r.c, w.since(), client.Unavailable, ""), Written{}
	}
	written, reply, msg := srv.conn.Put(w.reqs, r.key, value, func() { cl.Sending(&r.c, w.since()) })
	return cl.Reply(&r.c, w.since(), reply, msg), written
}

func (w *Workload) sortedServers() []*server {
	var out []*server
	for _, s := range w.servers {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *server) int { return a.ID - b.ID })
	return out
}

func (w *Workload) closeSessions() {
	w.endReqs()
	var wg sync.WaitGroup
	for _, s := range w.servers {
		if s.conn != nil {
			wg.Go(s.conn.Close)
		}
	}
	wg.Wait()
}

// Close closes the sessions (Run does it too). Safe to call more than once.
func (w *Workload) Close() { w.closeSessions() }

// Run is New, Prepare, Run and Close in one call.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	w, err := New(cfg)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if err := w.Prepare(ctx); err != nil {
		return nil, err
	}
	return w.Run(ctx)
}

// Driver is a run of the workload through one flavor's client protocol (a *Workload
// over ProtocolOf(flavor)): what the harness drives. ServerDown, ServerUp and Progress
// may be called from any goroutine while RunFrom runs.
type Driver interface {
	Prepare(ctx context.Context) error
	RunFrom(ctx context.Context, start time.Time) (*Result, error)
	Progress() (ok, failed, unknown int64)
	ServerDown(id int) error
	ServerUp(id int) error
	// Verify reads every key back from the servers not marked down and judges recs.
	Verify(ctx context.Context, recs []Record) (*Verification, error)
	Close()
}

var _ Driver = (*Workload)(nil)

// Verify reads the keys back as its protocol does, with this run's read-back settings
// (VerifyConfig), and judges recs.
func (w *Workload) Verify(ctx context.Context, recs []Record) (*Verification, error) {
	return w.proto.Verify(ctx, w.VerifyConfig(), recs)
}

var protocols struct {
	sync.Mutex
	of map[string]Protocol
}

// RegisterProtocol makes Open and ProtocolOf use proto for flavor, from the init of
// the flavor's package. It panics on a flavor registered twice.
func RegisterProtocol(flavor string, proto Protocol) {
	protocols.Lock()
	defer protocols.Unlock()
	if _, dup := protocols.of[flavor]; dup {
		panic(fmt.Sprintf("workload: protocol of flavor %q registered twice", flavor))
	}
	if protocols.of == nil {
		protocols.of = map[string]Protocol{}
	}
	protocols.of[flavor] = proto
}

// ProtocolOf is the client protocol of flavor's servers: its registered one, else
// ZooKeeper's (poled and ZooKeeper).
func ProtocolOf(flavor string) Protocol {
	protocols.Lock()
	defer protocols.Unlock()
	if p, ok := protocols.of[flavor]; ok {
		return p
	}
	return ZooKeeper
}

// Open builds the workload for flavor's servers, over its protocol (ProtocolOf).
func Open(flavor string, cfg Config) (Driver, error) {
	w, err := NewWith(cfg, ProtocolOf(flavor))
	if err != nil {
		return nil, err // not a nil *Workload in a non-nil Driver
	}
	return w, nil
}

// Resolved is cfg with its defaults filled in, checked: what a driver of another
// protocol starts from, so that every driver runs the same defaults.
func (cfg Config) Resolved() (Config, error) {
	cfg.setDefaults()
	return cfg, cfg.validate()
}
