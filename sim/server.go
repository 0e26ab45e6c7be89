package sim

import (
	"bytes"
	"fmt"
	"slices"
	"time"
	"unsafe"
	"weak"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/topology"
	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/workload"
	"github.com/polebench/polebench/workload/client"
	"github.com/polebench/polebench/zab"
	"github.com/polebench/polebench/zkserver"
)

// frameOverhead is what the transport adds to a payload on the wire (length, sender,
// channel, kind): the size the link's window is charged.
const frameOverhead = 13

// snapChunk is the size of the chunks a SNAP is streamed in, as poled streams it.
const snapChunk = 1 << 20

// server is one simulated poled: a replica.Driver with an in-memory disk, links that
// die with it, and the client requests it holds.
type server struct {
	s    *Sim
	id   int
	dc   string
	part int // its DC's partition
	cfg  replica.Config

	up       bool
	inc      int   // incarnation: bumped at every kill
	diedAt   int64 // when the last incarnation died
	d        *replica.Driver
	disk     disk
	timeline *event.Timeline
	events   []event.Event      // of earlier incarnations
	marks    [][]trace.Mark     // every incarnation's, with Config.Trace, in chunks
	markCur  markCursor         // how far pruneMarks read them (marks.go)
	lines    []*netem.DelayLine // by linkKey.index
	inflight map[uint64]*request
	busy     int64 // the server's loop is busy (a request's CPU, a write) until then
	drainDue bool  // a drain is queued for this instant
	// drainLater is drainSoon's event, one per incarnation (not a closure per call).
	drainLater func()
	// lostAt is when the server's client sessions were lost (-1: never, they connect
	// as it first serves); readyAt when the first is back.
	lostAt, readyAt int64

	serving      bool // as last seen
	harnessDown  bool // the harness marked it down (the workload's ServerDown)
	awaitServing bool // restarted: record SERVING when it serves again

	// The nemesis's (faults.go): paused until then (0 when running), and the extra ns
	// per log write of a slow disk.
	pausedUntil, slowDisk int64

	// sentChunks are the chunks of the snapshot the server streamed last, weakly: the
	// next stream reuses those its followers still hold.
	sentChunks []sentChunk
}

func newServer(s *Sim, id int) (*server, error) {
	var peers []replica.Peer
	for _, p := range s.cfg.Topology.Servers() {
		// Ports are never opened; the config only names the ensemble.
		peers = append(peers, replica.Peer{ID: p, Host: topology.Name(p), ClientPort: 1, PeerPort: 2, ElectionPort: 3, AdminPort: 4})
	}
	cfg := replica.Config{ID: id, Servers: peers, DataDir: "(simulated)", Oracle: s.cfg.Oracle,
		InitialLeader: s.cfg.InitialLeader, PreloadMB: s.cfg.PreloadMB, Trace: s.cfg.Trace, Broken: s.cfg.Broken[id],
		InitLimit: replica.Duration(s.cfg.InitLimit)}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sim: p%d: %w", id, err)
	}
	return &server{s: s, id: id, dc: s.cfg.Topology.DC(id), part: s.partOf(id), cfg: cfg}, nil
}

// boot starts an incarnation from the disk, as poled starts from its data directory.
func (v *server) boot() error {
	s := v.s
	log := s.log.With("server", v.id)
	r, err := v.disk.restore(v.cfg, log)
	if err != nil {
		return fmt.Errorf("sim: p%d: restore: %w", v.id, err)
	}
	v.timeline = event.NewTimelineClock(v.id, s.wall)
	v.lines = make([]*netem.DelayLine, len(s.links))
	v.inflight = map[uint64]*request{}
	v.serving, v.busy = false, s.now
	if v.inc == 0 {
		v.lostAt = -1
	}
	if v.d, err = replica.NewDriver(v.cfg, r.Persisted, r.Tree, (*serverIO)(v), log); err != nil {
		return fmt.Errorf("sim: p%d: %w", v.id, err)
	}
	v.d.SetRequestBase(uint64(v.inc+1) << 40)
	v.up = true
	inc := v.inc
	v.drainLater = func() {
		v.drainDue = false
		if v.alive(inc) {
			v.drain()
		}
	}
	tick := time.Duration(v.cfg.Tick)
	var loop func()
	loop = func() {
		if !v.alive(inc) {
			return
		}
		if v.pausedUntil > s.now { // frozen: no timer fires
			s.at(v.part, v.pausedUntil, loop)
			return
		}
		v.d.Tick(time.Duration(s.now))
		v.drain()
		s.after(v.part, tick, loop)
	}
	s.after(v.part, tick, loop)
	v.d.Start(time.Duration(s.now))
	v.drain()
	return nil
}

