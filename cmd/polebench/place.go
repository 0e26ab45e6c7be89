package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/polebench/polebench/placement"
	"github.com/polebench/polebench/placement/controller"
	"github.com/polebench/polebench/placement/etcdsys"
	"github.com/polebench/polebench/spec"
)

const placeArgs = "(SPEC --members p1=URL,... --policy P [--priority 3,1,...] [overrides] | --job FILE) [--events FILE]"

const placeSummary = "Run a placement controller beside an etcd cluster until interrupted: each round it reads the members' status and measured round trips through etcd's API, computes POLE's scores as the model does on the spec's data centers and rates, and moves the leader (etcd's MoveLeader) to the policy's choice; decisions as JSON lines"

func runPlace(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("place", placeArgs, placeSummary, stderr)
	members := fs.String("members", "", "the members' client URLs by name, p<id>=URL, comma-separated (names as the spec's server ids)")
	policy := fs.String("policy", placement.Latency, "the policy: "+strings.Join(placement.Names(), ", "))
	priority := fs.String("priority", "", "for --policy priority: server ids, most preferred first, comma-separated")
	margin := fs.Float64("margin", placement.DefaultMargin, "the relative gain of the policy's score a move needs over the leader's")
	maxLag := fs.Uint64("max-lag", placement.DefaultMaxLag, "how many raft entries a member may trail the leader and still be moved to")
	interval := fs.Duration("interval", controller.DefaultInterval, "how often to observe the cluster")
	events := fs.String("events", "", "append decisions to this file as JSON lines (default: standard output)")
	jobFile := fs.String("job", "", "run the job a harness wrote (placement.json in a run directory: the deployment, policy and members) instead of SPEC and flags")
	sets := overrideFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(err)
	}
	var job etcdsys.Job
	if *jobFile != "" {
		if len(pos) > 0 || len(*sets) > 0 {
			return fmt.Errorf("--job gives the deployment and policy: no SPEC or overrides beside it")
		}
		if job, err = etcdsys.ReadJob(*jobFile); err != nil {
			return err
		}
	} else {
		if len(pos) != 1 {
			fs.Usage()
			return errUsage
		}
		sp, err := spec.Resolve(pos[0])
		if err == nil {
			sp, err = sp.With(*sets...)
		}
		if err != nil {
			return err
		}
		job = etcdsys.Job{Topology: sp.TopologyConfig(), Interval: *interval, MaxLag: *maxLag,
			Policy: placement.Policy{Name: *policy, Margin: *margin}}
		if job.Policy.Priority, err = parseIDs(*priority); err != nil {
			return fmt.Errorf("--priority: %w", err)
		}
		if job.Members, err = parseMembers(*members, sp.N()); err != nil {
			return err
		}
	}
	out := stdout
	if *events != "" {
		f, err := os.OpenFile(*events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return etcdsys.Serve(ctx, job, out, slog.New(slog.NewTextHandler(stderr, nil)))
}

// parseMembers reads p<id>=URL pairs for servers 1..n, every one named once.
func parseMembers(s string, n int) (map[int]string, error) {
	out := map[int]string{}
	for _, kv := range strings.Split(s, ",") {
		name, url, ok := strings.Cut(strings.TrimSpace(kv), "=")
		id, err := strconv.Atoi(strings.TrimPrefix(name, "p"))
		switch {
		case !ok || err != nil || !strings.HasPrefix(name, "p"):
			return nil, fmt.Errorf("--members: %q is not p<id>=URL", kv)
		case id < 1 || id > n:
			return nil, fmt.Errorf("--members: %s is not a server of the spec (p1..p%d)", name, n)
		case out[id] != "":
			return nil, fmt.Errorf("--members: %s is named twice", name)
		}
		out[id] = url
	}
	if len(out) != n {
		return nil, fmt.Errorf("--members names %d of the spec's %d servers", len(out), n)
	}
	return out, nil
}

func parseIDs(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var ids []int
	for _, f := range strings.Split(s, ",") {
		id, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(f), "p"))
		if err != nil {
			return nil, fmt.Errorf("%q is not a server id", f)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
