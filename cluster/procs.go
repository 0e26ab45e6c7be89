package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// nsProc is a child process started inside a network namespace, reaped by its own
// goroutine so that a killed child never stays a zombie.
type nsProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // the exit status; read only after done is closed
}

// startInNetns starts cmd with ns as its network namespace: a locked thread enters ns
// and forks there (a child inherits its parent thread's namespaces), then the thread is
// thrown away. The child is checked to really be in ns. The child gets its own process
// group, so a terminal's ^C reaches the harness, which stops the servers in order.
func startInNetns(ns netns.NsHandle, cmd *exec.Cmd) (*nsProc, error) {
	want, err := netnsInode(ns)
	if err != nil {
		return nil, fmt.Errorf("namespace handle: %w", err)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	// No Pdeathsig: it fires when the forking thread exits, which here is at once.
	err = netnsOnThread(func() error {
		if err := netns.Set(ns); err != nil {
			return fmt.Errorf("enter namespace: %w", err)
		}
		return cmd.Start()
	})
	if err != nil {
		return nil, err
	}
	p := &nsProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	got, err := procNetnsInode(cmd.Process.Pid)
	switch {
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH):
		// Exiting or exited already (a zombie has no namespace): the caller sees it died.
		err = nil
	case err != nil:
		// Anything else is only an error if the process is still there to be wrong.
		select {
		case <-p.done:
			err = nil
		case <-time.After(time.Second):
		}
	case got != want:
		err = fmt.Errorf("network namespace inode %d, want %d", got, want)
	}
	if err != nil {
		p.kill()
		<-p.done
		return nil, fmt.Errorf("%s (pid %d) is not in its namespace: %w", cmd.Path, cmd.Process.Pid, err)
	}
	return p, nil
}

// startLocal starts cmd in the harness's own namespace, in its own process group (a
// terminal's ^C reaches the harness, which stops the servers in order), with SIGKILL as
// its parent-death signal so that it does not outlive a killed harness.
func startLocal(cmd *exec.Cmd) (*nsProc, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &nsProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// procNetnsInode reads the inode of a process's network namespace.
func procNetnsInode(pid int) (uint64, error) {
	link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return 0, err
	}
	s, ok := strings.CutPrefix(link, "net:[")
	s, ok2 := strings.CutSuffix(s, "]")
	if !ok || !ok2 {
		return 0, fmt.Errorf("unexpected namespace link %q", link)
	}
	return strconv.ParseUint(s, 10, 64)
}

func (p *nsProc) pid() int { return p.cmd.Process.Pid }

func (p *nsProc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *nsProc) kill() { _ = p.cmd.Process.Signal(unix.SIGKILL) }

// wait waits for the process to exit.
func (p *nsProc) wait(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for pid %d to exit: %w", p.pid(), ctx.Err())
	}
}

// stop sends SIGTERM and, if the process is still there after grace, SIGKILL.
func (p *nsProc) stop(grace time.Duration) (killed bool) {
	if !p.alive() {
		return false
	}
	_ = p.cmd.Process.Signal(unix.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return false
	case <-t.C:
		p.kill()
		<-p.done
		return true
	}
}

// exitString describes how the process ended.
func (p *nsProc) exitString() string {
	var ee *exec.ExitError
	switch {
	case p.alive():
		return "running"
	case p.err == nil:
		return "exited with status 0"
	case errors.As(p.err, &ee):
		return ee.ProcessState.String()
	default:
		return p.err.Error()
	}
}

// procsInNetns returns the pids of processes whose network namespace has one of inodes.
func procsInNetns(inodes map[uint64]string) (map[int]string, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ino, err := procNetnsInode(pid)
		if err != nil {
			continue // gone, a zombie, or a kernel thread
		}
		if name, ok := inodes[ino]; ok {
			out[pid] = name
		}
	}
	return out, nil
}

