package replica

import (
	"errors"
	"time"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zab"
	"github.com/polebench/polebench/zkproto"
	"github.com/polebench/polebench/zkserver"
)

// clientPortView is the Node as the client port sees it: the zkserver.Backend the
// client port submits transactions to, reads the tree from and asks for its status.
type clientPortView Node

var errStopping = errors.New("server stopping")

func (v *clientPortView) Submit(txn datatree.Txn) <-chan zkserver.Outcome {
	n := (*Node)(v)
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
func (v *clientPortView) Sync() <-chan error {
	out := make(chan error, 1)
	res := v.Submit(datatree.Txn{Op: datatree.Noop()})
	go func() {
		o := <-res
		out <- o.Err
	}()
	return out
}

func (v *clientPortView) Read(fn func(t *datatree.Tree)) { v.d.Read(fn) }

func (v *clientPortView) Touch(id int64) {
	select {
	case v.touches <- id:
	default: // the loop is behind; the next touch will do
	}
}

func (v *clientPortView) Status() zkserver.BackendStatus {
	s := v.status.Load()
	if s == nil {
		return zkserver.BackendStatus{}
	}
	st := zkserver.BackendStatus{Serving: s.zab.Serving, Mode: zkproto.ModeFollower}
	if s.zab.Role == zab.Leading {
		st.Mode = zkproto.ModeLeader
	}
	return st
}
