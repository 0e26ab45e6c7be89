package runner

import (
	"context"
	"sync"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/trace"
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
		if s.Admin != "" && alive(s.ID) { // a server without an admin port keeps no trace
			c.fetch(ctx, s)
		}
	}
}

// result hands out what was collected (each server's marks in one piece), and says how
// many marks were lost.
func (c *traceCollector) result() (map[int][][]trace.Mark, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var lost uint64
	for _, n := range c.lost {
		lost += n
	}
	marks := map[int][][]trace.Mark{}
	for id, ms := range c.marks {
		marks[id] = [][]trace.Mark{ms}
	}
	return marks, lost
}
