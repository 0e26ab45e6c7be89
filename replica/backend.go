package replica

import (
	"errors"
	"time"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zab"
	"github.com/polebench/polebench/zkproto"
	"github.com/polebench/polebench/zkserver"
)

// backend is the Node as the client port sees it (zkserver.Backend).
type backend Node

var errStopping = errors.New("server stopping")

func (b *backend) Submit(txn datatree.Txn) <-chan zkserver.Outcome {
	n := (*Node)(b)
	ch := make(chan zkserver.Outcome, 1)
	txn.Time = time.Now().UnixMilli()
	user := txn.Type != datatree.OpCreateSession && txn.Type != datatree.OpCloseSession
	select {
	case n.submits <- submit{txn: txn, ch: ch, user: user}:
	case <-n.ctx.Done():
		ch <- zkserver.Outcome{Err: errStopping}
	}
	return ch
}

// Sync orders a no-op through the leader: once it is applied here, so is everything
// the leader had committed before it.
func (b *backend) Sync() <-chan error {
	out := make(chan error, 1)
	res := b.Submit(datatree.Txn{Op: datatree.Noop()})
	go func() {
		o := <-res
		out <- o.Err
	}()
	return out
}

func (b *backend) Read(fn func(t *datatree.Tree)) { b.d.Read(fn) }

func (b *backend) Touch(id int64) {
	select {
	case b.touches <- id:
	default: // the loop is behind; the next touch will do
	}
}

func (b *backend) Status() zkserver.BackendStatus {
	s := b.status.Load()
	if s == nil {
		return zkserver.BackendStatus{}
	}
	st := zkserver.BackendStatus{Serving: s.zab.Serving, Mode: zkproto.ModeFollower}
	if s.zab.Role == zab.Leading {
		st.Mode = zkproto.ModeLeader
	}
	return st
}
