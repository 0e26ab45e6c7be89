package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/nemesis"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/storage"
)

// The faults a real cluster carries beyond kill, restart and cuts, each through what
// the backend offers (docs/faults.md); which of them a backend and a flavor carry they
// declare (package cluster/backend), and a run is refused before it starts otherwise:
//   - pause: the cluster's own (cluster.Pauser: a frozen loop, a container's pause), else
//     SIGSTOP and SIGCONT to a server that is a process on this host (cluster.Pids);
//   - a kill that loses unsynced writes (and tears the log's tail): a kill, then
//     storage.LoseUnsynced on the server's data directory (cluster.DataDirs);
//   - a slow disk: the replica's POST /disk, again after each restart;
//   - the isolation of the leader: whoever serves as leader in the highest epoch, or,
//     for servers without an admin port, the one leader their cluster reports;
//   - a one-way cut (a, b): a drops what it sends to b, b refuses what a sends, each
//     through its admin port (replica.Cut.Direction), and on the links where the
//     cluster carries them (cluster.LinkCutter).

var _ nemesis.Target = (*target)(nil)

func (t *target) CutOneWay(ctx context.Context, pairs [][2]int, cut bool) error {
	out, in := map[int][]int{}, map[int][]int{}
	for _, p := range pairs {
		out[p[0]] = append(out[p[0]], p[1])
		in[p[1]] = append(in[p[1]], p[0])
	}
	var errs []error
	for _, s := range t.Servers() {
		if !t.Alive(s.ID) || s.Admin == "" {
			continue
		}
		for _, dir := range []string{"out", "in"} {
			peers := map[string][]int{"out": out[s.ID], "in": in[s.ID]}[dir]
			if len(peers) > 0 {
				errs = append(errs, t.setCut(ctx, s, replica.Cut{Peers: peers, Cut: cut, Direction: dir}))
			}
		}
	}
	if k, ok := t.Cluster.(cluster.LinkCutter); ok {
		errs = append(errs, k.CutLinks(ctx, pairs, true, cut))
	}
	return errors.Join(errs...)
}

func (t *target) server(id int) (cluster.Server, error) {
	for _, s := range t.Servers() {
		if s.ID == id {
			return s, nil
		}
	}
	return cluster.Server{}, fmt.Errorf("no server p%d", id)
}

func (t *target) ServerIDs() []int {
	var ids []int
	for _, s := range t.Servers() {
		ids = append(ids, s.ID)
	}
	return ids
}

func (t *target) signal(id int, sig syscall.Signal) error {
	p, ok := t.Cluster.(cluster.Pids)
	if !ok {
		return nemesis.Unsupported{Kind: nemesis.Pause}
	}
	pid := p.Pid(id)
	if pid == 0 {
		return fmt.Errorf("p%d is not running", id)
	}
	return syscall.Kill(pid, sig)
}

// setCut applies c at s now, or, while s is paused, at its resume.
func (t *target) setCut(ctx context.Context, s cluster.Server, c replica.Cut) error {
	t.mu.Lock()
	if t.paused[s.ID] {
		t.pending[s.ID] = append(t.pending[s.ID], c)
		t.mu.Unlock()
		return nil
	}
	t.mu.Unlock()
	return cluster.SetCut(ctx, s, c)
}

func (t *target) Pause(ctx context.Context, id int) error {
	var err error
	if p, ok := t.Cluster.(cluster.Pauser); ok {
		err = p.Pause(ctx, id)
	} else {
		err = t.signal(id, syscall.SIGSTOP)
	}
	if err == nil {
		t.mu.Lock()
		t.paused[id] = true
		t.mu.Unlock()
	}
	return err
}

// Resume lets id run again and applies the cuts and restores it missed meanwhile.
func (t *target) Resume(ctx context.Context, id int) error {
	var err error
	if p, ok := t.Cluster.(cluster.Pauser); ok {
		err = p.Resume(ctx, id)
	} else {
		err = t.signal(id, syscall.SIGCONT)
	}
	if err != nil {
		return err
	}
	t.mu.Lock()
	delete(t.paused, id)
	pending := t.pending[id]
	delete(t.pending, id)
	t.mu.Unlock()
	s, err := t.server(id)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range pending {
		errs = append(errs, cluster.SetCut(ctx, s, c))
	}
	return errors.Join(errs...)
}

