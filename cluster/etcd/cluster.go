package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/internal/logtail"
	"github.com/polebench/polebench/cluster/internal/procs"
	"github.com/polebench/polebench/event"
	"github.com/polebench/polebench/freeport"
	"github.com/polebench/polebench/topology"
)

// tokenPrefix starts every member's --initial-cluster-token, followed by the
// cluster's label: how Down finds a crashed harness's members.
const tokenPrefix = "polebench-"

// shmRoot is where members keep their data when the run does not fsync (the default):
// etcd 3.4 always fsyncs its WAL, so on tmpfs a sync costs what ZooKeeper's
// forceSync=no and poled's default cost, and a killed process loses nothing the kernel
// had, as with theirs.
const shmRoot = "/dev/shm"

const (
	// startTimeout bounds each step of a start: every member listening, then the
	// members' ids, then the initial leader leading (a check's run on a host at a
	// load average of 60 once needed more than 30 s for the leader).
	startTimeout = 60 * time.Second
	probeTimeout = time.Second
)

// member is where one server listens.
type member struct {
	id                int
	client, peer, adv string // host:port: client URL, peer listener, the peer URL the others dial
	dataDir, logFile  string
	etcdID            uint64 // etcd's member id, once known
	cli               *clientv3.Client
}

// Cluster is an etcd cluster of one process per server. It implements what the
// harness asks of a ZooKeeper cluster (Timelines, RTTMeter, Pids) and answers for its
// members' modes itself (cluster.Prober): etcd answers no srvr.
type Cluster struct {
	log      *slog.Logger
	label    string
	topo     *topology.Topology
	settings Settings
	root     string // p<ID>.log and, with fsync, p<ID>/ data directories
	shm      string // the data directories without fsync ("" with it)
	members  map[int]*member
	servers  []cluster.Server
	procs    *procs.Set
	links    *links // nil without a plan
	mode     string
	// cuts is what CutLinks cuts: the user-space links' proxies or the kernel's
	// netem (bridge.Kernel); nil without a plan.
	cuts interface {
		Cut(ctx context.Context, pairs [][2]int, both, cut bool) error
	}
	watch *watcher
	// startIn starts a member's process (on loopback, in its namespace, or as its
	// container); teardown removes what the backend made around them (the network,
	// the containers).
	startIn  func(id int, cmd *exec.Cmd) (*procs.Proc, error)
	teardown func() error
	// inContainer: the members run in containers, whose eth0 arrives after etcd
	// starts (so they listen on every address) and whose output is not the harness's
	// to redirect (so etcd appends its log to its file itself, the cluster's root
	// being mounted at its own path).
	inContainer bool

	removeRoot bool
	closeOnce  sync.Once
	closeErr   error
}

var (
	_ cluster.Cluster    = (*Cluster)(nil)
	_ cluster.Pids       = (*Cluster)(nil)
	_ cluster.Timelines  = (*Cluster)(nil)
	_ cluster.RTTMeter   = (*Cluster)(nil)
	_ cluster.Prober     = (*Cluster)(nil)
	_ cluster.Applier    = (*Cluster)(nil)
	_ cluster.LinkCutter = (*Cluster)(nil)
)

// NewLocal starts opts.Topology's servers as etcd processes on loopback, each
// member's peer traffic through user-space links (a delaying proxy per ordered pair),
// and makes opts.InitialLeader the leader (etcd's first election picks whoever times
// out first; a leadership transfer then moves it).
func NewLocal(ctx context.Context, opts cluster.Options) (_ *Cluster, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if opts.Topology == nil || opts.Topology.N() == 0 {
		return nil, errors.New("etcd: no topology")
	}
	c, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Close(context.WithoutCancel(ctx))
		}
	}()
	ids := opts.Topology.Servers()
	ports, err := freeport.Loopback(2 * len(ids))
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		m := c.members[id]
		m.client = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2*i]))
		m.peer = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2*i+1]))
		m.adv = m.peer
	}
	c.mode = cluster.LinksNone
	if len(opts.Plan.Links) > 0 {
		if c.links, err = newLinks(c, opts.Plan, "127.0.0.1", c.senderByPid); err != nil {
			return nil, err
		}
		c.mode, c.cuts = cluster.LinksUserSpace, &c.links.proxies
	}
	return c, c.start(ctx, opts.InitialLeader)
}

