// Package etcd is the etcd flavor: an unmodified etcd cluster (Debian's etcd-server,
// 3.4), one process per server, configured on its command line by the harness. It
// runs on the local backend (processes on loopback, each peer connection through the
// plan's user-space link for its ordered pair: links.go), on the netns backend (a
// process per namespace, kernel netem or the same user-space links: netns.go) and on
// the docker backend (a container per member of an image of this host's etcd, on the
// same bridge: docker.go), with the members' timelines read off their logs
// (events.go), their modes asked through etcd's Status API, and a crashed harness's
// processes and data removed by Down (down.go; its containers by the docker backend's). Its client, the
// workload's driver for etcd's protocol, is package etcdclient; init registers both.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/workload"
	"github.com/polebench/polebench/workload/etcdclient"
)

// Flavor is the flavor's name, as specs and --flavor name it.
const Flavor = "etcd"

// Binary is the etcd server Debian's etcd-server installs.
const Binary = "etcd"

func init() {
	cluster.RegisterFlavor(cluster.Flavor{
		Name: Flavor,
		On:   map[string]cluster.Constructor{backend.Local: as(NewLocal), backend.Netns: as(NewNetns), backend.Docker: as(NewDocker)},
		// A member is a process the harness kills, restarts, stops and continues; its
		// peer connections go through the links the plan sets when it starts, which
		// the harness cuts (CutLinks).
		Carries: backend.Carries{
			Faults: []nemesis.Kind{nemesis.Crash, nemesis.Kill, nemesis.Restart, nemesis.Pause, nemesis.Resume,
				nemesis.Partition, nemesis.Isolate, nemesis.IsolateLeader, nemesis.OneWay, nemesis.Heal},
			Links: backend.Links{Streams: true},
			// MoveLeader (a Raft leadership transfer): what a placement controller calls.
			LeaderTransfer: true,
			Why: map[string]string{
				"oracle":     "Raft's vote rule is the history oracle's (the most up-to-date log wins), its ties broken by whose timeout fires first",
				"preload_mb": "preloading state is a poled feature; etcd starts empty",
				"outdate":    "an outdated server needs its broadcast channel cut by the replica itself, which etcd cannot do",
				"faults":     "disk faults are poled's, which etcd cannot do",
				"schedules":  "its links are set once, when its servers start",
			},
		},
		Oracles:  []string{score.History},
		Settings: Resolve,
		CanWin:   CanWin,
		Rule:     "Raft: any survivor whose log a majority would vote for; whichever's randomized election timeout fires first",
		Down:     func(_ context.Context, label string) ([]string, error) { return Down(label) },
		Check:    func(context.Context) error { return Available() },
		Version:  func(context.Context) (string, error) { return Version() },
	})
	workload.RegisterProtocol(Flavor, etcdclient.Protocol)
}

func as(start func(context.Context, cluster.Options) (*Cluster, error)) cluster.Constructor {
	return func(ctx context.Context, opts cluster.Options) (cluster.Cluster, error) {
		c, err := start(ctx, opts)
		if err != nil {
			return nil, err // not a nil *Cluster in a non-nil interface
		}
		return c, nil
	}
}

// Available returns nil if etcd can run here, else why not.
func Available() error {
	_, err := Version()
	return err
}

