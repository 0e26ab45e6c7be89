// Package nemesis is the run's fault schedule and its player (Jepsen's nemesis): typed
// faults at instants from the start of the load, played against whatever can kill and
// restart servers (a real backend's cluster, or the simulator's) on a clock that is an
// input, and recorded as they were executed, so analysis never re-discovers the crash
// by matching strings.
package nemesis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Kind is what a fault does.
type Kind string

const (
	// Crash kills the initial leader: the instant the run's "after" window counts from.
	Crash Kind = "crash"
	// Kill stops a server at once, like SIGKILL.
	Kill Kind = "kill"
	// Restart starts a killed server again from its data directory.
	Restart Kind = "restart"
	// Partition cuts every link between servers of different groups (Pairs), both
	// ways; Isolate cuts one server from all the others.
	Partition Kind = "partition"
	Isolate   Kind = "isolate"
	// Heal restores every link the nemesis cut.
	Heal Kind = "heal"
	// Outdate cuts Server's broadcast channel (not elections, not heartbeats) so that
	// no leader can bring it up to date; Rejoin restores it (at the crash).
	Outdate Kind = "outdate"
	Rejoin  Kind = "rejoin"
	// IsolateLeader cuts whoever leads at that instant from every other server (the
	// target says who: Target.Leader); the executed fault names it.
	IsolateLeader Kind = "isolate-leader"
	// OneWay cuts each pair (from, to) in one direction: what from sends to to is
	// dropped, to's messages still reach from. Heal restores it.
	OneWay Kind = "one-way"
	// Pause freezes a server (SIGSTOP, a container's pause, a frozen loop): alive, holding its
	// connections, silent. Resume lets it run again.
	Pause  Kind = "pause"
	Resume Kind = "resume"
	// LoseUnsynced kills a server and cuts its log back to what it last synced, as a
	// power loss with a page cache does (Jepsen's lazyfs): fsync on, that loses only
	// what no one was told is durable.
	LoseUnsynced Kind = "lose-unsynced"
	// TornTail is LoseUnsynced that also leaves a torn, garbled record at the end of the
	// log: a restart must find it by its checksum and cut it off.
	TornTail Kind = "torn-tail"
	// SlowDisk makes Server's log writes take Delay longer (0 restores).
	SlowDisk Kind = "slow-disk"
)

// Kinds lists every kind a schedule may hold.
func Kinds() []Kind {
	return []Kind{Crash, Kill, Restart, Partition, Isolate, Heal, Outdate, Rejoin, IsolateLeader, OneWay, Pause, Resume, LoseUnsynced, TornTail, SlowDisk}
}

// Fault is one scheduled fault.
type Fault struct {
	At     time.Duration // from the start of the load
	Kind   Kind
	Server int
	// Pairs are the links a Partition, Isolate, Outdate or Rejoin cuts or restores.
	Pairs [][2]int
	// BroadcastOnly: the broadcast channel alone (Outdate, Rejoin).
	BroadcastOnly bool
	// Shape is how a Partition was drawn (halves, one, majority, ring, bridge, dc:NAME),
	// for the timeline and the schedule's text.
	Shape string `json:",omitempty"`
	// Delay is a SlowDisk's extra time per log write.
	Delay time.Duration `json:",omitempty"`
	// Source is the spec field that asked for it (crash_at, outdate[0].kill_at, ...).
	Source string
}

// Stops says whether the fault takes its server down.
func (f Fault) Stops() bool {
	return f.Kind == Crash || f.Kind == Kill || f.Kind == LoseUnsynced || f.Kind == TornTail
}

// Cuts says whether the fault cuts links; Restores whether it restores them.
func (f Fault) Cuts() bool {
	switch f.Kind {
	case Partition, Isolate, Outdate, IsolateLeader, OneWay:
		return true
	}
	return false
}
func (f Fault) Restores() bool { return f.Kind == Heal || f.Kind == Rejoin }

func (f Fault) String() string {
	switch {
	case f.Kind == Partition && f.Shape != "":
		return fmt.Sprintf("partition %s %v at %v", f.Shape, f.Pairs, f.At)
	case f.Kind == Partition, f.Kind == OneWay:
		return fmt.Sprintf("%s %v at %v", f.Kind, f.Pairs, f.At)
	case f.Kind == Heal:
		return fmt.Sprintf("heal at %v", f.At)
	case f.Kind == IsolateLeader && f.Server == 0:
		return fmt.Sprintf("isolate-leader at %v", f.At)
	case f.Kind == SlowDisk:
		return fmt.Sprintf("slow-disk p%d +%v at %v", f.Server, f.Delay, f.At)
	}
	return fmt.Sprintf("%s p%d at %v", f.Kind, f.Server, f.At)
}

// Pairs lists the links between servers of different groups, each once (a < b).
func Pairs(groups [][]int) [][2]int {
	var out [][2]int
	for i, g := range groups {
		for _, h := range groups[i+1:] {
			for _, a := range g {
				for _, b := range h {
					out = append(out, [2]int{min(a, b), max(a, b)})
				}
			}
		}
	}
	return out
}