// procComm is a process's command name, for reports.
func procComm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// procSet is a cluster's server processes by id, for the backends that run servers as
// child processes (netns, ZooKeeper's JVMs, the benchmark's poled processes): started,
// killed, waited for and stopped alike.
type procSet struct {
	name    string                           // in errors and logs: "netns", "zookeeper", "poled"
	start   func(id, n int) (*nsProc, error) // the n-th start (from 1) of server id
	logFile func(id int) string              // the server's log, for errors and CollectLogs
	log     *slog.Logger

	mu     sync.Mutex
	procs  map[int]*nsProc
	starts map[int]int
	closed bool // stopAll ran: no more starts
}

func newProcSet(name string, log *slog.Logger, logFile func(id int) string, start func(id, n int) (*nsProc, error)) *procSet {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &procSet{name: name, start: start, logFile: logFile, log: log, procs: map[int]*nsProc{}, starts: map[int]int{}}
}

// spawn starts server id, unless it runs or the set was stopped.
func (s *procSet) spawn(id int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%s: cluster closed", s.name)
	}
	if p := s.procs[id]; p != nil && p.alive() {
		return fmt.Errorf("%s: p%d is running (pid %d)", s.name, id, p.pid())
	}
	s.starts[id]++
	p, err := s.start(id, s.starts[id])
	if err != nil {
		return fmt.Errorf("%s: start p%d: %w", s.name, id, err)
	}
	s.procs[id] = p
	s.log.Debug(s.name+": started", "server", id, "pid", p.pid(), "start", s.starts[id])
	return nil
}

func (s *procSet) proc(id int) *nsProc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.procs[id]
}

// Pid is server id's process id, 0 if it is not running.
func (s *procSet) Pid(id int) int {
	if p := s.proc(id); p != nil && p.alive() {
		return p.pid()
	}
	return 0
}

// Alive reports whether server id's process runs.
func (s *procSet) Alive(id int) bool { return s.Pid(id) != 0 }

// Kill sends server id SIGKILL and waits until it is gone.
func (s *procSet) Kill(ctx context.Context, id int) error {
	p := s.proc(id)
	if p == nil || !p.alive() {
		return fmt.Errorf("%s: p%d is not running", s.name, id)
	}
	p.kill()
	if err := p.wait(ctx); err != nil {
		return fmt.Errorf("%s: kill p%d: %w", s.name, id, err)
	}
	s.log.Info(s.name+": killed", "server", id, "pid", p.pid())
	return nil
}

// waitListening waits, up to timeout, until server id accepts connections on each of
// addrs in turn; a server that exits first, or a timeout, fails with its log's end.
func (s *procSet) waitListening(ctx context.Context, id int, timeout time.Duration, addrs ...string) error {
	p := s.proc(id)
	if p == nil {
		return fmt.Errorf("%s: p%d was never started", s.name, id)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, addr := range addrs {
		if err := waitListening(ctx, addr, func() bool { return !p.alive() }); err != nil {
			return fmt.Errorf("%s: p%d does not listen on %s (%s): %w; its log ends:\n%s", s.name, id, addr, p.exitString(), err, s.logTail(id))
		}
	}
	return nil
}

// logTail is the end of server id's log, for error messages.
func (s *procSet) logTail(id int) string {
	b, err := os.ReadFile(s.logFile(id))
	if err != nil {
		return err.Error()
	}
	return lastLines(string(b), 15)
}

// stopAll refuses further starts and stops every process: SIGTERM, then SIGKILL for
// one still there after grace.
func (s *procSet) stopAll(grace time.Duration) {
	s.mu.Lock()
	s.closed = true
	procs := maps.Clone(s.procs)
	s.mu.Unlock()
	var wg sync.WaitGroup
	for id, p := range procs {
		wg.Go(func() {
			if p.stop(grace) {
				s.log.Warn(s.name+": server ignored SIGTERM, killed", "server", id, "grace", grace)
			}
		})
	}
	wg.Wait()
}

// collectLogs copies each of ids' logs into dir as p<ID>.log; a server that never
// wrote one is skipped.
func (s *procSet) collectLogs(ctx context.Context, ids []int, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := copyFile(s.logFile(id), filepath.Join(dir, "p"+strconv.Itoa(id)+".log")); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("%s: log of p%d: %w", s.name, id, err))
		}
	}
	return errors.Join(errs...)
}
