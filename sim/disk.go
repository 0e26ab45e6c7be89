package sim

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zab"
)

// disk is a server's durable state in memory, what storage.Store keeps in files: the
// hard state, the newest snapshot (encoded, as on disk) and the log. A write takes the
// disk's latency: it is durable (it survives a kill) only once it completes, and the
// writes of a server killed before that are lost. The snapshot being received is the
// process's memory, not the disk's.
type disk struct {
	hs       zab.HardState
	snap     []byte // nil: none yet
	log      []zab.Txn
	logBytes int // of the log's data since the last snapshot

	pending []write // in progress, in order of completion

	recv     bytes.Buffer
	recvZxid zab.Zxid
	recvSeq  uint32
	busy     bool // a snapshot is being received
}

// write is a persistence operation in progress, durable at at; snap is a received
// snapshot's encoding.
type write struct {
	at   int64
	op   zab.Op
	snap []byte
}

// A server snapshots its tree and drops the log before it once the log holds more
// data than compactBytes and than the last snapshot (ZooKeeper's snapCount, in bytes;
// poled's own log grows for the length of a run, which a simulator of many servers at
// high rates cannot afford in memory). keepBehind transactions stay for DIFFs.
const (
	compactBytes = 16 << 20
	keepBehind   = 1000
)

func (d *disk) wantsCompaction() bool {
	return len(d.pending) == 0 && d.logBytes > max(compactBytes, len(d.snap))
}

// settle makes the writes completed by now durable.
func (d *disk) settle(now int64) {
	i := 0
	for ; i < len(d.pending) && d.pending[i].at <= now; i++ {
		d.apply(d.pending[i])
	}
	d.pending = slices.Delete(d.pending, 0, i)
}

// crash is a kill at now: what was written by then stays, the rest and the process's
// memory are lost.
func (d *disk) crash(now int64) {
	d.settle(now)
	d.pending = nil
	d.recv, d.busy = bytes.Buffer{}, false
}

// restore is storage.Store.Restore: the tree at the snapshot (a fresh server
// preloads, as poled does) and every logged transaction, for the core to commit.
func (d *disk) restore(preloadMB int) (zab.Persisted, *datatree.Tree, error) {
	t := datatree.New()
	switch {
	case d.snap != nil:
		if err := t.ReadSnapshot(bytes.NewReader(d.snap)); err != nil {
			return zab.Persisted{}, nil, err
		}
	case preloadMB > 0 && len(d.log) == 0:
		if _, err := t.Preload(int64(preloadMB) << 20); err != nil {
			return zab.Persisted{}, nil, err
		}
		var b bytes.Buffer
		if err := t.WriteSnapshot(&b); err != nil {
			return zab.Persisted{}, nil, err
		}
		d.snap = b.Bytes()
	}
	return zab.Persisted{HardState: d.hs, Snapshot: t.LastZxid(), Log: slices.Clone(d.log)}, t, nil
}

// persist is storage.Store.Persist, issued at now and durable at done (now, for a disk
// without latency). It returns the tree a completed snapshot installs, at once: the
// process has it in memory.
func (d *disk) persist(ops []zab.Op, now, done int64) (*datatree.Tree, error) {
	d.settle(now)
	var installed *datatree.Tree
	for _, op := range ops {
		w := write{at: done, op: op}
		switch op := op.(type) {
		case *zab.Append, *zab.Truncate, *zab.SetHardState:
		case *zab.SnapshotChunk:
			t, snap, err := d.chunk(op)
			if err != nil {
				return nil, err
			}
			if t == nil {
				continue // the process holds it until the last chunk
			}
			installed, w.snap = t, snap
		default:
			return nil, fmt.Errorf("unknown persistence op %T", op)
		}
		if done <= now {
			d.apply(w)
		} else {
			d.pending = append(d.pending, w)
		}
	}
	return installed, nil
}

// apply makes w durable.
func (d *disk) apply(w write) {
	switch op := w.op.(type) {
	case *zab.Append:
		d.log = append(d.log, op.Txns...)
		for _, t := range op.Txns {
			d.logBytes += len(t.Data)
		}
	case *zab.Truncate:
		i, _ := slices.BinarySearchFunc(d.log, op.After+1, func(t zab.Txn, z zab.Zxid) int { return cmp.Compare(t.Zxid, z) })
		d.log = d.log[:i]
	case *zab.SetHardState:
		d.hs = op.HardState
	case *zab.SnapshotChunk:
		d.snap, d.log, d.logBytes = w.snap, nil, 0
	}
}

// chunk adds a received snapshot chunk; the last one gives the tree and its encoding.
func (d *disk) chunk(c *zab.SnapshotChunk) (*datatree.Tree, []byte, error) {
	if c.Seq == 0 {
		d.recv.Reset()
		d.recvZxid, d.recvSeq, d.busy = c.Zxid, 0, true
	} else if !d.busy || c.Zxid != d.recvZxid || c.Seq != d.recvSeq+1 {
		return nil, nil, fmt.Errorf("snapshot chunk %d of %v out of sequence", c.Seq, c.Zxid)
	}
	d.recvSeq = c.Seq
	d.recv.Write(c.Data)
	if !c.Last {
		return nil, nil, nil
	}
	d.busy = false
	t := datatree.New()
	if err := t.ReadSnapshot(bytes.NewReader(d.recv.Bytes())); err != nil {
		return nil, nil, fmt.Errorf("install snapshot: %w", err)
	}
	snap := slices.Clone(d.recv.Bytes())
	d.recv.Reset()
	return t, snap, nil
}

// compact snapshots view (the tree as applied) when the log is long.
func (d *disk) compact(view *datatree.View) error {
	defer view.Close()
	var b bytes.Buffer
	b.Grow(len(d.snap) + len(d.snap)/8) // about the last one's size: no regrowing
	if err := view.Write(&b); err != nil {
		return err
	}
	z := view.Zxid()
	i, _ := slices.BinarySearchFunc(d.log, z+1, func(t zab.Txn, z zab.Zxid) int { return cmp.Compare(t.Zxid, z) })
	d.snap = b.Bytes()
	d.log = slices.Clone(d.log[max(0, i-keepBehind):])
	d.logBytes = 0
	for _, t := range d.log[min(keepBehind, i):] {
		d.logBytes += len(t.Data)
	}
	return nil
}