// Target is what the nemesis acts on: a real cluster (the runner's) or the simulator.
// It has a method for every kind; one it cannot carry returns Unsupported. Which kinds
// a backend and a flavor carry they declare beforehand (package cluster/backend), so
// that a spec is refused before it runs rather than at the fault.
type Target interface {
	// Kill stops a server at once; Restart starts a killed one again.
	Kill(ctx context.Context, id int) error
	Restart(ctx context.Context, id int) error
	// SetLinks cuts (or restores) every message between a and b of each pair, both
	// ways (the broadcast channel alone with broadcastOnly).
	SetLinks(ctx context.Context, pairs [][2]int, cut, broadcastOnly bool) error
	// CutOneWay cuts (or restores) links in one direction: (from, to) drops what from
	// sends to to.
	CutOneWay(ctx context.Context, pairs [][2]int, cut bool) error
	// Pause freezes a server, alive and silent; Resume lets it run again.
	Pause(ctx context.Context, id int) error
	Resume(ctx context.Context, id int) error
	// KillLosing kills a server and loses what its log had not synced (with a torn
	// record after it, tear); SlowDisk makes its log writes take delay longer.
	KillLosing(ctx context.Context, id int, tear bool) error
	SlowDisk(ctx context.Context, id int, delay time.Duration) error
	// Leader says who leads now (0: no one); ServerIDs lists every server.
	Leader(ctx context.Context) (int, error)
	ServerIDs() []int
}

// Unsupported is the error of a fault the target cannot carry.
type Unsupported struct{ Kind Kind }

func (u Unsupported) Error() string { return fmt.Sprintf("%s: this cluster cannot do it", u.Kind) }

// Clock is the run's clock: the time since the load started, and a wait until an
// instant of it. Real runs use Wall; the simulator supplies virtual time.
type Clock interface {
	Now() time.Duration
	// WaitUntil returns once Now() >= at, or with ctx's error.
	WaitUntil(ctx context.Context, at time.Duration) error
}

// Wall is real time from Start.
type Wall struct{ Start time.Time }

func (w Wall) Now() time.Duration { return time.Since(w.Start) }

func (w Wall) WaitUntil(ctx context.Context, at time.Duration) error {
	t := time.NewTimer(time.Until(w.Start.Add(at)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Executed is a fault as it was carried out: when it was issued on the run's clock
// (a kill counts from its issue, not from when the backend confirmed it) and how it
// went.
type Executed struct {
	Fault
	Issued time.Duration
	Err    error
}

// Observer hears about each fault around its execution; the runner uses it to save a
// victim's timeline before it dies and to tell the workload. Either func may be nil.
type Observer struct {
	Before func(ctx context.Context, f Fault)
	After  func(ctx context.Context, e Executed)
}

// Play executes faults, sorted by At, each at its instant, and returns what it did.
// It stops early, returning what was executed so far, when ctx ends.
func Play(ctx context.Context, clock Clock, target Target, faults []Fault, obs Observer) []Executed {
	var done []Executed
	// What is cut now, so that Heal restores exactly that.
	cut := map[[2]int]bool{} // pair -> broadcast only
	oneWay := map[[2]int]bool{}
	links := func(f Fault, on bool) error { return target.SetLinks(ctx, f.Pairs, on, f.BroadcastOnly) }
	for _, f := range faults {
		if clock.WaitUntil(ctx, f.At) != nil {
			return done
		}
		if obs.Before != nil {
			obs.Before(ctx, f)
		}
		e := Executed{Fault: f, Issued: clock.Now()}
		switch f.Kind {
		case Crash, Kill:
			e.Err = target.Kill(ctx, f.Server)
		case Restart:
			e.Err = target.Restart(ctx, f.Server)
		case Partition, Isolate, Outdate:
			// Recorded even when some end failed: the others are cut, and the heal
			// must restore them.
			e.Err = links(f, true)
			for _, p := range f.Pairs {
				cut[p] = f.BroadcastOnly
			}
		case IsolateLeader:
			id, err := target.Leader(ctx)
			switch {
			case err != nil:
				e.Err = err
			case id == 0:
				e.Err = errors.New("isolate-leader: no one leads")
			default:
				e.Server, e.Pairs = id, Isolating(id, target.ServerIDs())
				e.Err = links(e.Fault, true)
				for _, p := range e.Pairs {
					cut[p] = false
				}
			}
		case OneWay:
			e.Err = target.CutOneWay(ctx, f.Pairs, true)
			for _, p := range f.Pairs {
				oneWay[p] = true
			}
		case Pause:
			e.Err = target.Pause(ctx, f.Server)
		case Resume:
			e.Err = target.Resume(ctx, f.Server)
		case SlowDisk:
			e.Err = target.SlowDisk(ctx, f.Server, f.Delay)
		case LoseUnsynced, TornTail:
			e.Err = target.KillLosing(ctx, f.Server, f.Kind == TornTail)
		case Rejoin:
			if e.Err = links(f, false); e.Err == nil {
				for _, p := range f.Pairs {
					if cut[p] { // a full cut (a partition) stays until the heal
						delete(cut, p)
					}
				}
			}
		case Heal:
			var errs []error
			for _, only := range []bool{true, false} {
				var pairs [][2]int
				for p, o := range cut {
					if o == only {
						pairs = append(pairs, p)
					}
				}
				if len(pairs) > 0 {
					slices.SortFunc(pairs, comparePairs)
					errs = append(errs, links(Fault{Kind: Heal, Pairs: pairs, BroadcastOnly: only}, false))
				}
			}
			if len(oneWay) > 0 {
				pairs := slices.SortedFunc(maps.Keys(oneWay), comparePairs)
				errs = append(errs, target.CutOneWay(ctx, pairs, false))
			}
			if e.Err = errors.Join(errs...); e.Err == nil {
				clear(cut)
				clear(oneWay)
			}
		default:
			e.Err = fmt.Errorf("unknown fault kind %q", f.Kind)
		}
		done = append(done, e)
		if obs.After != nil {
			obs.After(ctx, e)
		}
	}
	return done
}

func comparePairs(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }

// CrashAt is when the initial leader's crash was issued, and whether it happened.
func CrashAt(done []Executed) (time.Duration, bool) {
	for _, e := range done {
		if e.Kind == Crash && e.Err == nil {
			return e.Issued, true
		}
	}
	return 0, false
}
