// Package cluster is the harness's view of a running set of replicas, whatever backend
// runs them: client and admin addresses per server, kill and restart, and cleanup of
// everything the backend made (Cluster); the optional views some backends add
// (Timelines, RTTMeter, Pids); the probes that ask a server what it does (WaitLeader,
// WaitServing, NodeStatus, ...); and the registry through which New starts a cluster
// on a backend named at run time. The backends are packages of their own that
// register themselves from their init (Register, RegisterFlavor): cluster/local (nodes
// in this process on loopback), cluster/netns (processes in network namespaces),
// cluster/docker (containers), cluster/swarm (Docker Swarm services, across machines),
// cluster/zookeeper (the ZooKeeper flavor, on the local and netns backends) and
// cluster/etcd (the etcd flavor, on the local, netns and docker backends). A
// program that starts clusters by name imports cluster/all, which links every one.
package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/topology"
)

// Server is one replica as clients and the harness reach it.
type Server struct {
	ID     int    `json:"id"`
	DC     string `json:"dc"`
	Client string `json:"client,omitempty"` // host:port for ZooKeeper clients (none in the simulator)
	Admin  string `json:"admin,omitempty"`  // host:port of the admin HTTP endpoint (GET /events, /status)
	// Where a backend that spreads servers over machines put it, how the server
	// emulates its links when it does so itself, and the RTT from the harness to its
	// client port (a hop the model does not have: it puts clients beside their servers).
	Node        string  `json:"node,omitempty"`
	Links       string  `json:"links,omitempty"`
	ClientRTTms float64 `json:"client_rtt_ms,omitempty"`
}

// Cluster is a running set of replicas.
type Cluster interface {
	Servers() []Server
	// Kill stops server id at once, like SIGKILL: nothing unsynced survives.
	Kill(ctx context.Context, id int) error
	// Restart starts a killed server again from its data directory.
	Restart(ctx context.Context, id int) error
	Alive(id int) bool
	// Links says how the link plan is applied: "kernel" (tc-netem) or "user-space".
	Links() string
	// CollectLogs copies each server's log into dir as p<ID>.log.
	CollectLogs(ctx context.Context, dir string) error
	// Close stops every server and removes everything the cluster created.
	Close(ctx context.Context) error
}

// Timelines is a cluster whose servers have no admin endpoint to ask for their event
// timelines (ZooKeeper): it keeps them itself, across restarts.
type Timelines interface {
	Timeline(id int) []event.Event
}

// RTTMeter is a cluster whose servers measure no RTTs themselves (ZooKeeper): its links
// measure them, in ms, as "pI" -> "pJ" -> RTT.
type RTTMeter interface {
	MeasuredRTTs() map[string]any
}

// LinkSchedules is a cluster that changes its links during a run as the plan's
// schedules say (netem.Plan.Schedules): PlayLinkSchedules counts their instants from
// start (the start of the load, as the faults count theirs), calls report with each
// change as it is made, and returns after the last one or when ctx ends. A cluster
// whose links cannot change during a run (or not in the mode it runs them) returns an
// error at once.
type LinkSchedules interface {
	PlayLinkSchedules(ctx context.Context, start time.Time, report func(netem.Instant)) error
}

// Pids is a cluster whose servers are processes the harness can see (/proc/PID on
// this host: ZooKeeper's JVMs, poled in network namespaces or local containers), so
// that their threads' wait for a CPU is measured from outside
// (hiccup.HostSampler.Watch). A restarted server is a new process with a new pid.
type Pids interface {
	// Pid is server id's process id, 0 while it is not running.
	Pid(id int) int
}

// Pauser is a cluster that can freeze a server and let it run again, alive but
// silent meanwhile (the local backend's frozen loop, docker pause). A cluster with
// Pids but no Pauser is paused by SIGSTOP and SIGCONT.
type Pauser interface {
	Pause(ctx context.Context, id int) error
	Resume(ctx context.Context, id int) error
}

// LinkCutter is a cluster that cuts the links between its servers itself, on what
// carries their traffic (the kernel's netem, its user-space proxies): beside the
// replicas' own cut (poled's admin port), or instead of it where a server has none
// (Server.Admin empty: ZooKeeper, etcd). Each pair is (a, b): oneWay drops only what
// a sends to b, else both ways; !cut restores.
type LinkCutter interface {
	CutLinks(ctx context.Context, pairs [][2]int, oneWay, cut bool) error
}