func (v *server) alive(inc int) bool { return v.up && v.inc == inc }

// kill stops the incarnation at once, like SIGKILL: what it held is lost, its clients'
// requests end unknown, and each peer notices the closed stream one link delay later.
func (v *server) kill() {
	s := v.s
	v.events = append(v.events, v.timeline.Events()...)
	v.up, v.d, v.pausedUntil = false, nil, 0
	dead := v.inc
	v.inc++
	v.diedAt = s.now
	v.disk.crash(s.now)
	v.lostSessions()
	v.failInflight("connection closed: server killed")
	for _, p := range s.servers[1:] {
		if p != v && p.up {
			v.notifyClosed(p, dead, s.link(linkKey{v.id, p.id, chBroadcast}).gen)
		}
	}
}

// notifyClosed tells peer p, one link delay from now and after everything v sent it
// before has been handed to p's loop, that v's broadcast stream closed: poled's loop
// steps the frames queued before a stream's end first (as TCP delivers data before
// its FIN), so a follower votes with every proposal its dead leader got to it. inc and
// gen name the stream that closed: the incarnation of v (a killed one's, not the next)
// and the link's generation (a reset's, not the new stream's, whose frames may arrive
// first: poled reads each stream apart, and the old one's end does not wait for them).
func (v *server) notifyClosed(p *server, inc, gen int) {
	s := v.s
	l, _ := s.cfg.Plan.Link(v.id, p.id)
	at := s.now + int64(l.Delay)
	if line := v.lines[linkKey{v.id, p.id, chBroadcast}.index(s.cfg.Topology.N())]; line != nil {
		at = max(at, line.LastNS()+int64(s.cfg.HopDelay))
	}
	pinc, dead, vinc, vgen := p.inc, v.id, inc, int32(gen)
	q := &s.lq[linkKey{v.id, p.id, chBroadcast}.index(s.cfg.Topology.N())]
	ps := p.s // it runs where p does
	var closed func()
	closed = func() {
		if !p.alive(pinc) {
			return
		}
		// Frames of the dead incarnation still on the link (due at this instant, or
		// deferred behind p's busy loop) go first; their events were queued before
		// this one's next, so it runs after them.
		if q.size > 0 && int(q.front().inc) == vinc && q.front().gen == vgen || p.busy > ps.now {
			next := max(ps.now, p.busy)
			if q.size > 0 {
				next = max(next, q.front().at)
			}
			ps.at(p.part, next, closed)
			return
		}
		p.d.Closed(dead)
		p.d.Disconnected(dead)
		p.drain()
	}
	s.at(p.part, at, closed)
}

// drain hands the driver's output to the world and notices the server start or stop
// serving.
func (v *server) drain() {
	if !v.up {
		return
	}
	v.d.Drain()
	if v.disk.wantsCompaction() {
		v.d.Read(func(t *datatree.Tree) {
			if err := v.disk.compact(t.View()); err != nil {
				v.s.fail(fmt.Errorf("sim: p%d: compact: %w", v.id, err))
			}
		})
	}
	serving := v.d.Status().Serving
	if serving == v.serving {
		return
	}
	v.serving = serving
	if !serving {
		v.lostSessions()
		return
	}
	if v.lostAt >= 0 {
		// The sessions lost at lostAt redial as the client core says; the first redial
		// that finds the server serving connects, a client round trip later.
		v.readyAt = v.lostAt + int64(client.Redialed(time.Duration(v.s.now-v.lostAt))) + 2*int64(v.s.cfg.ClientDelay)
	}
	if v.awaitServing {
		v.awaitServing = false
		v.markServing()
		v.s.record(record.Harness(v.s.since(), event.Serving, v.id, nil))
	}
}