// Version is the etcd on PATH, its version and where ("3.4.23 at /usr/bin/etcd"), or
// why none can run here.
func Version() (string, error) {
	path, err := exec.LookPath(Binary)
	if err != nil {
		return "", errors.New("flavor etcd: no etcd binary on PATH: install the Debian package etcd-server (make deps does)")
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("flavor etcd: %s --version: %w", path, err)
	}
	v, ok := strings.CutPrefix(firstLine(string(out)), "etcd Version: ")
	if !ok || !strings.HasPrefix(v, "3.") {
		return "", fmt.Errorf("flavor etcd: %s is not etcd 3.x: %q", path, firstLine(string(out)))
	}
	return v + " at " + path, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Settings are etcd's election timing as a run sets it (flavor.settings).
type Settings struct {
	Heartbeat       time.Duration // --heartbeat-interval
	ElectionTimeout time.Duration // --election-timeout
	PreVote         bool          // --pre-vote (off by default in 3.4)
}

// The settings' keys in a spec's flavor.settings.
const (
	KeyHeartbeat = "heartbeat"
	KeyElection  = "election_timeout"
	KeyPreVote   = "pre_vote"
)

// Bounds etcd itself sets (etcdserver's config checks): the election timeout at least
// five heartbeats and at most 50 s. The heartbeat's floor is ours: below 10 ms a
// loaded two-core host misses heartbeats and the cluster churns.
const (
	minHeartbeat = 10 * time.Millisecond
	// defaultHeartbeat is etcd's own default, the floor of the scaled default: with
	// the heartbeat at the two-DC spec's 21 ms RTT (election timeout 210 ms), a run on
	// this project's loaded two-core host saw the link's deliveries up to 286 ms late
	// and the members elected three times in the first 6 s, before any fault.
	defaultHeartbeat = 100 * time.Millisecond
	maxElection      = 50 * time.Second
	minElectionMul   = 5
	// defaultElectionMul is the tuning guide's advice: the election timeout ten
	// heartbeats, the heartbeat about the widest RTT between members.
	defaultElectionMul = 10
)

// DefaultSettings are the settings for a cluster whose widest RTT between two
// members is widest, as etcd's tuning guide has them: the heartbeat about that RTT
// (rounded up to a millisecond, at least etcd's default 100 ms), the election timeout
// ten heartbeats, pre-vote as etcd 3.4 ships it (off).
func DefaultSettings(widest time.Duration) Settings {
	hb := max(defaultHeartbeat, widest.Round(time.Millisecond))
	if hb < widest {
		hb += time.Millisecond
	}
	return Settings{Heartbeat: hb, ElectionTimeout: defaultElectionMul * hb}
}

// Resolve checks a spec's flavor.settings and fills the missing ones from
// DefaultSettings(widest) (a given heartbeat scales the default election timeout);
// a bad one is a *backend.SettingError naming it.
func Resolve(given map[string]string, widest time.Duration) (map[string]string, error) {
	s, err := parse(given, widest)
	if err != nil {
		return nil, err
	}
	return s.Map(), nil
}

// ParseSettings reads resolved settings (cluster.Options.FlavorSettings); missing
// ones take DefaultSettings(widest).
func ParseSettings(m map[string]string, widest time.Duration) (Settings, error) {
	return parse(m, widest)
}

func parse(given map[string]string, widest time.Duration) (Settings, error) {
	for k := range given {
		switch k {
		case KeyHeartbeat, KeyElection, KeyPreVote:
		default:
			return Settings{}, &backend.SettingError{Key: k, Msg: fmt.Sprintf("unknown setting (known: %s, %s, %s)", KeyHeartbeat, KeyElection, KeyPreVote)}
		}
	}
	s := DefaultSettings(widest)
	ms := func(key string, dst *time.Duration) error {
		v, ok := given[key]
		if !ok {
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return &backend.SettingError{Key: key, Msg: fmt.Sprintf("%q is not a duration (like 100ms)", v)}
		}
		if d%time.Millisecond != 0 {
			return &backend.SettingError{Key: key, Msg: fmt.Sprintf("%v: etcd takes whole milliseconds", d)}
		}
		*dst = d
		return nil
	}
	if err := ms(KeyHeartbeat, &s.Heartbeat); err != nil {
		return s, err
	}
	if _, ok := given[KeyElection]; !ok {
		s.ElectionTimeout = defaultElectionMul * s.Heartbeat
	}
	if err := ms(KeyElection, &s.ElectionTimeout); err != nil {
		return s, err
	}
	if v, ok := given[KeyPreVote]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return s, &backend.SettingError{Key: KeyPreVote, Msg: fmt.Sprintf("%q is not true or false", v)}
		}
		s.PreVote = b
	}
	switch {
	case s.Heartbeat < minHeartbeat:
		return s, &backend.SettingError{Key: KeyHeartbeat, Msg: fmt.Sprintf("%v is below %v", s.Heartbeat, minHeartbeat)}
	case s.ElectionTimeout < minElectionMul*s.Heartbeat:
		return s, &backend.SettingError{Key: KeyElection, Msg: fmt.Sprintf("%v is less than %d heartbeats (%v): etcd refuses it", s.ElectionTimeout, minElectionMul, minElectionMul*s.Heartbeat)}
	case s.ElectionTimeout > maxElection:
		return s, &backend.SettingError{Key: KeyElection, Msg: fmt.Sprintf("%v is above etcd's %v", s.ElectionTimeout, maxElection)}
	}
	return s, nil
}

// Map is s as flavor.settings write it.
func (s Settings) Map() map[string]string {
	return map[string]string{KeyHeartbeat: s.Heartbeat.String(), KeyElection: s.ElectionTimeout.String(), KeyPreVote: strconv.FormatBool(s.PreVote)}
}
