package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
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