func (v *server) markServing() { v.harnessDown = false }

// usable is the workload's test: not marked down, and a session (it serves, and a
// client's session has reconnected).
func (v *server) usable() bool {
	return v.up && !v.harnessDown && v.serving && v.s.now >= v.readyAt
}

// lostSessions notes that the server's clients lost their sessions now (it stopped
// serving, or died); they come back as the workload's sessions do.
func (v *server) lostSessions() {
	if v.lostAt < 0 || v.readyAt <= v.s.now {
		v.lostAt = v.s.now
	}
}

func (v *server) failInflight(msg string) {
	for _, id := range sortedKeys(v.inflight) {
		r := v.inflight[id]
		delete(v.inflight, id)
		r.reply(client.Lost, msg, datatree.Stat{})
	}
}

// delivery is a message on a link, from its sending to its arrival. It is kept small
// (the links' rings hold every message in flight by value): an election payload rides
// in zab.Data, the link is its index, the incarnations and generation are 32 bits.
type delivery struct {
	from, to  *server
	inc, dinc int32 // the incarnations of both ends when it was sent
	gen       int32
	link      int32   // the link's index (linkKey.index)
	ch        channel // chElection: zab.Data is the election payload
	deferred  bool    // it waited for the receiver's loop
	sent      int64   // when it is handed to the link, if later than now (a snapshot's chunk)
	depart    int64   // when it left the sender (before that, it dies with it)
	arrived   int64   // when it arrives
	at        int64   // when the receiver acts on it (HopDelay later)
	zab       zab.Message
}

// send puts d (an election payload or a broadcast message) of size bytes on the link
// to d.to: it departs when the window lets it (until then it dies with the sender)
// and arrives after the link's delay, in order.
func (v *server) send(d *delivery, ch channel, size int) {
	s := v.s
	i := linkKey{v.id, d.to.id, ch}.index(len(s.servers) - 1)
	ls := &s.links[i]
	if !d.to.up || ls.cut {
		return
	}
	line := v.lines[i]
	if line == nil {
		var err error
		if line, err = s.cfg.Plan.DelayLine(v.id, d.to.id); err != nil {
			s.fail(err)
			return
		}
		v.lines[i] = line
	}
	if len(s.cfg.Plan.Schedules) > 0 {
		line.SetStart(s.start) // a link schedule counts from the start of the load, as faults do
	}
	// What the loop sends after a write it waited for leaves when the write is done.
	depart, arrive := line.ScheduleNS(max(s.now, v.busy, d.sent), size+frameOverhead)
	d.from, d.inc, d.dinc, d.gen = v, int32(v.inc), int32(d.to.inc), int32(ls.gen)
	d.link, d.ch = int32(i), ch
	d.depart, d.arrived = depart, max(arrive, s.now)
	d.at = d.arrived + int64(s.cfg.HopDelay) // handed to the receiver's loop
	s.enqueue(i, d)
}

// arrive hands d to its receiver, unless the receiver's loop is busy (in a write or a
// request): then d and what follows it on its link wait, and it reports false.
func (d *delivery) arrive() bool {
	s, v, dst := d.to.s, d.from, d.to // the receiver's partition runs this
	if l := &s.links[d.link]; int32(v.inc) != d.inc && d.depart > v.diedAt || !dst.alive(int(d.dinc)) || int32(l.gen) != d.gen || l.cut {
		return true
	}
	if dst.busy > s.now {
		d.deferred = true
		return false
	}
	if d.ch == chElection {
		dst.d.StepElection(time.Duration(d.arrived), v.id, d.zab.Data)
	} else {
		dst.d.DeliverZab(time.Duration(d.arrived), v.id, d.zab)
	}
	if d.deferred {
		// What waited for the loop is read together before one Drain, as poled's loop
		// steps everything queued before it persists (group commit).
		dst.drainSoon()
		return true
	}
	dst.drain()
	return true
}

// drainSoon drains once everything due at this instant has been stepped.
func (v *server) drainSoon() {
	if v.drainDue {
		return
	}
	v.drainDue = true
	v.s.at(v.part, v.s.now, v.drainLater)
}

