// Package engine holds what the backends that drive Docker engines (docker, swarm)
// share: the label on a server's objects, the objects a run made, killing a container
// and reading its log, bounded contexts for steps that must not be abandoned half done,
// and a run's servers by id; and what the docker backend's runs share whichever
// replica their containers run (poled, the etcd flavor's members: containers.go).
package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/polebench/polebench/cluster"
)

// LabelServer carries the server id on containers and volumes (and services).
const LabelServer = "polebench.server"

// CleanupTimeout bounds a step that must finish although the caller's context is
// gone (Detach).
const CleanupTimeout = 30 * time.Second

// Detach is a context for one step that must not be abandoned half done when ctx is
// cancelled (Ctrl-C): making an object, or removing what a run made. It is bounded.
func Detach(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
}

// Object is a container, volume, network, service or config a run made; ID is what
// removes it.
type Object struct{ Kind, Name, ID string }

func (o Object) String() string { return o.Kind + " " + o.Name }

// KillContainer sends SIGKILL to container cid on eng, server id's, and waits until it
// has stopped; one that had stopped already is not an error.
func KillContainer(ctx context.Context, eng *client.Client, cid string, id int) error {
	if err := eng.ContainerKill(ctx, cid, "SIGKILL"); err != nil {
		info, ierr := eng.ContainerInspect(ctx, cid)
		if ierr != nil || info.State == nil || info.State.Running {
			return fmt.Errorf("kill p%d: %w", id, err)
		}
	}
	waitc, errc := eng.ContainerWait(ctx, cid, container.WaitConditionNotRunning)
	select {
	case <-waitc:
	case err := <-errc:
		return fmt.Errorf("kill p%d: waiting for it to stop: %w", id, err)
	}
	return nil
}

// LogText is what an engine's multiplexed log stream (a container's or a service's)
// says, for an error message.
func LogText(rc io.ReadCloser, err error) string {
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := stdcopy.StdCopy(&buf, &buf, rc); err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	return strings.TrimRight(buf.String(), "\n")
}

// WriteLog returns what writes an engine's multiplexed log stream (a container's or a
// service's) into path, stdout and stderr together.
func WriteLog(path string) func(io.ReadCloser, error) error {
	return func(rc io.ReadCloser, err error) error {
		if err != nil {
			return err
		}
		defer rc.Close()
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if _, err := stdcopy.StdCopy(f, f, rc); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
}

// ByID is server id (1..N) of a backend's list.
func ByID[T any](servers []*T, id int) (*T, error) {
	if id < 1 || id > len(servers) {
		return nil, fmt.Errorf("no server p%d (servers are p1..p%d)", id, len(servers))
	}
	return servers[id-1], nil
}

// ServerViews is what Cluster.Servers reports of a backend's list.
func ServerViews[T any](list []*T, get func(*T) cluster.Server) []cluster.Server {
	out := make([]cluster.Server, len(list))
	for i, s := range list {
		out[i] = get(s)
	}
	return out
}
