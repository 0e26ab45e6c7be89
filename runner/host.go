package runner

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/hiccup"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/trial"
)

// hostMeter measures the host while a trial runs: the harness's hiccup meter, the host
// sampler, and the reports of the replicas' own meters (servers in processes of their
// own), a killed server's fetched before it dies.
type hostMeter struct {
	meter  *hiccup.Meter
	host   *hiccup.HostSampler
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	reports map[string][]hiccup.Report // process -> one report per life
}

// startHostMeter starts the meters of the harness and of cl: the host sampler also
// samples the lateness of the user-space links in this process (the nodes' and the
// proxies' of servers that run here), and watches the harness and every server that is a
// process of this host from outside (watchServer).
func startHostMeter(ctx context.Context, cl cluster.Cluster) *hostMeter {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &hostMeter{meter: hiccup.New(0, 0), host: hiccup.NewHostSampler(0), cancel: cancel, reports: map[string][]hiccup.Report{}}
	h.host.Links(netem.LinkLateness)
	h.host.Watch(analysis.HarnessProcess, os.Getpid())
	for _, s := range cl.Servers() {
		h.watchServer(cl, s.ID)
	}
	h.wg.Go(func() { h.meter.Run(ctx) })
	h.wg.Go(func() { h.host.Run(ctx) })
	return h
}

// watchServer has the host sampler measure server id's process from outside (its
// threads' wait for a CPU), under the server's name, where the cluster's servers are
// processes of this host; a server that is not running is no longer watched, and a
// restarted one is watched under its new pid.
func (h *hostMeter) watchServer(cl cluster.Cluster, id int) {
	p, ok := cl.(cluster.Pids)
	if !ok {
		return
	}
	name := fmt.Sprintf("p%d", id)
	if pid := p.Pid(id); pid > 0 {
		h.host.Watch(name, pid)
	} else {
		h.host.Unwatch(name)
	}
}

// fetch keeps server s's meter report; a later fetch of the same life replaces it, a
// new life (a restarted process) is added beside the old one.
func (h *hostMeter) fetch(ctx context.Context, s cluster.Server) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	r, ok, err := cluster.NodeHiccups(ctx, s)
	if err != nil || !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	lives := h.reports[r.Process]
	if n := len(lives); n > 0 && lives[n-1].From == r.From {
		lives[n-1] = r
	} else {
		lives = append(lives, r)
	}
	h.reports[r.Process] = lives
}

func (h *hostMeter) collect(ctx context.Context, cl cluster.Cluster) {
	for _, s := range cl.Servers() {
		if cl.Alive(s.ID) {
			h.fetch(ctx, s)
		}
	}
}

// stop ends the harness's meter and sampler.
func (h *hostMeter) stop() {
	h.cancel()
	h.wg.Wait()
}

// result stops the meters and hands out what they measured; the run started at start.
func (h *hostMeter) result(start time.Time) *trial.Host {
	h.stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	reports := map[string][]hiccup.Report{analysis.HarnessProcess: {h.meter.Report(analysis.HarnessProcess)}}
	for p, r := range h.reports {
		reports[p] = r
	}
	return &trial.Host{Start: start, Reports: reports, Samples: h.host.Samples()}
}
