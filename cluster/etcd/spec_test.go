package etcd_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/polebench/polebench/cluster/etcd"
	"github.com/polebench/polebench/spec"
)

// base is a two-DC spec of flavor etcd; each case appends to it.
const base = `name: x
datacenters:
  - {name: D1, endpoint: tud, servers: [1, 2]}
  - {name: D2, endpoint: cern, servers: [3, 4, 5]}
rates: {total: 100}
initial_leader: 5
crash_at: 10s
duration: 20s
`

// A spec of flavor etcd with a setting out of range, an unknown one, a fault kind
// (the disk's), an outdated server or a backend the flavor does not carry, or another oracle than Raft's: an error
// naming the file, line and field.
func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct{ extra, want string }{
		{"flavor: {name: etcd, settings: {heartbeat: 5ms}}\n",
			`x.yaml:9: flavor.settings.heartbeat: flavor etcd: 5ms is below 10ms`},
		{"flavor: {name: etcd, settings: {heartbeat: 100ms, election_timeout: 300ms}}\n",
			`x.yaml:9: flavor.settings.election_timeout: flavor etcd: 300ms is less than 5 heartbeats (500ms): etcd refuses it`},
		{"flavor: {name: etcd, settings: {election_timeout: 60s}}\n",
			`x.yaml:9: flavor.settings.election_timeout: flavor etcd: 1m0s is above etcd's 50s`},
		{"flavor: {name: etcd, settings: {heartbeat: 1.5ms}}\n",
			`x.yaml:9: flavor.settings.heartbeat: flavor etcd: 1.5ms: etcd takes whole milliseconds`},
		{"flavor: {name: etcd, settings: {heartbeat: soon}}\n",
			`x.yaml:9: flavor.settings.heartbeat: flavor etcd: "soon" is not a duration (like 100ms)`},
		{"flavor:\n  name: etcd\n  settings:\n    pre_vote: maybe\n",
			`x.yaml:12: flavor.settings.pre_vote: flavor etcd: "maybe" is not true or false`},
		{"flavor:\n  name: etcd\n  settings:\n    snapshot_count: 10\n",
			`x.yaml:12: flavor.settings.snapshot_count: flavor etcd: unknown setting (known: heartbeat, election_timeout, pre_vote)`},
		{"flavor: etcd\nfaults:\n  - {at: 5s, slow_disk: {server: 1, delay: 20ms}}\n",
			`x.yaml:11: faults[0]: flavor etcd: only kill, restart, pause, resume, partition, isolate, isolate-leader, one-way and heal faults (disk faults are poled's, which etcd cannot do)`},
		{"flavor: etcd\nfaults:\n  - {at: 5s, lose_unsynced: 1}\n",
			`x.yaml:11: faults[0]: flavor etcd: only kill, restart, pause, resume, partition, isolate, isolate-leader, one-way and heal faults (disk faults are poled's, which etcd cannot do)`},
		{"flavor: etcd\noutdate:\n  - {server: 1, kill_at: 5s, restart_at: 15s}\n",
			`x.yaml:10: outdate: flavor etcd: an outdated server needs its broadcast channel cut by the replica itself, which etcd cannot do`},
		{"flavor: etcd\nlinks:\n  default:\n    schedule:\n      - {at: 5s, rtt_ms: 50}\n",
			`x.yaml:12: links.default.schedule: flavor etcd does not change links during a run: its links are set once, when its servers start`},
		{"flavor: etcd\nlinks:\n  default: {loss: 1}\n",
			`x.yaml:11: links.default.loss: flavor etcd's links on the local backend are user space, carrying TCP streams, which lose nothing (use netns or docker for kernel netem)`},
		{"flavor: etcd\nbackend: swarm\n",
			`x.yaml:10: backend: flavor etcd runs on the local, netns and docker backends, not "swarm"`},
		{"flavor: etcd\noracle: latency\n",
			`x.yaml:10: oracle: flavor etcd: only the history oracle exists (Raft's vote rule is the history oracle's (the most up-to-date log wins), its ties broken by whose timeout fires first), not "latency"`},
	} {
		_, err := spec.Parse("x.yaml", []byte(base+tc.extra))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v\nwant %s", tc.extra, err, tc.want)
		}
	}
	if _, err := spec.Parse("x.yaml", []byte(base+"flavor: {name: poled, settings: {heartbeat: 1s}}\n")); err == nil ||
		err.Error() != `x.yaml:9: flavor.settings: flavor poled has no settings of its own` {
		t.Errorf("poled with settings: %v", err)
	}
}

// The defaults scale with the spec's widest RTT (heartbeat about it, at least etcd's
// 100 ms; election timeout ten heartbeats), and land in the resolved spec.
func TestSpecDefaults(t *testing.T) {
	for _, tc := range []struct{ extra, hb, el string }{
		{"flavor: etcd\n", "100ms", "1s"}, // two-dc: 20.75 ms
		{"flavor: etcd\nrtt:\n  - {between: [D1, D2], ms: 150.2}\n", "151ms", "1.51s"},
		{"flavor: {name: etcd, settings: {heartbeat: 50ms}}\n", "50ms", "500ms"},
		{"flavor: {name: etcd, settings: {heartbeat: 50ms, election_timeout: 2s}}\n", "50ms", "2s"},
	} {
		s, err := spec.Parse("x.yaml", []byte(base+tc.extra))
		if err != nil {
			t.Fatalf("%s: %v", tc.extra, err)
		}
		if got := s.FlavorSettings; got[etcd.KeyHeartbeat] != tc.hb || got[etcd.KeyElection] != tc.el || got[etcd.KeyPreVote] != "false" {
			t.Errorf("%s: resolved %v, want heartbeat %s, election timeout %s", tc.extra, got, tc.hb, tc.el)
		}
	}
}

// Without etcd on PATH the flavor says what to install and how.
func TestNotInstalled(t *testing.T) {
	if _, err := exec.LookPath("etcd"); err != nil && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	t.Setenv("PATH", t.TempDir())
	err := etcd.Available()
	if err == nil || !strings.Contains(err.Error(), "etcd-server") || !strings.Contains(err.Error(), "make deps") {
		t.Errorf("Available without etcd on PATH: %v", err)
	}
}
