package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/model"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/topology"
	"github.com/polebench/polebench/trace"
	"github.com/polebench/polebench/workload"
)

// traceCollector gathers the servers' trace marks while a run goes on: every second
// from each live server (its ring holds about 30 s), and from a server about to be
// killed, so its marks outlive it. Safe for concurrent use.
type traceCollector struct {
	mu      sync.Mutex // guards the maps
	fetches sync.Map   // server id -> *sync.Mutex: one fetch at a time per server, in order
	cursors map[int]traceCursor
	marks   map[int][]trace.Mark
	lost    map[int]uint64
}

type traceCursor struct {
	boot int64
	next uint64
}

func newTraceCollector() *traceCollector {
	return &traceCollector{cursors: map[int]traceCursor{}, marks: map[int][]trace.Mark{}, lost: map[int]uint64{}}
}

// fetch reads s's marks up to now. A restarted server's log starts again at 0.
func (c *traceCollector) fetch(ctx context.Context, s cluster.Server) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	one, _ := c.fetches.LoadOrStore(s.ID, new(sync.Mutex))
	one.(*sync.Mutex).Lock()
	defer one.(*sync.Mutex).Unlock()
	for {
		c.mu.Lock()
		cur := c.cursors[s.ID]
		c.mu.Unlock()
		p, err := cluster.NodeTrace(ctx, s, cur.next)
		if err != nil {
			return // a server killed meanwhile; what it had was read before the kill
		}
		c.mu.Lock()
		if p.Boot != cur.boot && (cur.boot != 0 || cur.next != 0) {
			c.cursors[s.ID] = traceCursor{boot: p.Boot}
			c.mu.Unlock()
			continue // a new life: read it from its start
		}
		c.marks[s.ID] = append(c.marks[s.ID], p.Marks...)
		c.lost[s.ID] += p.Lost
		c.cursors[s.ID] = traceCursor{boot: p.Boot, next: p.Next}
		c.mu.Unlock()
		if len(p.Marks) == 0 || p.Next == cur.next {
			return
		}
	}
}

// poll fetches every live server's marks every second until ctx ends.
func (c *traceCollector) poll(ctx context.Context, servers []cluster.Server, alive func(int) bool) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.collect(ctx, servers, alive)
		}
	}
}

func (c *traceCollector) collect(ctx context.Context, servers []cluster.Server, alive func(int) bool) {
	for _, s := range servers {
		if s.Admin != "" && alive(s.ID) { // ZooKeeper's servers have no admin port, and no trace
			c.fetch(ctx, s)
		}
	}
}

// result hands out what was collected, and says how many marks were lost.
func (c *traceCollector) result() (map[int][]trace.Mark, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var lost uint64
	for _, n := range c.lost {
		lost += n
	}
	return c.marks, lost
}

// anatomyInput is what a repetition's analysis needs for the latency anatomy.
type anatomyInput struct {
	paths []analysis.Path
	join  analysis.JoinStats
	model analysis.PathModel
}

// anatomy joins the run's records with the collected marks into phases.csv.gz and
// prepares the model's split of each write. start is the run's zero.
func (r *trial) anatomy(c *traceCollector, recs []workload.Record, start time.Time, topo *topology.Topology, plan netem.Plan) (*anatomyInput, error) {
	marks, lost := c.result()
	if lost > 0 {
		r.log.Warn("trace marks overwritten before they were read", "lost", lost)
	}
	a := r.anatomyOf(marks, recs, netem.At(start), topo, plan)
	if err := a.write(r.dir); err != nil {
		return nil, err
	}
	return a, nil
}

// write writes the paths: phases.csv.gz.
func (a *anatomyInput) write(dir string) error {
	return analysis.WritePaths(filepath.Join(dir, "phases.csv.gz"), a.paths)
}

// anatomyOf is anatomy from marks whose clock reads start at the run's zero, without
// writing the paths.
func (r *trial) anatomyOf(marks map[int][]trace.Mark, recs []workload.Record, start int64, topo *topology.Topology, plan netem.Plan) *anatomyInput {
	paths, st := analysis.Join(recs, marks, start)
	m, err := pathModel(r.o.Spec, topo, plan)
	if err != nil {
		r.log.Warn("no model for the latency anatomy", "err", err)
	}
	return &anatomyInput{paths: paths, join: st, model: m}
}

// pathModel splits the model's latency of each write by window: before the crash
// every server is live, after it all but the initial leader.
func pathModel(sp *spec.Spec, topo *topology.Topology, plan netem.Plan) (analysis.PathModel, error) {
	type win struct {
		plain *model.Analysis
		jit   *model.JitterTerm
	}
	wins := map[string]win{}
	lives := map[string][]int{"before": topo.Servers()}
	if sp.CrashAt > 0 {
		lives["after"] = slices.DeleteFunc(topo.Servers(), func(id int) bool { return id == sp.InitialLeader })
	}
	for name, live := range lives {
		a, err := model.Analyze(topo, live)
		if err != nil {
			return nil, fmt.Errorf("%s the crash: %w", name, err)
		}
		j, err := model.Jitter(topo, live, plan, 0)
		if err != nil {
			return nil, fmt.Errorf("%s the crash: %w", name, err)
		}
		wins[name] = win{a, j}
	}
	return func(w string, s, l int) (analysis.ModelSplit, bool) {
		m, ok := wins[w]
		if !ok {
			return analysis.ModelSplit{}, false
		}
		c, ok := m.plain.Candidate(l)
		if !ok {
			return analysis.ModelSplit{}, false
		}
		half := topo.RTT(s, l) / 2
		return analysis.ModelSplit{Forward: half, Quorum: c.ThetaC, Back: half, Jitter: m.jit.Extra(s, l)}, true
	}, nil
}