func (t *target) KillLosing(ctx context.Context, id int, tear bool) error {
	d, ok := t.Cluster.(cluster.DataDirs)
	if !ok {
		kind := nemesis.LoseUnsynced
		if tear {
			kind = nemesis.TornTail
		}
		return nemesis.Unsupported{Kind: kind}
	}
	if err := t.Kill(ctx, id); err != nil {
		return err
	}
	_, err := storage.LoseUnsynced(filepath.Join(d.DataDir(id), "log"), tear)
	return err
}

func (t *target) SlowDisk(ctx context.Context, id int, delay time.Duration) error {
	s, err := t.server(id)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.slow[id] = delay
	t.mu.Unlock()
	if !t.Alive(id) {
		return nil // from its restart
	}
	return cluster.SetDisk(ctx, s, replica.Disk{SyncDelay: replica.Duration(delay)})
}

// Restart restarts id and slows its disk again if the nemesis slowed it.
func (t *target) Restart(ctx context.Context, id int) error {
	if err := t.Cluster.Restart(ctx, id); err != nil {
		return err
	}
	t.mu.Lock()
	d := t.slow[id]
	t.mu.Unlock()
	if d == 0 {
		return nil
	}
	s, err := t.server(id)
	if err != nil {
		return err
	}
	return cluster.SetDisk(ctx, s, replica.Disk{SyncDelay: replica.Duration(d)})
}

// leaderWait bounds how long isolate-leader waits for a cluster without admin ports
// to report exactly one leader (an old one cut off steps down within its election
// timeout; the fault then goes to whoever leads by then).
const leaderWait = 2 * time.Second

// Leader is the live server that serves as leader in the highest epoch, 0 if none;
// where the servers have no admin port, the one leader their cluster reports.
func (t *target) Leader(ctx context.Context) (int, error) {
	if !admin(t.Cluster) {
		ctx, cancel := context.WithTimeout(ctx, leaderWait)
		defer cancel()
		return cluster.WaitLeaderOf(ctx, t.Cluster)
	}
	best, epoch := 0, uint64(0)
	var errs []error
	for _, s := range t.Servers() {
		if !t.Alive(s.ID) {
			continue
		}
		st, err := cluster.NodeStatus(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.Serving && st.Leader == s.ID && (best == 0 || uint64(st.Epoch) > epoch) {
			best, epoch = s.ID, uint64(st.Epoch)
		}
	}
	if best == 0 && len(errs) > 0 {
		return 0, errors.Join(errs...)
	}
	return best, nil
}

// admin says whether cl's servers have admin ports (poled's), through which they cut
// their own links and report their status.
func admin(cl cluster.Cluster) bool {
	s := cl.Servers()
	return len(s) > 0 && s[0].Admin != ""
}

// reaches says why a real executor cannot reach on cl what its backend and flavor
// declare they carry (a registration that claims more than its cluster does), nil if
// it can: pause through the cluster or its pids, the disk faults that cut a log
// through its data directories, link schedules through the cluster, cuts through the
// replicas' admin ports or the cluster.
func reaches(name, flavor string, cl cluster.Cluster) error {
	c := backend.Carried(name, flavor)
	_, pauser := cl.(cluster.Pauser)
	_, pids := cl.(cluster.Pids)
	_, dirs := cl.(cluster.DataDirs)
	_, sched := cl.(cluster.LinkSchedules)
	_, cutter := cl.(cluster.LinkCutter)
	cuts := c.Plays(nemesis.Partition) || c.Plays(nemesis.Isolate) || c.Plays(nemesis.IsolateLeader) || c.Plays(nemesis.OneWay)
	for _, lack := range []struct {
		carried, reached bool
		what             string
	}{
		{c.Plays(nemesis.Pause), pauser || pids, "pause (cluster.Pauser or Pids)"},
		{c.Plays(nemesis.LoseUnsynced) || c.Plays(nemesis.TornTail), dirs, "lose-unsynced and torn-tail (cluster.DataDirs)"},
		{c.Links.Schedules, sched, "link schedules (cluster.LinkSchedules)"},
		{cuts, admin(cl) || cutter, "partitions and one-way cuts (admin ports or cluster.LinkCutter)"},
	} {
		if lack.carried && !lack.reached {
			return fmt.Errorf("the %s backend with flavor %s declares %s, which its cluster lacks", name, flavor, lack.what)
		}
	}
	return nil
}

// Converge waits, up to within, for every server of cl to run, serve, and hold the
// same last zxid as every other (the load is over: nothing more to commit), and says
// how far it got otherwise: a check's liveness after the last heal.
func Converge(ctx context.Context, cl cluster.Cluster, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		var state []string
		ok, zxid := true, ""
		for _, s := range cl.Servers() {
			if !cl.Alive(s.ID) {
				ok = false
				state = append(state, fmt.Sprintf("p%d down", s.ID))
				continue
			}
			serving, z, role, err := applied(ctx, cl, s)
			if err != nil {
				if ctx.Err() != nil && last != "" {
					return fmt.Errorf("the servers did not converge within %v of the end: %s", within, last)
				}
				ok = false
				state = append(state, fmt.Sprintf("p%d: %v", s.ID, err))
				continue
			}
			state = append(state, fmt.Sprintf("p%d %s serving=%v zxid=%s", s.ID, role, serving, z))
			if !serving || zxid != "" && z != zxid {
				ok = false
			}
			zxid = z
		}
		if ok {
			return nil
		}
		last = fmt.Sprint(state)
		select {
		case <-ctx.Done():
			return fmt.Errorf("the servers did not converge within %v of the end: %s", within, last)
		case <-tick.C:
		}
	}
}

