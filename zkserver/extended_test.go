package zkserver

import (
	"slices"
	"testing"
	"time"

	"github.com/polebench/polebench/zkproto"
)

// TestReaping: through the client port, a container goes once its last child
// does and a TTL node once unchanged for its TTL (the standalone node reaps on its
// clock), and the watches on them fire as on a delete.
func TestReaping(t *testing.T) {
	clock := newFakeClock()
	f := startServer(t, Config{ExtendedTypes: true}, clock.now)
	c := newRaw(t, f.addr)
	create := func(op zkproto.Op, body zkproto.Message) {
		t.Helper()
		if h, _ := c.call(op, body); h.Err != zkproto.CodeOK {
			t.Fatalf("%v: %v", op, h.Err)
		}
	}
	req := func(path string, flags int32) zkproto.CreateRequest {
		return zkproto.CreateRequest{Path: path, ACL: zkproto.OpenACL, Flags: flags}
	}
	cr := req("/c", zkproto.ModeContainer)
	create(zkproto.OpCreateContainer, &cr)
	kid := req("/c/k", zkproto.ModePersistent)
	create(zkproto.OpCreate, &kid)
	create(zkproto.OpCreateTTL, &zkproto.CreateTTLRequest{CreateRequest: req("/t", zkproto.ModePersistentWithTTL), TTL: 5000})
	create(zkproto.OpDelete, &zkproto.PathVersionRequest{Path: "/c/k", Version: -1})
	create(zkproto.OpExists, &zkproto.PathWatchRequest{Path: "/c", Watch: true})
	if got := f.b.Reap(); !slices.Equal(got, []string{"/c"}) {
		t.Fatalf("reaped %v, want [/c]", got)
	}
	if h, body := c.recv(zkproto.OpExists); h.Xid != zkproto.XidWatchEvent || body.(*zkproto.WatcherEvent).Type != zkproto.EventNodeDeleted {
		t.Errorf("got %+v %+v, want /c's NodeDeleted", h, body)
	}
	clock.advance(5 * time.Second)
	if got := f.b.Reap(); len(got) != 0 {
		t.Errorf("reaped %v at the TTL, want none before it passed", got)
	}
	clock.advance(time.Millisecond)
	if got := f.b.Reap(); !slices.Equal(got, []string{"/t"}) {
		t.Errorf("reaped %v, want [/t]", got)
	}
}