func newCluster(opts cluster.Options) (*Cluster, error) {
	c := &Cluster{log: opts.Logger, topo: opts.Topology, label: opts.Label, members: map[int]*member{},
		startIn:  func(_ int, cmd *exec.Cmd) (*procs.Proc, error) { return procs.Start(cmd) },
		teardown: func() error { return nil }}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.label == "" {
		c.label = fmt.Sprintf("t%x", time.Now().UnixNano()&0xffffffff)
	}
	if err := cluster.CheckLabel(c.label); err != nil {
		return nil, err
	}
	var err error
	if c.settings, err = ParseSettings(opts.FlavorSettings, widestRTT(opts.Topology)); err != nil {
		return nil, fmt.Errorf("etcd: flavor settings: %w", err)
	}
	c.root = opts.DataRoot
	if c.root == "" {
		if c.root, err = os.MkdirTemp("", "polebench-etcd-"); err != nil {
			return nil, err
		}
		c.removeRoot = true
	} else if err := os.MkdirAll(c.root, 0o755); err != nil {
		return nil, err
	}
	if !opts.Fsync {
		if c.shm, err = os.MkdirTemp(shmRoot, shmPrefix+c.label+"-"); err != nil {
			return nil, fmt.Errorf("etcd: data on tmpfs: %w", err)
		}
	}
	for _, id := range opts.Topology.Servers() {
		m := &member{id: id, logFile: filepath.Join(c.root, "p"+strconv.Itoa(id)+".log")}
		m.dataDir = filepath.Join(c.root, "p"+strconv.Itoa(id))
		if c.shm != "" {
			m.dataDir = filepath.Join(c.shm, "p"+strconv.Itoa(id))
		}
		c.members[id] = m
	}
	c.procs = procs.NewSet("etcd", c.log, func(id int) string { return c.members[id].logFile }, c.spawn)
	c.watch = newWatcher(c)
	return c, nil
}

// widestRTT is the widest RTT between two servers of t.
func widestRTT(t *topology.Topology) time.Duration {
	var w float64
	for _, a := range t.Servers() {
		for _, b := range t.Servers() {
			w = max(w, t.RTT(a, b))
		}
	}
	return time.Duration(w * float64(time.Millisecond))
}

func (c *Cluster) ids() []int { return c.topo.Servers() }

func name(id int) string { return "p" + strconv.Itoa(id) }

// command is member m's etcd: every setting on its command line, logging JSON lines
// with millisecond timestamps (zap), what the timelines read.
func (c *Cluster) command(m *member) *exec.Cmd {
	var initial []string
	for _, id := range c.ids() {
		initial = append(initial, name(id)+"=http://"+c.members[id].adv)
	}
	listenClient, listenPeer, logOut := m.client, m.peer, "stderr"
	if c.inContainer {
		listenClient, listenPeer, logOut = anyAddr(m.client), anyAddr(m.peer), m.logFile
	}
	cmd := exec.Command(Binary,
		"--name", name(m.id), "--data-dir", m.dataDir,
		"--listen-client-urls", "http://"+listenClient, "--advertise-client-urls", "http://"+m.client,
		"--listen-peer-urls", "http://"+listenPeer, "--initial-advertise-peer-urls", "http://"+m.adv,
		"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
		"--initial-cluster-token", tokenPrefix+c.label,
		"--heartbeat-interval", strconv.FormatInt(c.settings.Heartbeat.Milliseconds(), 10),
		"--election-timeout", strconv.FormatInt(c.settings.ElectionTimeout.Milliseconds(), 10),
		"--pre-vote="+strconv.FormatBool(c.settings.PreVote),
		"--logger", "zap", "--log-outputs", logOut)
	cmd.Env = append(os.Environ(), c.env()...)
	return cmd
}

// env is what a member's environment adds to its start's: each member gets its share
// of the host's cores, as ZooKeeper's JVMs do.
func (c *Cluster) env() []string {
	return []string{"GOMAXPROCS=" + strconv.Itoa(max(1, runtime.NumCPU()/len(c.ids())))}
}

// anyAddr is host:port's port on every address.
func anyAddr(hostport string) string {
	_, port, _ := net.SplitHostPort(hostport)
	return net.JoinHostPort("0.0.0.0", port)
}