// Applier is a cluster whose servers report no poled status (etcd, ZooKeeper): it
// says itself whether server id serves and how far it has applied, as a string equal
// on two servers that applied the same (what runner.Converge compares).
type Applier interface {
	Applied(ctx context.Context, id int) (serving bool, applied string, err error)
}

// DataDirs is a cluster whose servers keep their data directories on this host, where
// the nemesis can reach a stopped server's files (to lose what its log had not
// synced, or tear its tail: storage.LoseUnsynced).
type DataDirs interface {
	DataDir(id int) string
}

// Flavors of replica.
const (
	Poled     = backend.FlavorPoled
	ZooKeeper = backend.FlavorZooKeeper
)

// Options describe the cluster to start.
type Options struct {
	Topology *topology.Topology
	Oracle   score.Oracle
	// InitialLeader, if set, is elected in the cluster's first election whatever the
	// oracle (the paper's runs all start with p5 leading).
	InitialLeader int
	Flavor        string // Poled (default) or ZooKeeper
	Plan          netem.Plan
	DataRoot      string // each server keeps its files in DataRoot/p<ID>
	Fsync         bool
	// PreloadMB fills every server's tree with that much data before the run.
	PreloadMB int
	// InitLimit is how long a server may take to recover (replica.Config.InitLimit).
	InitLimit time.Duration
	// Trace makes every poled record the steps of each write (replica.Config.Trace),
	// for the run's latency anatomy.
	Trace bool
	// WarmUp, if positive, has a ZooKeeper cluster serve closed-loop writes through
	// every server for that long before its constructor returns (its JIT compiled).
	// New gives a ZooKeeper cluster zookeeper.WarmUp when it is zero; negative: none.
	WarmUp time.Duration
	// Label marks everything a backend creates (namespaces, containers, networks) so a
	// later `polebench cluster down` finds leftovers of a crashed harness.
	Label string
	// Nodes names, per DC, the swarm nodes (host names or IDs) its servers run on
	// (the swarm backend; a DC not named goes by the polebench.dc node label).
	Nodes map[string][]string
	// FlavorSettings are the spec's flavor.settings, resolved (spec.Spec.FlavorSettings).
	FlavorSettings map[string]string
	Logger         *slog.Logger
	// Broken, for the checkers' tests only, breaks the named servers on purpose
	// (replica.Config.Broken): only servers in the harness's process carry it (the
	// local backend's), so `polebench check` refuses it elsewhere.
	Broken map[int]replica.Variant
}

// ReplicaConfig is server id's poled config as the experiment sets it, the same on
// every backend; the backend adds where it listens, keeps its data and gets its links.
func (o Options) ReplicaConfig(id int, peers []replica.Peer) replica.Config {
	return replica.Config{
		ID: id, Servers: peers, Oracle: o.Oracle, InitialLeader: o.InitialLeader, Fsync: o.Fsync,
		PreloadMB: o.PreloadMB, Trace: o.Trace, Heartbeat: replica.Duration(o.Oracle.Heartbeat), InitLimit: replica.Duration(o.InitLimit),
		Broken: o.Broken[id],
	}
}

// Link modes reported by Cluster.Links.
const (
	LinksKernel    = replica.LinksKernel
	LinksUserSpace = replica.LinksUserSpace
	LinksNone      = replica.LinksNone // an empty plan: nothing to emulate
)

// Ports a server listens on where it has an address of its own (a network namespace,
// a container, a swarm task): ZooKeeper's usual ones, and poled's admin endpoint.
const (
	ClientPort   = 2181
	PeerPort     = 2888
	ElectionPort = 3888
	AdminPort    = 8080
)

// PoledEnv names a poled binary for a backend to run instead of building ./cmd/poled
// of the source tree it runs in.
const PoledEnv = "POLEBENCH_POLED"

var labelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// CheckLabel says why label cannot mark what a backend creates (Options.Label), nil if
// it can: the names of namespaces, containers and services are made from it.
func CheckLabel(label string) error {
	if !labelRE.MatchString(label) {
		return fmt.Errorf("label %q: want 1-63 letters, digits, '_', '.' or '-', starting with a letter or digit", label)
	}
	return nil
}
