package bridge

import (
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

	"github.com/polebench/polebench/cluster/internal/procs"
)

// Start starts cmd with ns as its network namespace: a locked thread enters ns and
// forks there (a child inherits its parent thread's namespaces), then the thread is
// thrown away. The child is checked to really be in ns. The child gets its own process
// group, so a terminal's ^C reaches the harness, which stops the servers in order.
func Start(ns netns.NsHandle, cmd *exec.Cmd) (*procs.Proc, error) {
	want, err := Inode(ns)
	if err != nil {
		return nil, fmt.Errorf("namespace handle: %w", err)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	// No Pdeathsig: it fires when the forking thread exits, which here is at once.
	err = OnThread(func() error {
		if err := netns.Set(ns); err != nil {
			return fmt.Errorf("enter namespace: %w", err)
		}
		return cmd.Start()
	})
	if err != nil {
		return nil, err
	}
	p := procs.Watch(cmd)
	got, err := ProcInode(cmd.Process.Pid)
	switch {
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH):
		// Exiting or exited already (a zombie has no namespace): the caller sees it died.
		err = nil
	case err != nil:
		// Anything else is only an error if the process is still there to be wrong.
		select {
		case <-p.Done():
			err = nil
		case <-time.After(time.Second):
		}
	case got != want:
		err = fmt.Errorf("network namespace inode %d, want %d", got, want)
	}
	if err != nil {
		p.Kill()
		<-p.Done()
		return nil, fmt.Errorf("%s (pid %d) is not in its namespace: %w", cmd.Path, cmd.Process.Pid, err)
	}
	return p, nil
}

// ProcInode reads the inode of a process's network namespace.
func ProcInode(pid int) (uint64, error) {
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

// procsIn returns the pids of processes whose network namespace has one of inodes.
func procsIn(inodes map[uint64]string) (map[int]string, error) {
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
		ino, err := ProcInode(pid)
		if err != nil {
			continue // gone, a zombie, or a kernel thread
		}
		if name, ok := inodes[ino]; ok {
			out[pid] = name
		}
	}
	return out, nil
}

// comm is a process's command name, for reports.
func comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
