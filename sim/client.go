package sim

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/workload"
	"github.com/polebench/polebench/workload/client"
	"github.com/polebench/polebench/zkserver"
)

// dcClient is one DC's pacer, with the workload's random streams, and its client core.
type dcClient struct {
	name    string
	index   int
	rate    float64
	servers dcServers
	client  *client.DC
	sched   *workload.Schedule
	keyRng  *rand.Rand
	seq     uint64
	next    time.Duration // the intended time of the request pace scheduled
	issue   func()        // pace's event, made once (not a closure per request)
}

// dcServers are a DC's servers as the client core reads them.
type dcServers []*server

func (d dcServers) Len() int          { return len(d) }
func (d dcServers) Usable(i int) bool { return d[i].usable() }
func (d dcServers) Down(i int) bool   { return d[i].harnessDown }

// request is one write between its pacer and its outcome.
type request struct {
	s   *Sim
	dc  *dcClient
	c   client.Request
	key string
	// What the acknowledgement said (OK only).
	zxid    int64
	version int32
	// The request's next step, one at a time: reaching srv (incarnation inc), then
	// srv's loop taking it (it was received at recv). step is its event, made once
	// per request rather than a closure per step, and dropped after the last (the
	// run keeps every request: the collector would scan each one's).
	stage stage
	srv   *server
	inc   int
	recv  int64
	step  func()
}

type stage uint8

const (
	toServer stage = iota // the client hop
	toLoop                // waiting for the server's CPU
)

// advance takes the request's next step.
func (r *request) advance() {
	switch r.stage {
	case toServer:
		if r.c.Ended() {
			return
		}
		if !r.srv.alive(r.inc) {
			r.reply(client.Lost, "connection closed: server killed", datatree.Stat{})
			return
		}
		r.srv.submit(r)
	case toLoop:
		r.srv.take(r)
	}
}

// load runs the workload (and the nemesis) for the spec's duration, then waits for
// what is in flight, as workload.RunFrom does.
func (s *Sim) load(ctx context.Context) {
	for _, p := range s.all() {
		p.start = s.now
	}
	s.harness = append(s.harness, record.Harness(0, event.LoadStart, 0, nil))
	// The links' schedules count from here, and change exactly at their instants.
	for _, at := range s.cfg.Plan.Instants() {
		changed := map[int]bool{}
		for _, l := range s.cfg.Plan.Changed(at) {
			changed[l[0]] = true
		}
		for _, id := range slices.Sorted(maps.Keys(changed)) {
			s.harness = append(s.harness, record.Harness(at, event.LinkChange, id, nil))
		}
	}
	byDC := map[string]*dcClient{}
	for _, srv := range s.servers[1:] {
		c := byDC[srv.dc]
		if c == nil {
			c = &dcClient{name: srv.dc, rate: s.cfg.Rates[srv.dc]}
			byDC[srv.dc] = c
		}
		c.servers = append(c.servers, srv)
	}
	names := slices.Sorted(maps.Keys(byDC))
	for i, name := range names {
		c := byDC[name]
		c.index = i // its servers' partition, too (partOf)
		s.clients = append(s.clients, c)
		if c.rate <= 0 {
			continue
		}
		arrival, key, pick := workload.Seeds(s.cfg.Seed, name)
		c.client = client.NewDC(client.Config{Seed: s.cfg.Seed}, name, c.servers, pick)
		var err error
		if c.sched, err = workload.NewSchedule(s.cfg.Arrival, c.rate, arrival); err != nil {
			s.fail(err)
			return
		}
		c.keyRng = rand.New(rand.NewPCG(key, 1))
		s.pace(c)
	}
	nemesis.Play(ctx, clock{s}, target{s}, s.cfg.Faults, s.observer())
	if s.runUntil(ctx, s.start+int64(s.cfg.Duration)) == nil {
		s.runWhile(ctx, s.inFlight, time.Millisecond, client.DefaultDrain)
	}
	why := "still in flight after the drain"
	if ctx.Err() != nil { // interrupted: what was in flight may yet commit
		why = "in flight when the run was interrupted"
	}
	for _, r := range s.allReqs() {
		r.reply(client.Lost, why, datatree.Stat{}) // (one waiting for a server too)
	}
	s.harness = append(s.harness, record.Harness(s.since(), event.LoadEnd, 0, nil))
}

func (s *Sim) inFlight() bool {
	n := s.open
	if s.win != nil {
		for _, p := range s.win.ps {
			n += p.open
		}
	}
	return n > 0
}

// all is the Sim and its partitions.
func (s *Sim) all() []*Sim {
	if s.win == nil {
		return []*Sim{s}
	}
	return append([]*Sim{s}, s.win.ps...)
}