// spawn starts the n-th start of server id, its output appended to its log after a
// marker line.
func (c *Cluster) spawn(id, n int) (*procs.Proc, error) {
	m := c.members[id]
	lf, err := os.OpenFile(m.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer lf.Close() // the child has its own copy
	logtail.MarkStart(lf, n, id)
	cmd := c.command(m)
	cmd.Stdout, cmd.Stderr = lf, lf
	return c.startIn(id, cmd)
}

// start starts every member, waits until each serves clients, learns their etcd ids,
// and moves the leadership to initial (0: wherever it fell).
func (c *Cluster) start(ctx context.Context, initial int) error {
	t0 := time.Now()
	for _, id := range c.ids() {
		m := c.members[id]
		c.servers = append(c.servers, cluster.Server{ID: id, DC: c.topo.DC(id), Client: m.client})
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + m.client}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return fmt.Errorf("etcd: client of p%d: %w", id, err)
		}
		m.cli = cli
	}
	c.watch.Start()
	for _, id := range c.ids() {
		if err := c.procs.Spawn(id); err != nil {
			return err
		}
	}
	for _, id := range c.ids() {
		if err := c.procs.WaitListening(ctx, id, startTimeout, c.members[id].client); err != nil {
			return err
		}
	}
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := c.learnIDs(sctx); err != nil {
		return err
	}
	lctx, cancelL := context.WithTimeout(ctx, startTimeout)
	defer cancelL()
	if err := c.lead(lctx, initial); err != nil {
		return err
	}
	c.log.Info("etcd cluster up", "label", c.label, "servers", len(c.ids()), "links", c.mode, "heartbeat", c.settings.Heartbeat,
		"election_timeout", c.settings.ElectionTimeout, "pre_vote", c.settings.PreVote, "took", time.Since(t0).Round(time.Millisecond))
	return nil
}

