// Package procs runs a cluster's servers as child processes of the harness: one
// process, reaped by its own goroutine (Proc), and a cluster's set of them by server id,
// started, killed, waited for and stopped alike (Set). The netns backend, the ZooKeeper
// flavor's JVMs and the local backend's poled processes share it; package bridge starts
// a process inside a network namespace.
package procs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// Grace is how long a server has between SIGTERM and SIGKILL when its cluster
	// closes.
	Grace = 5 * time.Second
	// StartTimeout is how long a poled process may take to accept connections.
	StartTimeout = 30 * time.Second
)

// Proc is a server's process: a child, reaped by its own goroutine so that a killed
// child never stays a zombie, or one the harness did not fork (a container's, Attach).
type Proc struct {
	pid    int
	signal func(os.Signal) error
	done   chan struct{}
	err    error // the exit status; read only after done is closed
}

// Watch reaps cmd, started already, from now on.
func Watch(cmd *exec.Cmd) *Proc { return Attach(cmd.Process.Pid, cmd.Process.Signal, cmd.Wait) }

// Attach is the process pid of this host that signal reaches and wait waits for (it
// returns how the process ended): a container's first process, which its engine
// starts, signals and reaps.
func Attach(pid int, signal func(os.Signal) error, wait func() error) *Proc {
	p := &Proc{pid: pid, signal: signal, done: make(chan struct{})}
	go func() {
		p.err = wait()
		close(p.done)
	}()
	return p
}

// Start starts cmd in the harness's own namespace, in its own process group (a
// terminal's ^C reaches the harness, which stops the servers in order), with SIGKILL as
// its parent-death signal so that it does not outlive a killed harness.
func Start(cmd *exec.Cmd) (*Proc, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return Watch(cmd), nil
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.pid }

// Done is closed once the process has exited and been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Alive says whether the process has not exited yet.
func (p *Proc) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL.
func (p *Proc) Kill() { _ = p.signal(unix.SIGKILL) }

// Wait waits for the process to exit.
func (p *Proc) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for pid %d to exit: %w", p.Pid(), ctx.Err())
	}
}

// Stop sends SIGTERM and, if the process is still there after grace, SIGKILL.
func (p *Proc) Stop(grace time.Duration) (killed bool) {
	if !p.Alive() {
		return false
	}
	_ = p.signal(unix.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return false
	case <-t.C:
		p.Kill()
		<-p.done
		return true
	}
}

// ExitString describes how the process ended.
func (p *Proc) ExitString() string {
	var ee *exec.ExitError
	switch {
	case p.Alive():
		return "running"
	case p.err == nil:
		return "exited with status 0"
	case errors.As(p.err, &ee):
		return ee.ProcessState.String()
	default:
		return p.err.Error()
	}
}

// Set is a cluster's server processes by id: started, killed, waited for and stopped
// alike.
type Set struct {
	name    string                         // in errors and logs: "netns", "zookeeper", "poled"
	start   func(id, n int) (*Proc, error) // the n-th start (from 1) of server id
	logFile func(id int) string            // the server's log, for errors and CollectLogs
	log     *slog.Logger

	mu     sync.Mutex
	procs  map[int]*Proc
	starts map[int]int
	closed bool // StopAll ran: no more starts
}

// NewSet is the set of a cluster that name names in errors and logs; start starts the
// n-th start (from 1) of server id; logFile is where server id logs.
func NewSet(name string, log *slog.Logger, logFile func(id int) string, start func(id, n int) (*Proc, error)) *Set {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Set{name: name, start: start, logFile: logFile, log: log, procs: map[int]*Proc{}, starts: map[int]int{}}
}

// Spawn starts server id, unless it runs or the set was stopped.
func (s *Set) Spawn(id int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%s: cluster closed", s.name)
	}
	if p := s.procs[id]; p != nil && p.Alive() {
		return fmt.Errorf("%s: p%d is running (pid %d)", s.name, id, p.Pid())
	}
	s.starts[id]++
	p, err := s.start(id, s.starts[id])
	if err != nil {
		return fmt.Errorf("%s: start p%d: %w", s.name, id, err)
	}
	s.procs[id] = p
	s.log.Debug(s.name+": started", "server", id, "pid", p.Pid(), "start", s.starts[id])
	return nil
}