// applied is whether server s serves and how far it has applied: the replica's admin
// status, or what its cluster says (cluster.Applier).
func applied(ctx context.Context, cl cluster.Cluster, s cluster.Server) (serving bool, z, role string, err error) {
	if a, ok := cl.(cluster.Applier); ok {
		serving, z, err = a.Applied(ctx, s.ID)
		return serving, z, "", err
	}
	st, err := cluster.NodeStatus(ctx, s)
	if err != nil {
		return false, "", "", err
	}
	return st.Serving, fmt.Sprint(st.LastZxid), string(st.Role), nil
}

// Kill kills id; a paused one is no longer paused (a container is unpaused first:
// the engine does not kill a paused one), and what waited for its resume is dropped:
// its next life starts with no cut of its own.
func (t *target) Kill(ctx context.Context, id int) error {
	t.mu.Lock()
	paused := t.paused[id]
	delete(t.paused, id)
	delete(t.pending, id)
	t.mu.Unlock()
	if p, ok := t.Cluster.(cluster.Pauser); ok && paused {
		p.Resume(ctx, id)
	}
	return t.Cluster.Kill(ctx, id)
}

// restore undoes what the nemesis left when the load ended, before the read-back,
// which needs every server serving. On a starved host the schedule slips: a fault
// issued as the run's context ended can reach some servers while the heal after it
// is cancelled (a partition left in place, the read-back waiting for p1 until the
// run's deadline). So, for the kinds the schedule played: resume every paused
// server, restore every link both ways, and every slowed disk.
func (t *target) restore(ctx context.Context, faults []nemesis.Fault) error {
	kinds := map[nemesis.Kind]bool{}
	for _, f := range faults {
		kinds[f.Kind] = true
	}
	var errs []error
	t.mu.Lock()
	paused := slices.Sorted(maps.Keys(t.paused))
	var slowed []int
	for id, d := range t.slow {
		if d > 0 {
			slowed = append(slowed, id)
		}
	}
	t.mu.Unlock()
	for _, id := range paused {
		errs = append(errs, t.Resume(ctx, id))
	}
	ids := t.ServerIDs()
	var pairs, directed [][2]int
	for i, a := range ids {
		for _, b := range ids[i+1:] {
			pairs = append(pairs, [2]int{a, b})
			directed = append(directed, [2]int{a, b}, [2]int{b, a})
		}
	}
	if kinds[nemesis.Partition] || kinds[nemesis.Isolate] || kinds[nemesis.IsolateLeader] || kinds[nemesis.Outdate] {
		errs = append(errs, t.SetLinks(ctx, pairs, false, false))
	}
	if kinds[nemesis.OneWay] {
		errs = append(errs, t.CutOneWay(ctx, directed, false))
	}
	slices.Sort(slowed)
	for _, id := range slowed {
		errs = append(errs, t.SlowDisk(ctx, id, 0))
	}
	return errors.Join(errs...)
}