// learnIDs asks the cluster for its members' etcd ids (what its logs name them by).
func (c *Cluster) learnIDs(ctx context.Context) error {
	for {
		var last error
		for _, id := range c.ids() {
			rctx, cancel := context.WithTimeout(ctx, probeTimeout)
			resp, err := c.members[id].cli.MemberList(rctx)
			cancel()
			if err != nil {
				last = err
				continue
			}
			byName := map[string]uint64{}
			for _, mm := range resp.Members {
				byName[mm.Name] = mm.ID
			}
			for _, id := range c.ids() {
				c.members[id].etcdID = byName[name(id)]
			}
			if !c.missingIDs() {
				c.watch.setIDs(c.etcdIDs())
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd: member list: %w (last error: %v)", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) missingIDs() bool {
	for _, m := range c.members {
		if m.etcdID == 0 {
			return true
		}
	}
	return false
}

func (c *Cluster) etcdIDs() map[uint64]int {
	out := map[uint64]int{}
	for id, m := range c.members {
		out[m.etcdID] = id
	}
	return out
}

// lead waits for a leader and, if it is not want, has it hand the leadership to want
// (etcd's MoveLeader, a Raft leadership transfer), until want leads.
func (c *Cluster) lead(ctx context.Context, want int) error {
	for {
		leader, err := cluster.WaitLeaderOf(ctx, c)
		if err != nil {
			return fmt.Errorf("etcd: %w", err)
		}
		if want == 0 || leader == want {
			return nil
		}
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = c.members[leader].cli.MoveLeader(mctx, c.members[want].etcdID)
		cancel()
		if err != nil {
			c.log.Debug("etcd: move leader", "from", leader, "to", want, "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd: moving the leadership from p%d to p%d: %w", leader, want, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Mode asks member id through etcd's Status API: "leader", "follower", or an error
// while it knows no leader.
func (c *Cluster) Mode(ctx context.Context, id int) (string, error) {
	m, ok := c.members[id]
	if !ok || m.cli == nil {
		return "", fmt.Errorf("etcd: no server p%d", id)
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	st, err := m.cli.Status(ctx, "http://"+m.client)
	if err != nil {
		return "", fmt.Errorf("p%d: status: %w", id, err)
	}
	switch {
	case st.Leader == 0:
		return "", fmt.Errorf("p%d knows no leader (term %d)", id, st.RaftTerm)
	case st.Leader == st.Header.MemberId:
		return "leader", nil
	}
	return "follower", nil
}

// Applied says whether member id knows a leader and its applied index (equal on two
// members that applied the same log).
func (c *Cluster) Applied(ctx context.Context, id int) (bool, string, error) {
	m, ok := c.members[id]
	if !ok {
		return false, "", fmt.Errorf("etcd: no server p%d", id)
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	st, err := m.cli.Status(ctx, "http://"+m.client)
	if err != nil {
		return false, "", fmt.Errorf("p%d: status: %w", id, err)
	}
	return st.Leader != 0, strconv.FormatUint(st.RaftAppliedIndex, 10), nil
}

// Servers lists the servers, ordered by id; etcd has no admin endpoint.
func (c *Cluster) Servers() []cluster.Server { return append([]cluster.Server(nil), c.servers...) }

// Pid is server id's process id, 0 if it is not running.
func (c *Cluster) Pid(id int) int { return c.procs.Pid(id) }

// Alive reports whether server id's process runs.
func (c *Cluster) Alive(id int) bool { return c.procs.Alive(id) }

// Kill sends server id SIGKILL and waits until it is gone.
func (c *Cluster) Kill(ctx context.Context, id int) error { return c.procs.Kill(ctx, id) }

// Restart starts a killed member again on its data directory and waits until it
// accepts client connections.
func (c *Cluster) Restart(ctx context.Context, id int) error {
	m, ok := c.members[id]
	if !ok {
		return fmt.Errorf("etcd: no server p%d", id)
	}
	if err := c.procs.Spawn(id); err != nil {
		return err
	}
	return c.procs.WaitListening(ctx, id, startTimeout, m.client)
}

// Links says how the plan is applied: "user-space" (the proxies) or "none".
func (c *Cluster) Links() string { return c.mode }

// CutLinks cuts or restores the pairs' links on what carries the members' peer
// traffic (the members cannot cut themselves): the proxies' or the kernel's.
func (c *Cluster) CutLinks(ctx context.Context, pairs [][2]int, oneWay, cut bool) error {
	if c.cuts == nil && c.mode == cluster.LinksKernel {
		return errors.New("etcd: the kernel's netem is applied in each container as it starts, and there is no cutting it there yet (the user-space links can be cut)")
	}
	if c.cuts == nil {
		return errors.New("etcd: no links to cut: the plan is empty, and the members reach each other directly")
	}
	return c.cuts.Cut(ctx, pairs, !oneWay, cut)
}

// Timeline is server id's timeline so far, read off its log (events.go).
func (c *Cluster) Timeline(id int) []event.Event { return c.watch.timeline(id) }

// MeasuredRTTs are the RTTs the user-space links measured (nil without them).
func (c *Cluster) MeasuredRTTs() map[string]any {
	if c.links == nil {
		return nil
	}
	return c.links.proxies.RTTs(c.ids())
}

// ConfigFile is the name CollectLogs gives the members' resolved settings.
const ConfigFile = "etcd.json"

// CollectLogs copies each member's log into dir as p<ID>.log, and writes the settings
// the members ran with, and their command lines, as etcd.json.
func (c *Cluster) CollectLogs(ctx context.Context, dir string) error {
	err := c.procs.CollectLogs(ctx, c.ids(), dir)
	cmds := map[string][]string{}
	for _, id := range c.ids() {
		cmds[name(id)] = c.command(c.members[id]).Args
	}
	b, jerr := json.MarshalIndent(map[string]any{"settings": c.settings.Map(), "commands": cmds}, "", "  ")
	if jerr == nil {
		jerr = os.WriteFile(filepath.Join(dir, ConfigFile), append(b, '\n'), 0o644)
	}
	return errors.Join(err, jerr)
}

// Close stops every member (SIGTERM, SIGKILL after a grace period), the links and the
// watcher, and removes the data on tmpfs and a temporary root. It runs to the end
// whatever ctx says; a second call returns the first one's result.
func (c *Cluster) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		// Killed, not stopped: a member told to stop hands its leadership on and
		// waits for peers that are stopping too, seconds for nothing kept.
		for _, id := range c.ids() {
			if c.procs.Alive(id) {
				c.procs.Kill(context.WithoutCancel(ctx), id)
			}
		}
		c.procs.StopAll(procs.Grace)
		c.watch.Stop()
		for _, m := range c.members {
			if m.cli != nil {
				m.cli.Close()
			}
		}
		if c.links != nil {
			c.links.close()
		}
		errs := []error{c.teardown()}
		if c.shm != "" {
			errs = append(errs, os.RemoveAll(c.shm))
		}
		if c.removeRoot {
			errs = append(errs, os.RemoveAll(c.root))
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