// finals reads every key as the verification's read-back does.
func (v *server) finals(keys int) []workload.Final {
	var out []workload.Final
	v.d.Read(func(t *datatree.Tree) {
		for i := range keys {
			k := v.s.keys[i]
			data, st, err := t.Get(k)
			out = append(out, workload.Final{Server: v.id, Key: k, Data: data, Mzxid: st.Mzxid, Version: st.Version, Err: err})
		}
	})
	return out
}

// rtts is what the heartbeats measured, as rtts.json has it.
func (v *server) rtts() map[string]float64 {
	_, peers := v.d.Election()
	out := map[string]float64{}
	for _, p := range peers {
		if p.Alive {
			out[topology.Name(p.ID)] = p.RTT
		}
	}
	return out
}

// serverIO is the server as its Driver sees it.
type serverIO server

func (io *serverIO) SendElection(to int, b []byte) {
	(*server)(io).send(&delivery{to: io.s.servers[to], zab: zab.Message{Data: b}}, chElection, len(b))
}

// SendZab carries the message itself, not its encoding (the codec has its own tests
// and fuzzing; encoding every message was most of the simulator's time), charging
// the link its encoded size. Its entries need no copy: the core never changes a
// message's entries (zab.Message).
func (io *serverIO) SendZab(m zab.Message) {
	(*server)(io).send(&delivery{to: io.s.servers[m.To], zab: m}, chBroadcast, m.EncodedSize())
}

// SendSnapshot streams the view in chunks on the broadcast link at once: the link's
// window and the write rate pace them, and what the driver sends that peer later
// queues behind them.
func (io *serverIO) SendSnapshot(m zab.Message, view *datatree.View) {
	defer view.Close()
	s := io.s
	// poled writes the view in a goroutine beside its loop: a chunk is ready once the
	// bytes before it are written, at the measured rate.
	start, written := s.now, 0
	prev, sent := io.sentChunks, []sentChunk(nil)
	w, err := zab.NewChunkWriter(m, snapChunk, func(c zab.Message) error {
		c.Data = sharedChunk(prev, int(c.Seq), c.Data)
		k := sentChunk{n: len(c.Data)}
		if k.n > 0 {
			k.p = weak.Make(&c.Data[0])
		}
		sent = append(sent, k)
		written += len(c.Data)
		d := delivery{to: s.servers[c.To], zab: c, sent: start + rateCost(written, s.cfg.SnapshotWriteRate)}
		(*server)(io).send(&d, chBroadcast, c.EncodedSize())
		return nil
	})
	if err == nil {
		err = view.Write(w)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		s.fail(fmt.Errorf("sim: p%d: stream snapshot: %w", io.id, err))
	}
	io.sentChunks = sent
}

// sharedChunk is a copy of data, the seq'th chunk of a snapshot being streamed (the writer
// reuses its buffer; the link carries the message), or the same chunk of the
// snapshot streamed before when its bytes are equal: a leader that sends the same
// state to several followers holds it once, as do the followers' stores and trees
// that keep the chunks they received.
func sharedChunk(prev []sentChunk, seq int, data []byte) []byte {
	if seq < len(prev) && prev[seq].n == len(data) {
		if p := prev[seq].p.Value(); p != nil {
			if same := unsafe.Slice(p, len(data)); bytes.Equal(same, data) {
				return same
			}
		}
	}
	return slices.Clone(data)
}

// sentChunk is a chunk's bytes, weakly held.
type sentChunk struct {
	p weak.Pointer[byte]
	n int
}

// rateCost is how long n bytes take at rate bytes/s (no time for a rate of 0).
func rateCost(n int, rate float64) int64 {
	if rate <= 0 {
		return 0
	}
	return int64(float64(n) / rate * 1e9)
}

