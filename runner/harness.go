package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/workload"
)

// harnessLog is what the harness did; safe for concurrent use (the nemesis and the
// restart watchers add to it).
type harnessLog struct {
	mu  sync.Mutex
	log []record.Record
}

func (h *harnessLog) add(r record.Record) {
	h.mu.Lock()
	h.log = append(h.log, r)
	h.mu.Unlock()
}

func (h *harnessLog) records() []record.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.log)
}

// nodeEvents keeps the latest copy of each node's timeline; a killed node's is
// fetched before it dies, a restarted node's new life is added to its old one.
type nodeEvents struct {
	mu    sync.Mutex
	nodes map[int][]event.Event
}

func (n *nodeEvents) fetch(ctx context.Context, cl cluster.Cluster, s cluster.Server) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var ev []event.Event
	if tl, ok := cl.(cluster.Timelines); ok {
		ev = tl.Timeline(s.ID)
	} else {
		var err error
		if ev, err = cluster.NodeEvents(ctx, s); err != nil {
			return
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nodes == nil {
		n.nodes = map[int][]event.Event{}
	}
	for _, e := range n.nodes[s.ID] {
		if len(ev) == 0 || e.TimeNS < ev[0].TimeNS {
			ev = append(ev, e)
		}
	}
	slices.SortStableFunc(ev, func(a, b event.Event) int { return int(a.TimeNS - b.TimeNS) })
	n.nodes[s.ID] = slices.Compact(ev)
}

func (n *nodeEvents) collect(ctx context.Context, cl cluster.Cluster) {
	for _, s := range cl.Servers() {
		if cl.Alive(s.ID) {
			n.fetch(ctx, cl, s)
		}
	}
}

func (n *nodeEvents) all() map[int][]event.Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[int][]event.Event{}
	for id, ev := range n.nodes {
		out[id] = slices.Clone(ev)
	}
	return out
}

// target is what the nemesis acts on: the cluster's kill and restart, and links cut
// by the replicas themselves through their admin ports (whatever emulates the links)
// and by the cluster where it carries them (cluster.LinkCutter).
type target struct {
	cluster.Cluster
	mu   sync.Mutex
	slow map[int]time.Duration // slow disks, applied again after a restart
	// Paused servers (SIGSTOP, a container's pause) answer no admin request: what the
	// nemesis cuts or restores at them waits for their resume.
	paused  map[int]bool
	pending map[int][]replica.Cut
}

func newTarget(cl cluster.Cluster) *target {
	return &target{Cluster: cl, slow: map[int]time.Duration{}, paused: map[int]bool{}, pending: map[int][]replica.Cut{}}
}

// SetLinks cuts or restores every pair's links at both ends that are alive: one live
// end suffices to stop both directions, and a server restarted meanwhile is still cut
// by its peers.
func (t *target) SetLinks(ctx context.Context, pairs [][2]int, cut, broadcastOnly bool) error {
	peers := map[int][]int{}
	for _, p := range pairs {
		peers[p[0]] = append(peers[p[0]], p[1])
		peers[p[1]] = append(peers[p[1]], p[0])
	}
	var errs []error
	for _, s := range t.Servers() {
		if len(peers[s.ID]) == 0 || !t.Alive(s.ID) || s.Admin == "" {
			continue
		}
		errs = append(errs, t.setCut(ctx, s, replica.Cut{Peers: peers[s.ID], Cut: cut, BroadcastOnly: broadcastOnly}))
	}
	// Where the cluster carries the links itself (the kernel's netem, user-space
	// proxies), a partition is also cut there (a broadcast-only cut cannot be told
	// apart on the wire, so it stays the replicas' own).
	if k, ok := t.Cluster.(cluster.LinkCutter); ok && !broadcastOnly {
		errs = append(errs, k.CutLinks(ctx, pairs, false, cut))
	}
	return errors.Join(errs...)
}

// measuredRTTs is what each live server's heartbeat monitor measured, beside the plan
// (or, for a cluster that measures them itself, what it measured).
func measuredRTTs(ctx context.Context, cl cluster.Cluster) map[string]any {
	if m, ok := cl.(cluster.RTTMeter); ok {
		return m.MeasuredRTTs()
	}
	out := map[string]any{}
	for _, s := range cl.Servers() {
		if !cl.Alive(s.ID) {
			continue
		}
		st, err := cluster.NodeStatus(ctx, s)
		if err != nil {
			continue
		}
		peers := map[string]float64{}
		for _, p := range st.Peers {
			if p.Alive {
				peers[fmt.Sprintf("p%d", p.ID)] = p.RTTms
			}
		}
		out[fmt.Sprintf("p%d", s.ID)] = peers
	}
	return out
}

// status shows what the repetition is doing.
func (r *repetitionRun) status(format string, a ...any) {
	r.o.Progress.Update("[%s rep %d/%d] %s", r.o.Spec.Name, r.n, r.o.Spec.Repetitions, fmt.Sprintf(format, a...))
}

// progressLoop shows the load's phase, time, rate and outcomes once a second.
func (r *clusterRun) progressLoop(ctx context.Context, w workload.Driver) {
	if r.o.Progress == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	sp := r.o.Spec
	var lastDone int64
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			ok, failed, unknown := w.Progress()
			done := ok + failed + unknown
			rate := float64(done-lastDone) / now.Sub(last).Seconds()
			lastDone, last = done, now
			el := now.Sub(r.start)
			phase := "before crash"
			switch {
			case el < sp.Workload.Warmup:
				phase = "warm-up"
			case sp.CrashAt > 0 && el >= sp.CrashAt:
				phase = "after crash"
			}
			r.status("%-12s %5.1fs / %v  %6.0f req/s  ok %d  failed %d  unknown %d",
				phase, el.Seconds(), sp.Duration, rate, ok, failed, unknown)
		}
	}
}

// observer ties the nemesis to the run: a victim's timeline is saved before it dies,
// the workload stops using a killed server and uses a restarted one once it serves.
func (r *clusterRun) observer(cl cluster.Cluster, w workload.Driver, servers []cluster.Server) nemesis.Observer {
	byID := map[int]cluster.Server{}
	for _, s := range servers {
		byID[s.ID] = s
	}
	return nemesis.Observer{
		Before: func(ctx context.Context, f nemesis.Fault) {
			if f.Stops() {
				r.nodes.fetch(ctx, cl, byID[f.Server]) // its timeline, trace and hiccups are gone once it is
				r.traces.fetch(ctx, byID[f.Server])
				r.host.fetch(ctx, byID[f.Server])
			}
		},
		After: func(ctx context.Context, e nemesis.Executed) {
			r.harness.add(record.Fault(e))
			r.log.Info(string(e.Kind), "server", e.Server, "err", e.Err)
			switch {
			case e.Stops():
				w.ServerDown(e.Server)
				r.host.watchServer(cl, e.Server) // no longer: its pid may be reused
			case e.Kind == nemesis.Restart && e.Err == nil:
				r.host.watchServer(cl, e.Server) // its new process
				go func() {
					if err := cluster.WaitServingOf(ctx, cl, []cluster.Server{byID[e.Server]}, nil); err == nil {
						r.harness.add(record.Harness(time.Since(r.start), event.Serving, e.Server, nil))
						w.ServerUp(e.Server)
					}
				}()
			}
		},
	}
}
