package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/placement/etcdsys"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trial"
)

// JobFile is the placement controller's job in a run directory: what it was told.
const JobFile = "placement.json"

// placer is the placement controller beside a real run: a process of its own (the
// polebench binary's place subcommand, on the job the run wrote), which talks only to
// the members' API and their RTT metrics, as a user's controller would. It starts
// with the load, is killed and started again as the spec's controller faults say,
// and is stopped when the load ends; its decisions become PLACEMENT records.
type placer struct {
	argv  []string // the command, before --job FILE
	job   string
	logs  string // its standard error, every life appended
	start time.Time
	add   func(record.Record)

	mu   sync.Mutex
	proc *exec.Cmd
	done chan struct{} // closed when proc has exited and its output is read
	kill bool          // the harness killed it on purpose
}

// startPlacer writes the job and starts the controller, if the spec places.
func (r *clusterRun) startPlacer(ctx context.Context, t *trial.Test, servers []cluster.Server) (*placer, error) {
	sp := t.Spec
	if !sp.Places() {
		return nil, nil
	}
	job := etcdsys.Job{Topology: sp.TopologyConfig(), Policy: sp.PlacementPolicy(), Members: map[int]string{}, Keep: sp.InitialLeader}
	for _, s := range servers {
		job.Members[s.ID] = s.Client
	}
	b, err := json.MarshalIndent(job, "", "  ")
	if err != nil {
		return nil, err
	}
	p := &placer{argv: r.o.Controller, job: filepath.Join(r.dir, JobFile), logs: filepath.Join(r.dir, "logs", "placement.log"),
		start: r.start, add: r.harness.add}
	if len(p.argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("placement controller: %w", err)
		}
		p.argv = []string{exe, "place"}
	}
	if err := os.WriteFile(p.job, append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p.logs), 0o755); err != nil {
		return nil, err
	}
	return p, p.launch(ctx)
}

// launch starts a life of the controller. It dies with the harness (Pdeathsig), so
// nothing is left behind even when the harness is killed.
func (p *placer) launch(ctx context.Context) error {
	logf, err := os.OpenFile(p.logs, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.argv[0], append(p.argv[1:], "--job", p.job)...)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		logf.Close()
		return fmt.Errorf("placement controller: %w", err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.proc, p.done, p.kill = cmd, done, false
	p.mu.Unlock()
	go func() {
		defer close(done)
		defer logf.Close()
		p.read(out)
		err := cmd.Wait()
		p.mu.Lock()
		killed := p.kill
		p.mu.Unlock()
		if !killed && ctx.Err() == nil {
			p.add(record.Harness(time.Since(p.start), event.PlacementStopped, 0, fmt.Errorf("the controller exited: %v (%s)", err, p.logs)))
		}
	}()
	return nil
}

// read turns the controller's decisions into PLACEMENT records on the run's clock.
func (p *placer) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	zero := netem.At(p.start)
	for sc.Scan() {
		var d struct {
			AtNS   int64  `json:"at_ns"`
			Leader int    `json:"leader"`
			Choice int    `json:"choice"`
			Why    string `json:"why"`
			Moved  string `json:"moved"`
		}
		line := append([]byte(nil), sc.Bytes()...)
		if json.Unmarshal(line, &d) != nil {
			continue
		}
		r := record.Harness(time.Duration(d.AtNS-zero), event.Placement, d.Choice, nil)
		r.Leader, r.Reason, r.Placement = d.Leader, d.Why, line
		if d.Moved != "" && d.Moved != "ok" {
			r.Error = d.Moved
		}
		p.add(r)
	}
}

// stop ends the controller's life, killed (a fault: SIGKILL, at once) or asked
// (SIGTERM, then SIGKILL if it does not go), and waits until it is gone.
func (p *placer) stop(kill bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	cmd, done := p.proc, p.done
	p.kill = true
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	p.mu.Lock()
	p.proc = nil
	p.mu.Unlock()
}

// play kills and restarts the controller at the spec's instants, each a harness
// record, until ctx ends.
func (p *placer) play(ctx context.Context, faults []spec.ControllerFault) {
	clock := nemesis.Wall{Start: p.start}
	for _, f := range faults {
		if clock.WaitUntil(ctx, f.At) != nil {
			return
		}
		at := clock.Now()
		if f.Kill {
			p.stop(true)
			r := record.Harness(at, event.PlacementStopped, 0, nil)
			r.Reason = "killed by " + f.Source
			p.add(r)
			continue
		}
		err := p.launch(ctx)
		r := record.Harness(at, event.PlacementStarted, 0, err)
		r.Reason = "started again by " + f.Source
		p.add(r)
	}
}
