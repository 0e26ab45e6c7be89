// Package client is the workload's client as a pure state machine: for each request of
// a data center, which of the DC's servers it goes to, when it is tried again, and the
// outcome it ends with; and how a session that lost its server redials. It holds no
// sockets, clock or goroutines: a driver gives it the time, its servers' state and the
// replies, and does what each Step says. The ZooKeeper driver (package workload), the
// simulator's client (package sim) and any other protocol's driver are loops around it
// that only map their protocol's errors to a Reply.
//
// A driver's loop, for each request (now is the driver's clock, an offset from the
// run's start):
//
//	r := dc.Issue(id, intended)
//	for step := dc.Next(&r, now); step.Action != client.End; {
//		switch step.Action {
//		case client.Wait: // sleep step.After, then:
//			step = dc.Next(&r, now) // or dc.Stop(&r, now) if the run stopped waiting
//		case client.Send: // to server step.Server; if it has no session after all:
//			//   step = dc.Reply(&r, now, client.Unavailable, "")
//			dc.Sending(&r, now)
//			// ... the protocol's write returns err ...
//			step = dc.Reply(&r, now, kindOf(err), textOf(err))
//		}
//	}
//
// and the record is r's fields (Sent, Done, Attempts, Server, Outcome, Err) with the
// protocol's own (a version, a zxid) beside them.
package client

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// The workload's defaults, once.
const (
	// DefaultRetryFor bounds how long a request that could not be sent keeps waiting for
	// a server of its DC, from its intended time.
	DefaultRetryFor = 10 * time.Second
	// DefaultDrain bounds the wait for the requests in flight once pacing ends; what is
	// still in flight then is recorded unknown.
	DefaultDrain = 5 * time.Second
	// DefaultPrefix is the parent of the keyspace.
	DefaultPrefix = "/polebench"
	// RetryBackoff is how long a request waits before it is tried again when no server
	// of its DC could take it.
	RetryBackoff = 10 * time.Millisecond
	// ReconnectEvery paces redials of a server that is alive but not serving (it lost
	// its leader and is syncing). Whatever it is, it is added to the recovery measured
	// (the first request after a leader change waits for a session to come back): the
	// ZooKeeper client's own pace, a whole second after each round of failures, would
	// add up to a second, and any pace adds up to itself (docs/performance.md has what
	// 100 ms did). 20 ms keeps the harness's share small at a few hundred refused dials
	// a second while servers elect.
	ReconnectEvery = 20 * time.Millisecond
)

// Outcome is what the client learned about a request.
type Outcome uint8

const (
	// OK: the server acknowledged the write.
	OK Outcome = iota + 1
	// Failed: a definite error; the write did not happen (a server's error reply, or the
	// request was never sent).
	Failed
	// Unknown: the connection was lost with the request in flight; it may have committed.
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Failed:
		return "failed"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// ParseOutcome is the inverse of Outcome.String.
func ParseOutcome(s string) (Outcome, error) {
	switch s {
	case "ok":
		return OK, nil
	case "failed":
		return Failed, nil
	case "unknown":
		return Unknown, nil
	}
	return 0, fmt.Errorf("unknown outcome %q (want ok, failed or unknown)", s)
}

// Reply is what became of a send, in the core's terms: a driver maps its protocol's
// errors to one of these.
type Reply uint8

const (
	// Acked: the server applied the write.
	Acked Reply = iota + 1
	// Refused: the server answered with an error; the write did not happen.
	Refused
	// NotSent: the protocol's client failed the request before it left (it was queued
	// while the connection was down): another server of the DC may take it.
	NotSent
	// Lost: the request may have left (the connection closed, an I/O error): it may
	// have committed.
	Lost
	// Unavailable: the server Send named could not take the request after all (no
	// session of it was ready); nothing was sent, and Sending was not called.
	Unavailable
)

func (k Reply) String() string {
	switch k {
	case Acked:
		return "acked"
	case Refused:
		return "refused"
	case NotSent:
		return "not-sent"
	case Lost:
		return "lost"
	case Unavailable:
		return "unavailable"
	}
	return fmt.Sprintf("reply(%d)", uint8(k))
}

// Servers is one DC's servers as the driver sees them now, by index (0..Len()-1, in
// the driver's order). The core reads them at every decision and never keeps what it read.
type Servers interface {
	Len() int
	// Usable: not marked down, and a session to it is ready.
	Usable(i int) bool
	// Down: the harness marked it down (killed).
	Down(i int) bool
}

// Config is the client's policy of a run. Zero values take the defaults.
type Config struct {
	Seed     uint64        // the run's: a request's re-picks draw from (Seed, its id)
	RetryFor time.Duration // default DefaultRetryFor
}

// DC is the client of one data center: its servers and the random source of its
// requests' first picks. Issue draws from that source, so one goroutine (the DC's
// pacer) calls it; the other methods change only the request they are given, so
// requests may be driven concurrently, given Servers that can be read concurrently.
type DC struct {
	name     string
	servers  Servers
	seed     uint64
	retryFor time.Duration
	first    *rand.Rand
}

// NewDC is the client of DC name, whose requests' first picks draw from pickSeed in
// the order the requests are issued.
func NewDC(cfg Config, name string, servers Servers, pickSeed uint64) *DC {
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = DefaultRetryFor
	}
	return &DC{name: name, servers: servers, seed: cfg.Seed, retryFor: cfg.RetryFor,
		first: rand.New(rand.NewPCG(pickSeed, 2))}
}

// Name is the DC's name.
func (d *DC) Name() string { return d.name }