// Persist writes at the disk's latency. The loop waits for the write (what it sends
// afterwards leaves when the write is done) unless the test-only ackBeforeWrite
// lets it go on at once, acknowledging what a kill can still lose.
func (io *serverIO) Persist(ops []zab.Op) (*datatree.Tree, error) {
	s := io.s
	start := max(s.now, io.busy)
	done := start
	if len(ops) > 0 {
		done += int64(s.cfg.DiskLatency) + io.slowDisk
	}
	for _, op := range ops {
		if c, ok := op.(*zab.SnapshotChunk); ok {
			// A received snapshot is loaded as its chunks arrive (datatree.Loader), on
			// the loop.
			done += rateCost(len(c.Data), s.cfg.SnapshotLoadRate)
		}
	}
	if !s.cfg.ackBeforeWrite {
		io.busy = done
	}
	return io.disk.persist(ops, s.now, done)
}
func (io *serverIO) Record(e event.Event)                  { io.timeline.Add(e) }
func (io *serverIO) Applied(datatree.Txn, datatree.Result) {}
func (io *serverIO) Fail(err error)                        { io.s.fail(fmt.Errorf("sim: p%d: %w", io.id, err)) }
func (io *serverIO) Now() time.Duration                    { return time.Duration(io.s.now) }
func (io *serverIO) Mark(m trace.Mark)                     { (*server)(io).mark(m) }

// ResetPeers is transport.Reset with every peer: what is in flight on the broadcast
// streams is lost, each peer hears its stream close one link delay later (after what
// had arrived), and this server hears the break of its own.
func (io *serverIO) ResetPeers() {
	v := (*server)(io)
	s := v.s
	if s.inWindow() { // it reaches the other partitions at once
		s.redo("a reset of the broadcast streams within a window")
		return
	}
	for _, p := range s.servers[1:] {
		if p == v {
			continue
		}
		closed := s.link(linkKey{v.id, p.id, chBroadcast}).gen
		s.link(linkKey{v.id, p.id, chBroadcast}).gen++
		s.link(linkKey{p.id, v.id, chBroadcast}).gen++
		inc, peer := v.inc, p.id
		s.at(v.part, s.now, func() { // the transport reports it as an event, after this Ready
			if v.alive(inc) {
				v.d.Disconnected(peer)
				v.drain()
			}
		})
		if p.up {
			v.notifyClosed(p, v.inc, closed)
		}
	}
}

// Role: a server that starts looking closes its client connections (poled's client
// port does), so what its clients had in flight ends unknown.
func (io *serverIO) Role(e zab.Event) {
	if e.Type == zab.EventLooking {
		v := (*server)(io)
		if v.serving {
			v.lostSessions()
		}
		v.serving = false
		v.failInflight("connection closed: server looking for a leader")
	}
}

// submit is a client request reaching the server: it waits for the server's CPU,
// then the driver proposes it.
func (v *server) submit(r *request) {
	s := v.s
	r.recv = s.now
	start := max(s.now, v.busy)
	v.busy = start + int64(s.cfg.ServiceTime)
	v.inflight[r.c.ID] = r
	r.stage, r.srv, r.inc = toLoop, v, v.inc
	s.at(v.part, v.busy, r.step)
}

// take is the server's loop taking r once its CPU is done: the driver proposes it.
func (v *server) take(r *request) {
	s := v.s
	r.step = nil // its last step
	if !v.alive(r.inc) || v.inflight[r.c.ID] != r {
		return
	}
	recv := r.recv
	// The value is built in one buffer: Submit marshals the write at once.
	s.value = workload.AppendValue(s.value[:0], s.runID, r.c.ID, s.cfg.PayloadBytes)
	txn := datatree.Txn{Time: s.wall().UnixMilli(), Op: datatree.SetData(r.key, s.value, -1)}
	v.d.Submit(txn, true, func(o zkserver.Outcome) {
		if v.inflight[r.c.ID] != r {
			return
		}
		delete(v.inflight, r.c.ID)
		if o.Err != nil {
			r.reply(client.Lost, o.Err.Error(), datatree.Stat{})
			return
		}
		if o.Result.Err != datatree.Ok {
			r.reply(client.Refused, fmt.Sprint(o.Result.Err), datatree.Stat{})
			return
		}
		if s.cfg.Trace { // what poled's client port marks
			z := o.Result.Zxid
			v.mark(trace.Mark{Zxid: z, At: recv, Kind: trace.Recv})
			v.mark(trace.Mark{Zxid: z, At: s.now, Kind: trace.Reply})
		}
		r.reply(client.Acked, "", o.Result.Stat)
	})
	v.drain()
}