func (s *Set) proc(id int) *Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.procs[id]
}

// Pid is server id's process id, 0 if it is not running.
func (s *Set) Pid(id int) int {
	if p := s.proc(id); p != nil && p.Alive() {
		return p.Pid()
	}
	return 0
}

// Alive reports whether server id's process runs.
func (s *Set) Alive(id int) bool { return s.Pid(id) != 0 }

// Kill sends server id SIGKILL and waits until it is gone.
func (s *Set) Kill(ctx context.Context, id int) error {
	p := s.proc(id)
	if p == nil || !p.Alive() {
		return fmt.Errorf("%s: p%d is not running", s.name, id)
	}
	p.Kill()
	if err := p.Wait(ctx); err != nil {
		return fmt.Errorf("%s: kill p%d: %w", s.name, id, err)
	}
	s.log.Info(s.name+": killed", "server", id, "pid", p.Pid())
	return nil
}

// WaitListening waits, up to timeout, until server id accepts connections on each of
// addrs in turn; a server that exits first, or a timeout, fails with its log's end.
func (s *Set) WaitListening(ctx context.Context, id int, timeout time.Duration, addrs ...string) error {
	p := s.proc(id)
	if p == nil {
		return fmt.Errorf("%s: p%d was never started", s.name, id)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, addr := range addrs {
		if err := WaitListening(ctx, addr, func() bool { return !p.Alive() }); err != nil {
			return fmt.Errorf("%s: p%d does not listen on %s (%s): %w; its log ends:\n%s", s.name, id, addr, p.ExitString(), err, s.logTail(id))
		}
	}
	return nil
}

// logTail is the end of server id's log, for error messages.
func (s *Set) logTail(id int) string {
	b, err := os.ReadFile(s.logFile(id))
	if err != nil {
		return err.Error()
	}
	return LastLines(string(b), 15)
}

// StopAll refuses further starts and stops every process: SIGTERM, then SIGKILL for
// one still there after grace.
func (s *Set) StopAll(grace time.Duration) {
	s.mu.Lock()
	s.closed = true
	procs := maps.Clone(s.procs)
	s.mu.Unlock()
	var wg sync.WaitGroup
	for id, p := range procs {
		wg.Go(func() {
			if p.Stop(grace) {
				s.log.Warn(s.name+": server ignored SIGTERM, killed", "server", id, "grace", grace)
			}
		})
	}
	wg.Wait()
}

// CollectLogs copies each of ids' logs into dir as p<ID>.log; a server that never
// wrote one is skipped.
func (s *Set) CollectLogs(ctx context.Context, ids []int, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := CopyFile(s.logFile(id), filepath.Join(dir, "p"+strconv.Itoa(id)+".log")); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("%s: log of p%d: %w", s.name, id, err))
		}
	}
	return errors.Join(errs...)
}

// WaitListening waits until addr accepts connections; dead says the server died.
func WaitListening(ctx context.Context, addr string, dead func() bool) error {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		if dead() {
			return errors.New("exited")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// LastLines is the end of a log, n lines, for error messages.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// CopyFile copies the file from to the file to.
func CopyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// KillByArgs SIGKILLs the host's processes (but this one) whose command line match
// names (what is the label it found there), as a crashed harness left them, and says
// which it killed: "NAME process PID (WHAT)".
func KillByArgs(name string, match func(args [][]byte) (what string, ok bool)) ([]string, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var killed []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if what, ok := match(bytes.Split(cmd, []byte{0})); ok && unix.Kill(pid, unix.SIGKILL) == nil {
			killed = append(killed, fmt.Sprintf("%s process %d (%s)", name, pid, what))
		}
	}
	return killed, nil
}