// allReqs is every partition's requests.
func (s *Sim) allReqs() []*request {
	var out []*request
	for _, p := range s.all() {
		out = append(out, p.reqs...)
	}
	return out
}

// pace issues c's next request at its intended time.
func (s *Sim) pace(c *dcClient) {
	c.next = c.sched.Next()
	if c.next >= s.cfg.Duration {
		return
	}
	if c.issue == nil {
		p := s.part(c.index) // it runs in its DC's partition
		c.issue = func() { p.issue(c) }
	}
	s.at(c.index, s.start+int64(c.next), c.issue)
}

// issue starts c's request intended now, and paces the next.
func (s *Sim) issue(c *dcClient) {
	c.seq++
	r := &request{s: s, dc: c, key: s.keys[c.keyRng.IntN(s.cfg.Keys)], version: -1}
	r.step = r.advance
	r.c = c.client.Issue(workload.RequestID(c.index, c.seq), c.next)
	s.reqs = append(s.reqs, r)
	s.open++
	r.try()
	s.pace(c)
}

// try takes the client core's next step.
func (r *request) try() { r.follow(r.dc.client.Next(&r.c, r.s.since())) }

// follow does what the client core decided: send to a server (the client hop), wait
// for one (until the drain is over), or nothing more.
func (r *request) follow(step client.Step) {
	s := r.s
	switch step.Action {
	case client.Send:
		srv := r.dc.servers[step.Server]
		r.dc.client.Sending(&r.c, s.since())
		r.stage, r.srv, r.inc = toServer, srv, srv.inc
		s.after(srv.part, s.cfg.ClientDelay, r.step)
		return
	case client.Wait:
		if s.since() < s.cfg.Duration+client.DefaultDrain {
			s.after(r.dc.index, step.After, func() {
				if !r.c.Ended() {
					r.try()
				}
			})
			return
		}
		r.dc.client.Stop(&r.c, s.since())
	}
	r.finish()
}

// reply is what the server made of the request; an acknowledgement takes the client
// hop back.
func (r *request) reply(kind client.Reply, msg string, st datatree.Stat) {
	if r.c.Ended() {
		return
	}
	at := r.s.since()
	if kind == client.Acked {
		r.zxid, r.version = st.Mzxid, st.Version
		at += r.s.cfg.ClientDelay
	}
	r.follow(r.dc.client.Reply(&r.c, at, kind, msg))
}

// finish is the end of a request's events.
func (r *request) finish() {
	r.step = nil
	r.s.open--
}

// records are the requests' records in the workload's order.
func (s *Sim) records() []workload.Record {
	reqs := s.allReqs()
	out := make([]workload.Record, 0, len(reqs))
	for _, r := range reqs {
		var id int
		if r.c.Server >= 0 {
			id = r.dc.servers[r.c.Server].id
		}
		rec := workload.RecordOf(&r.c, r.dc.name, r.key, id)
		rec.Zxid, rec.Version = r.zxid, r.version
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b workload.Record) int {
		return cmp.Or(cmp.Compare(a.Intended, b.Intended), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// createKeys makes the keyspace through the leader, as Prepare does, with id 0's value.
func (s *Sim) createKeys(ctx context.Context, leader *server) error {
	pending := 0
	var failed error
	submit := func(op datatree.Op) {
		pending++
		leader.d.Submit(datatree.Txn{Time: s.wall().UnixMilli(), Op: op}, false, func(o zkserver.Outcome) {
			pending--
			if o.Err != nil && failed == nil {
				failed = o.Err
			} else if o.Err == nil && o.Result.Err != datatree.Ok && o.Result.Err != datatree.NodeExists && failed == nil {
				failed = fmt.Errorf("%v", o.Result.Err)
			}
		})
	}
	parts := strings.Split(client.DefaultPrefix, "/")[1:]
	for i := range parts {
		submit(datatree.Create("/"+strings.Join(parts[:i+1], "/"), nil, 0))
	}
	init := workload.Value(s.runID, 0, s.cfg.PayloadBytes)
	for i := range s.cfg.Keys {
		submit(datatree.Create(s.keys[i], init, 0))
	}
	leader.drain()
	if !s.runWhile(ctx, func() bool { return pending > 0 }, time.Millisecond, time.Minute) || failed != nil {
		return fmt.Errorf("sim: creating the keyspace: %d creates unanswered, error %v", pending, failed)
	}
	// Let the followers apply them too before the load starts.
	s.runUntil(ctx, s.now+int64(100*time.Millisecond))
	return s.err
}

func sortedKeys[V any](m map[uint64]V) []uint64 { return slices.Sorted(maps.Keys(m)) }