// Request is one request in the client, from its intended time to its outcome. Times
// are offsets from the run's start, as the driver's clock gives them.
type Request struct {
	ID       uint64
	Intended time.Duration
	Sent     time.Duration // first handed to a server; -1 if never
	Done     time.Duration // when the outcome became known
	Attempts int           // Sending calls (more than 1 after a NotSent reply)
	Server   int           // index of the server last sent to; -1 if never
	Outcome  Outcome       // 0 until it ends
	Err      string        // why, unless OK

	next    int  // the server to try next; -1: pick again
	resend  bool // waiting after a NotSent reply (its error is in Err)
	repicks *rand.Rand
}

// Ended reports whether r has its outcome.
func (r *Request) Ended() bool { return r.Outcome != 0 }

// Action is what a Step asks of the driver.
type Action uint8

const (
	// Send the request to Step.Server (call Sending when it is handed over), then
	// give its Reply.
	Send Action = iota + 1
	// Wait Step.After, then call Next; or Stop, if the run stopped waiting meanwhile.
	Wait
	// End: the request has its outcome.
	End
)

// Step is the core's decision about a request.
type Step struct {
	Action Action
	Server int           // Send: the index of the server
	After  time.Duration // Wait: how long
}

// Issue is request id, due at intended, with its first choice of server drawn now from
// the DC's source.
func (d *DC) Issue(id uint64, intended time.Duration) Request {
	return Request{ID: id, Intended: intended, Sent: -1, Server: -1, next: d.pick(d.first)}
}

// Next decides what r does at now: go to its chosen server if that is still usable,
// else to another usable server of the DC, else wait for one; it fails when every
// server of the DC is down, or when it has waited RetryFor since it was due.
func (d *DC) Next(r *Request, now time.Duration) Step {
	if r.Ended() {
		return Step{Action: End}
	}
	r.resend = false
	if r.next < 0 || !d.servers.Usable(r.next) {
		if r.repicks == nil {
			r.repicks = rand.New(rand.NewPCG(d.seed, r.ID))
		}
		r.next = d.pick(r.repicks)
	}
	if r.next >= 0 {
		return Step{Action: Send, Server: r.next}
	}
	switch {
	case d.allDown():
		return d.end(r, now, Failed, "no live server in DC "+d.name)
	case now >= r.Intended+d.retryFor:
		return d.end(r, now, Failed, fmt.Sprintf("no server of DC %s available for %v", d.name, d.retryFor))
	}
	return Step{Action: Wait, After: RetryBackoff}
}

// Sending records that r is handed, at now, to the server the last Send named.
func (d *DC) Sending(r *Request, now time.Duration) {
	if r.Sent < 0 {
		r.Sent = now
	}
	r.Attempts++
	r.Server = r.next
}

// Reply is what became of r's send, learned at now, with the protocol's error text
// (empty for Acked). A request that was certainly not sent is tried again, on another
// server, until RetryFor has passed since it was due.
func (d *DC) Reply(r *Request, now time.Duration, kind Reply, err string) Step {
	if r.Ended() {
		return Step{Action: End}
	}
	switch kind {
	case Acked:
		return d.end(r, now, OK, "")
	case Refused:
		return d.end(r, now, Failed, err)
	case Unavailable:
		r.next = -1
		return d.Next(r, now)
	case NotSent:
		if now >= r.Intended+d.retryFor {
			return d.end(r, now, Failed, err)
		}
		r.next, r.resend, r.Done, r.Err = -1, true, now, err
		return Step{Action: Wait, After: RetryBackoff}
	}
	return d.end(r, now, Unknown, err) // Lost, or a kind the core does not know: it may have left
}

// Stop ends r, at now, because the run stopped waiting for it (the drain is over)
// before it could be sent. One waiting after a NotSent reply ends with that reply.
func (d *DC) Stop(r *Request, now time.Duration) Step {
	if r.Ended() {
		return Step{Action: End}
	}
	if r.resend {
		r.Outcome = Failed
		return Step{Action: End}
	}
	return d.end(r, now, Failed, "run stopped before the request could be sent")
}

func (d *DC) end(r *Request, now time.Duration, o Outcome, err string) Step {
	r.Outcome, r.Err, r.Done = o, err, now
	return Step{Action: End}
}

// pick chooses uniformly among the usable servers; -1 if there is none.
func (d *DC) pick(rng *rand.Rand) int {
	var buf [16]int
	cand := buf[:0]
	for i := range d.servers.Len() {
		if d.servers.Usable(i) {
			cand = append(cand, i)
		}
	}
	if len(cand) == 0 {
		return -1
	}
	return cand[rng.IntN(len(cand))]
}

func (d *DC) allDown() bool {
	for i := range d.servers.Len() {
		if !d.servers.Down(i) {
			return false
		}
	}
	return true
}

// Redial is a session's reconnect policy after its fails-th failed or lost connection
// in a row (from 1): redial at once the first time, then every ReconnectEvery while the
// server lives; once it is gone (killed, or the session closing) give up, so that the
// protocol's client fails what it holds unsent and another server takes it.
func Redial(fails int, gone bool) (wait time.Duration, giveUp bool) {
	switch {
	case fails <= 1:
		return 0, false
	case gone:
		return 0, true
	}
	return ReconnectEvery, false
}

// Redialed is when, counted from the loss of its sessions, a server that serves again
// serving after the loss is first redialed by them: the first redial at or after
// serving (the one at the instant of the loss found it not serving).
func Redialed(serving time.Duration) time.Duration {
	k := (serving + ReconnectEvery - 1) / ReconnectEvery
	return max(k, 1) * ReconnectEvery
}
