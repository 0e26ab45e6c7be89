package etcdsys

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/placement"
	"github.com/polebench/polebench/placement/controller"
	"github.com/polebench/polebench/topology"
)

// Job is what a controller process is told: the deployment (its data centers, round
// trips and request rates, as the model takes them), the policy, and the members'
// client URLs by server id. The harness writes it into the run directory
// (placement.json) and starts `polebench place --job FILE` on it.
type Job struct {
	Topology topology.Config
	Policy   placement.Policy
	Members  map[int]string // client URL (or host:port) by server id
	Interval time.Duration  `json:",omitempty"` // controller.DefaultInterval when 0
	MaxLag   uint64         `json:",omitempty"` // placement.DefaultMaxLag when 0
	Keep     int            `json:",omitempty"` // controller.Config.Keep
}

// ReadJob reads a job file.
func ReadJob(path string) (Job, error) {
	var j Job
	b, err := os.ReadFile(path)
	if err != nil {
		return j, fmt.Errorf("placement job: %w", err)
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return j, fmt.Errorf("placement job %s: %w", path, err)
	}
	return j, nil
}

// Serve runs job's controller until ctx ends, each decision a JSON line on out
// (controller.Decision), stamped on the host's monotonic clock (netem.Now), the clock
// of the harness's other instants.
func Serve(ctx context.Context, job Job, out io.Writer, log *slog.Logger) error {
	topo, err := topology.New(job.Topology)
	if err != nil {
		return fmt.Errorf("placement job: %w", err)
	}
	if err := job.Policy.Check(topo.N()); err != nil {
		return err
	}
	urls := map[int]string{}
	for id, u := range job.Members {
		if !strings.Contains(u, "://") {
			u = "http://" + u
		}
		urls[id] = u
	}
	sys, err := New(urls)
	if err != nil {
		return err
	}
	defer sys.Close()
	enc := json.NewEncoder(out)
	return controller.Run(ctx, controller.Config{Topology: topo, Policy: job.Policy, System: sys,
		Interval: job.Interval, MaxLag: job.MaxLag, Keep: job.Keep,
		Now:    func() time.Duration { return time.Duration(netem.Now()) },
		Report: func(d controller.Decision) { enc.Encode(d) },
		Log:    log})
}
