package sim

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/polebench/polebench/nemesis"
)

// The faults beyond kill, restart and two-way cuts, as the simulator carries them:
//   - a paused server processes nothing (its loop is busy until the schedule's resume:
//     messages, requests and its ticks wait, as for a process under SIGSTOP);
//   - a kill that loses unsynced writes is the simulator's kill (the disk keeps only
//     completed syncs); a torn tail is the same here, since a torn record is an unsynced
//     one that poled's log cuts by its checksum (storage tests that part);
//   - a slow disk adds its delay to each of the server's log writes;
//   - a one-way cut drops one direction of both channels and resets the sender's
//     broadcast stream, as a cut does on the side that sends.

var _ nemesis.Target = target{}

func (t target) ServerIDs() []int { return t.s.cfg.Topology.Servers() }

// Leader is the live server that serves as leader in the highest epoch.
func (t target) Leader(context.Context) (int, error) {
	best, epoch := 0, uint64(0)
	for _, srv := range t.s.live() {
		st := srv.d.Status()
		if st.Serving && st.Leader == srv.id && (best == 0 || uint64(st.Epoch) > epoch) {
			best, epoch = srv.id, uint64(st.Epoch)
		}
	}
	return best, nil
}

// Pause freezes p<id> until the schedule's next resume of it (or the end of time).
func (t target) Pause(_ context.Context, id int) error {
	srv, err := t.s.server(id)
	if err != nil {
		return err
	}
	if !srv.up {
		return fmt.Errorf("sim: p%d is not running", id)
	}
	if srv.pausedUntil > t.s.now {
		return fmt.Errorf("sim: p%d is paused already", id)
	}
	until := int64(math.MaxInt64 / 2)
	now := t.s.since()
	for _, f := range t.s.cfg.Faults {
		if f.Kind == nemesis.Resume && f.Server == id && f.At >= now {
			until = t.s.start + int64(f.At)
			break
		}
	}
	srv.pausedUntil = until
	srv.busy = max(srv.busy, until)
	return nil
}

// Resume lets p<id> run: what waited for it is handled from now.
func (t target) Resume(_ context.Context, id int) error {
	srv, err := t.s.server(id)
	if err != nil {
		return err
	}
	if !srv.up || srv.pausedUntil == 0 {
		return fmt.Errorf("sim: p%d is not paused", id)
	}
	if srv.pausedUntil > t.s.now { // resumed before the schedule said
		srv.busy = t.s.now
	}
	srv.pausedUntil = 0
	return nil
}

func (t target) KillLosing(ctx context.Context, id int, _ bool) error { return t.Kill(ctx, id) }

func (t target) SlowDisk(_ context.Context, id int, delay time.Duration) error {
	srv, err := t.s.server(id)
	if err != nil {
		return err
	}
	srv.slowDisk = int64(delay)
	return nil
}

func (t target) CutOneWay(_ context.Context, pairs [][2]int, cut bool) error {
	s := t.s
	for _, p := range pairs {
		if _, err := s.server(p[0]); err != nil {
			return err
		}
		if _, err := s.server(p[1]); err != nil {
			return err
		}
		for _, ch := range []channel{chBroadcast, chElection} {
			k := linkKey{p[0], p[1], ch}
			l := s.link(k)
			if l.cut == cut {
				continue
			}
			l.cut = cut
			l.gen++
			if srv := s.servers[k.from]; cut && ch == chBroadcast && srv.up {
				srv.d.Disconnected(k.to)
				srv.d.Closed(k.to)
				srv.drain()
			}
		}
	}
	return nil
}
