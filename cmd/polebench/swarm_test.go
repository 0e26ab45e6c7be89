package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/analysis"
	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/swarm/swarmtest"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/record"
	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trial"
	"github.com/polebench/polebench/workload"
)

// TestSwarmRun is CI's run of the swarm backend, the command a user types:
// `polebench run two-dc --backend swarm --duration 16s --crash-at 8s --warmup 2s --settle 4s --rate 100 --repetitions 1`
// on a single-node swarm of this machine's engine (initialised for the test and left
// after it). History elects p4 (or the follower ahead at the crash), which commits and
// acknowledges writes after the crash, no acknowledged write is lost, servers.json says where servers ran and how links were emulated, and
// nothing of the run is left on the engine. How far above the model the swarm lands is
// the nightly suite's measurement.
func TestSwarmRun(t *testing.T) {
	if testing.Short() {
		t.Skip("a 16 s experiment; -short skips it")
	}
	swarmtest.Manager(t)
	dir := t.TempDir()
	code, out, errs := runCLI("run", "two-dc", "--backend", "swarm", "--duration", "16s", "--crash-at", "8s", "--warmup", "2s", "--settle", "4s", "--rate", "100", "--repetitions", "1", "--out", dir)
	t.Logf("polebench run:\n%s", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "clients to servers, a hop the model does not have: D1 ") {
		t.Errorf("the run does not report the clients' hop to the servers")
	}
	var sum analysis.Summary
	readJSONFile(t, filepath.Join(dir, "summary.json"), &sum)
	var servers struct {
		Links   string
		Label   string
		Servers []cluster.Server
	}
	readJSONFile(t, filepath.Join(dir, "servers.json"), &servers)
	if servers.Links == "" || len(servers.Servers) != 5 || servers.Servers[0].Node == "" || servers.Servers[0].Links == "" {
		t.Errorf("servers.json does not say where servers ran and how they emulated their links: %+v", servers)
	}

	if want := historyWinner(t, sum.ElectionZxids); sum.NewLeader != want {
		t.Errorf("history elected p%d, want p%d", sum.NewLeader, want)
	}
	if sum.LostAcknowledgedWrites != 0 {
		t.Errorf("%d acknowledged writes lost", sum.LostAcknowledgedWrites)
	}
	if sum.Requests.OK == 0 {
		t.Fatal("no request succeeded")
	}
	// The before window is the run's own, and the service after the crash holds on
	// any host; whether the run settled in time for an after window is the host's (a
	// starved CI machine's run did not).
	if len(sum.LatencyMS["before"]) == 0 {
		t.Error("no before window")
	}
	_, h, _, err := trial.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	ev, acked, err := servedAfterCrash(h.Timeline, h.Records, sum.InitialLeader)
	if err != nil {
		t.Error(err)
	}
	t.Logf("p%d crashed at %v, p%d's first commit at %v, %d writes acknowledged after it; after window: %d DCs (the host's)",
		sum.InitialLeader, ev.Crash, ev.NewLeader, ev.FirstCommit, acked, len(sum.LatencyMS["after"]))
	left, err := cluster.Down(context.Background(), servers.Label)
	if err != nil || len(left) > 0 {
		t.Errorf("after the run, cluster down %s removed %v (%v): the run left them behind", servers.Label, left, err)
	}
}

// servedAfterCrash checks what a run whose initial leader crashed shows on any host: a
// new leader took over (its first commit after the crash) and clients had writes
// acknowledged after that commit. It returns the run's instants and how many writes
// were acknowledged after it.
func servedAfterCrash(tl []record.Record, recs []workload.Record, initial int) (analysis.Events, int, error) {
	ev := analysis.FindEvents(tl, analysis.Events{InitialLeader: initial})
	switch {
	case ev.Crash == 0:
		return ev, 0, errors.New("no crash of the initial leader recorded")
	case ev.NewLeader == 0:
		return ev, 0, fmt.Errorf("no leader committed after p%d's crash at %v", initial, ev.Crash)
	case ev.NewLeader == initial:
		return ev, 0, fmt.Errorf("the crashed p%d led again", initial)
	}
	acked := 0
	for _, r := range recs {
		if r.Outcome == workload.OK && r.Done > ev.FirstCommit {
			acked++
		}
	}
	if acked == 0 {
		return ev, 0, fmt.Errorf("no write acknowledged after p%d's first commit at %v", ev.NewLeader, ev.FirstCommit)
	}
	return ev, acked, nil
}

// TestServedAfterCrash: the claim fails for a run with no new leader, and for one
// whose new leader acknowledged nothing.
func TestServedAfterCrash(t *testing.T) {
	crash := record.Record{AtMS: 12000, Event: event.Event{Kind: event.Kill, Server: 5}, Source: record.SourceHarness, Fault: nemesis.Crash}
	leading := record.Record{AtMS: 12300, Event: event.Event{Kind: event.Leading, Server: 4}, Source: record.SourceNode}
	first := record.Record{AtMS: 12400, Event: event.Event{Kind: event.FirstCommit, Server: 4}, Source: record.SourceNode}
	ok := func(done time.Duration) workload.Record { return workload.Record{Outcome: workload.OK, Done: done} }
	failed := workload.Record{Outcome: workload.Failed, Done: 13 * time.Second}
	for _, c := range []struct {
		name string
		tl   []record.Record
		recs []workload.Record
		want string // the error, "" for none
	}{
		{"served", []record.Record{crash, leading, first}, []workload.Record{ok(5 * time.Second), ok(13 * time.Second)}, ""},
		{"no crash", []record.Record{leading, first}, []workload.Record{ok(13 * time.Second)}, "no crash"},
		{"no new leader", []record.Record{crash, leading}, []workload.Record{ok(13 * time.Second)}, "no leader committed"},
		{"nothing acknowledged after", []record.Record{crash, leading, first}, []workload.Record{ok(5 * time.Second), failed}, "no write acknowledged after p4's first commit"},
	} {
		_, _, err := servedAfterCrash(c.tl, c.recs, 5)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// historyWinner is whom history must elect: p4 with the servers in sync (the model's
// and the paper's winner), or the follower ahead when a proposal was in flight at the
// crash (highest zxid, ties by highest id).
func historyWinner(t *testing.T, zxids map[int]uint64) int {
	t.Helper()
	s, err := spec.Resolve("two-dc")
	if err != nil {
		t.Fatal(err)
	}
	leader, err := s.HistoryElects(zxids)
	if err != nil {
		t.Fatal(err)
	}
	if leader != 4 {
		t.Logf("servers out of sync at the crash (%v): history must elect p%d", zxids, leader)
	}
	return leader
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
