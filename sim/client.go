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
	"github.com/polebench/polebench/zkserver"
)

const (
	keyPrefix = "/polebench"
	// retryFor and drainFor are the workload's defaults: how long a request that found
	// no server waits for one, and how long the end of a run waits for what is in flight.
	retryFor = 10 * time.Second
	drainFor = 5 * time.Second
)

// dcClient is one DC's pacer, with the workload's random streams.
type dcClient struct {
	name    string
	index   int
	rate    float64
	servers []*server
	sched   *workload.Schedule
	keyRng  *rand.Rand
	pickRng *rand.Rand
	seq     uint64
	next    time.Duration // the intended time of the request pace scheduled
	issue   func()        // pace's event, made once (not a closure per request)
}

// request is one write between its pacer and its outcome.
type request struct {
	s     *Sim
	id    uint64
	dc    *dcClient
	rec   workload.Record
	rng   *rand.Rand // re-picks only
	ended bool
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
		if r.ended {
			return
		}
		if !r.srv.alive(r.inc) {
			r.end(workload.Unknown, "connection closed: server killed", datatree.Stat{})
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
		var err error
		if c.sched, err = workload.NewSchedule(s.cfg.Arrival, c.rate, arrival); err != nil {
			s.fail(err)
			return
		}
		c.keyRng = rand.New(rand.NewPCG(key, 1))
		c.pickRng = rand.New(rand.NewPCG(pick, 2))
		s.pace(c)
	}
	nemesis.Play(ctx, clock{s}, target{s}, s.cfg.Faults, s.observer())
	if s.runUntil(ctx, s.start+int64(s.cfg.Duration)) == nil {
		s.runWhile(ctx, s.inFlight, time.Millisecond, drainFor)
	}
	why := "still in flight after the drain"
	if ctx.Err() != nil { // interrupted: what was in flight may yet commit
		why = "in flight when the run was interrupted"
	}
	for _, r := range s.allReqs() {
		if !r.ended {
			r.end(workload.Unknown, why, datatree.Stat{})
		}
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
	r := &request{s: s, id: workload.RequestID(c.index, c.seq), dc: c}
	r.step = r.advance
	r.rec = workload.Record{ID: r.id, DC: c.name, Key: s.keys[c.keyRng.IntN(s.cfg.Keys)],
		Intended: c.next, Sent: -1, Version: -1}
	s.reqs = append(s.reqs, r)
	s.open++
	r.try(c.pick(c.pickRng))
	s.pace(c)
}

// pick chooses uniformly among the DC's usable servers, as the workload does.
func (c *dcClient) pick(rng *rand.Rand) *server {
	var cand []*server
	for _, v := range c.servers {
		if v.usable() {
			cand = append(cand, v)
		}
	}
	if len(cand) == 0 {
		return nil
	}
	return cand[rng.IntN(len(cand))]
}

func (c *dcClient) allKilled() bool {
	for _, v := range c.servers {
		if !v.harnessDown {
			return false
		}
	}
	return true
}

// try sends the request to srv, or to another usable server of its DC, or waits for
// one (workload.do's loop).
func (r *request) try(srv *server) {
	s := r.s
	if srv == nil || !srv.usable() {
		if r.rng == nil {
			r.rng = rand.New(rand.NewPCG(s.cfg.Seed, r.id))
		}
		srv = r.dc.pick(r.rng)
	}
	if srv == nil {
		switch {
		case r.dc.allKilled():
			r.end(workload.Failed, "no live server in DC "+r.dc.name, datatree.Stat{})
		case s.since() >= r.rec.Intended+retryFor:
			r.end(workload.Failed, fmt.Sprintf("no server of DC %s available for %v", r.dc.name, retryFor), datatree.Stat{})
		case s.since() >= s.cfg.Duration+drainFor:
			r.end(workload.Failed, errStopped.Error(), datatree.Stat{})
		default:
			s.after(r.dc.index, workload.RetryBackoff, func() {
				if !r.ended {
					r.try(nil)
				}
			})
		}
		return
	}
	if r.rec.Sent < 0 {
		r.rec.Sent = s.since()
	}
	r.rec.Attempts++
	r.rec.Server = srv.id
	r.stage, r.srv, r.inc = toServer, srv, srv.inc
	s.after(srv.part, s.cfg.ClientDelay, r.step)
}

// end records the outcome; the reply takes the client hop back.
func (r *request) end(o workload.Outcome, msg string, st datatree.Stat) {
	if r.ended {
		return
	}
	r.ended, r.step = true, nil
	r.s.open--
	r.rec.Outcome, r.rec.Err = o, msg
	r.rec.Done = r.s.since()
	if o == workload.OK {
		r.rec.Zxid, r.rec.Version = st.Mzxid, st.Version
		r.rec.Done += r.s.cfg.ClientDelay
	}
}

// records are the requests' records in the workload's order.
func (s *Sim) records() []workload.Record {
	reqs := s.allReqs()
	out := make([]workload.Record, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, r.rec)
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
	parts := strings.Split(keyPrefix, "/")[1:]
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
