package zkserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/polebench/polebench/datatree"
)

var acl = zk.WorldACL(zk.PermAll)

// TestClientOps runs every operation go-zookeeper offers against the standalone
// server, in sequence, with the results and errors ZooKeeper gives.
func TestClientOps(t *testing.T) {
	f := startServer(t, Config{}, nil)
	c := f.connect(t, time.Second)

	mustCreate := func(path string, data []byte, flags int32) string {
		t.Helper()
		p, err := c.Create(path, data, flags, acl)
		if err != nil {
			t.Fatalf("create %s: %v", path, err)
		}
		return p
	}
	mustCreate("/a", []byte("x"), 0)
	mustCreate("/a/b", nil, 0)
	eph := mustCreate("/e", []byte("eph"), zk.FlagEphemeral)

	steps := []struct {
		name string
		do   func() error
		want error
	}{
		{"create existing", func() error { _, err := c.Create("/a", nil, 0, acl); return err }, zk.ErrNodeExists},
		{"create without parent", func() error { _, err := c.Create("/x/y", nil, 0, acl); return err }, zk.ErrNoNode},
		{"create under ephemeral", func() error { _, err := c.Create(eph+"/c", nil, 0, acl); return err }, zk.ErrNoChildrenForEphemerals},
		{"create with empty ACL", func() error { _, err := c.Create("/noacl", nil, 0, nil); return err }, zk.ErrInvalidACL},
		{"get missing", func() error { _, _, err := c.Get("/nope"); return err }, zk.ErrNoNode},
		{"set missing", func() error { _, err := c.Set("/nope", nil, -1); return err }, zk.ErrNoNode},
		{"set bad version", func() error { _, err := c.Set("/a", []byte("y"), 5); return err }, zk.ErrBadVersion},
		{"delete bad version", func() error { return c.Delete("/a/b", 3) }, zk.ErrBadVersion},
		{"delete non-empty", func() error { return c.Delete("/a", -1) }, zk.ErrNotEmpty},
		{"delete missing", func() error { return c.Delete("/nope", -1) }, zk.ErrNoNode},
		{"children of missing", func() error { _, _, err := c.Children("/nope"); return err }, zk.ErrNoNode},
		{"delete special", func() error { return c.Delete("/zookeeper", -1) }, zk.ErrBadArguments},
	}
	for _, s := range steps {
		if err := s.do(); !errors.Is(err, s.want) {
			t.Errorf("%s: err %v, want %v", s.name, err, s.want)
		}
	}

	data, st, err := c.Get("/a")
	if err != nil || string(data) != "x" || st.Version != 0 || st.NumChildren != 1 || st.DataLength != 1 {
		t.Fatalf("get /a: %q %+v %v", data, st, err)
	}
	st2, err := c.Set("/a", []byte("yy"), 0)
	if err != nil || st2.Version != 1 || st2.Mzxid <= st.Mzxid || st2.Czxid != st.Czxid || st2.DataLength != 2 {
		t.Fatalf("set /a: %+v %v (before %+v)", st2, err, st)
	}
	ok, st3, err := c.Exists("/a")
	if err != nil || !ok || *st3 != *st2 {
		t.Fatalf("exists /a: %v %+v %v, want stat %+v", ok, st3, err, st2)
	}
	if ok, _, err := c.Exists("/nope"); err != nil || ok {
		t.Fatalf("exists /nope: %v %v", ok, err)
	}
	_, est, err := c.Get(eph)
	if err != nil || est.EphemeralOwner != c.SessionID() {
		t.Fatalf("ephemeral owner %x, want session %x (%v)", est.EphemeralOwner, c.SessionID(), err)
	}

	// Sequential names count the parent's creations, %010d.
	var seqs []string
	for range 3 {
		seqs = append(seqs, mustCreate("/a/s-", []byte("q"), zk.FlagSequence))
	}
	if want := []string{"/a/s-0000000001", "/a/s-0000000002", "/a/s-0000000003"}; !slices.Equal(seqs, want) {
		t.Fatalf("sequential names %v, want %v", seqs, want)
	}
	kids, cst, err := c.Children("/a")
	slices.Sort(kids)
	if err != nil || !slices.Equal(kids, []string{"b", "s-0000000001", "s-0000000002", "s-0000000003"}) || cst.NumChildren != 4 {
		t.Fatalf("children /a: %v %+v %v", kids, cst, err)
	}
	if err := c.Delete("/a/b", 0); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Sync("/a"); err != nil || p != "/a" {
		t.Fatalf("sync: %q %v", p, err)
	}
	// Digest auth is accepted and ignored (no ACL checks).
	if err := c.AddAuth("digest", []byte("user:pass")); err != nil {
		t.Fatalf("auth: %v", err)
	}
	acls, _, err := c.GetACL("/a")
	if err != nil || len(acls) != 1 || acls[0] != acl[0] {
		t.Fatalf("getACL: %v %v", acls, err)
	}
}

// TestMulti checks all-or-nothing with ZooKeeper's per-op results.
func TestMulti(t *testing.T) {
	f := startServer(t, Config{}, nil)
	c := f.connect(t, time.Second)
	if _, err := c.Create("/m", []byte("0"), 0, acl); err != nil {
		t.Fatal(err)
	}

	res, err := c.Multi(
		&zk.CreateRequest{Path: "/m/a", Data: []byte("1"), Acl: acl},
		&zk.SetDataRequest{Path: "/m", Data: []byte("2"), Version: 0},
		&zk.CheckVersionRequest{Path: "/m", Version: 1},
		&zk.DeleteRequest{Path: "/m/a", Version: 0},
	)
	if err != nil {
		t.Fatalf("multi: %v", err)
	}
	if len(res) != 4 || res[0].String != "/m/a" || res[1].Stat == nil || res[1].Stat.Version != 1 {
		t.Fatalf("multi results %+v", res)
	}
	for i, r := range res {
		if r.Error != nil {
			t.Errorf("op %d: %v", i, r.Error)
		}
	}

	cases := []struct {
		name    string
		ops     []any
		failAt  int
		wantErr error
	}{
		{"bad version in the middle", []any{
			&zk.CreateRequest{Path: "/m/b", Acl: acl},
			&zk.SetDataRequest{Path: "/m", Data: []byte("3"), Version: 7},
			&zk.DeleteRequest{Path: "/m/b", Version: -1},
		}, 1, zk.ErrBadVersion},
		{"check fails first", []any{
			&zk.CheckVersionRequest{Path: "/m", Version: 9},
			&zk.CreateRequest{Path: "/m/c", Acl: acl},
		}, 0, zk.ErrBadVersion},
		{"create exists last", []any{
			&zk.CreateRequest{Path: "/m/d", Acl: acl},
			&zk.CreateRequest{Path: "/m/d", Acl: acl},
		}, 1, zk.ErrNodeExists},
		{"delete missing", []any{
			&zk.SetDataRequest{Path: "/m", Data: []byte("4"), Version: -1},
			&zk.DeleteRequest{Path: "/m/none", Version: -1},
		}, 1, zk.ErrNoNode},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Multi(tc.ops...)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if len(res) != len(tc.ops) {
				t.Fatalf("%d results for %d ops", len(res), len(tc.ops))
			}
			for i, r := range res {
				var want error
				switch {
				case i == tc.failAt:
					want = tc.wantErr
				case i > tc.failAt:
					want = fmt.Errorf("unknown error: %v", -2) // runtime inconsistency, as ZooKeeper
				}
				if fmt.Sprint(r.Error) != fmt.Sprint(want) {
					t.Errorf("op %d: %v, want %v", i, r.Error, want)
				}
			}
			// Nothing of a failed multi took effect.
			data, st, err := c.Get("/m")
			if err != nil || string(data) != "2" || st.Version != 1 || st.NumChildren != 0 {
				t.Fatalf("/m after failed multi: %q %+v %v", data, st, err)
			}
		})
	}
}

// TestWatches checks data, exist and child watches fire once, on the right change.
func TestWatches(t *testing.T) {
	f := startServer(t, Config{}, nil)
	c := f.connect(t, time.Second)
	other := f.connect(t, time.Second)
	if _, err := c.Create("/w", []byte("0"), 0, acl); err != nil {
		t.Fatal(err)
	}

	// Data watch: fires on the first set only.
	_, _, dch, err := c.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Set("/w", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, dch); ev.Type != zk.EventNodeDataChanged || ev.Path != "/w" {
		t.Fatalf("data watch: %+v", ev)
	}
	_, _, dch2, err := c.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Set("/w", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, dch2)
	if _, err := other.Set("/w", []byte("3"), -1); err != nil {
		t.Fatal(err)
	}
	noEvent(t, c, dch2)

	// Exists watch on a missing node fires on its creation; child watch on the parent.
	ok, _, ech, err := c.ExistsW("/w/k")
	if err != nil || ok {
		t.Fatalf("existsW: %v %v", ok, err)
	}
	_, _, cch, err := c.ChildrenW("/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create("/w/k", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, ech); ev.Type != zk.EventNodeCreated || ev.Path != "/w/k" {
		t.Fatalf("exists watch: %+v", ev)
	}
	if ev := waitEvent(t, cch); ev.Type != zk.EventNodeChildrenChanged || ev.Path != "/w" {
		t.Fatalf("child watch: %+v", ev)
	}

	// Deleting a node fires its data and child watches (one event each for the
	// client) and its parent's child watch.
	_, _, kd, err := c.GetW("/w/k")
	if err != nil {
		t.Fatal(err)
	}
	_, _, kc, err := c.ChildrenW("/w/k")
	if err != nil {
		t.Fatal(err)
	}
	_, _, pc, err := c.ChildrenW("/w")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Delete("/w/k", -1); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan zk.Event{"data": kd, "child": kc} {
		if ev := waitEvent(t, ch); ev.Type != zk.EventNodeDeleted || ev.Path != "/w/k" {
			t.Fatalf("%s watch on deleted node: %+v", name, ev)
		}
	}
	if ev := waitEvent(t, pc); ev.Type != zk.EventNodeChildrenChanged || ev.Path != "/w" {
		t.Fatalf("parent child watch: %+v", ev)
	}

	// A watch set by a client's own write fires before that write's reply.
	_, _, own, err := c.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/w", []byte("4"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-own:
		if ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("own write: %+v", ev)
		}
	default:
		t.Fatal("own write's watch event did not arrive before its reply")
	}
	if n := f.srv.watches.count(); n != 0 {
		t.Errorf("%d watches still armed, want 0", n)
	}
}

// TestEphemeralsGoneAfterClose checks a closed session's ephemerals vanish at once.
func TestEphemeralsGoneAfterClose(t *testing.T) {
	f := startServer(t, Config{}, nil)
	c := f.connect(t, time.Second)
	obs := f.connect(t, time.Second)
	if _, err := c.Create("/e1", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	ok, _, ech, err := obs.ExistsW("/e1")
	if err != nil || !ok {
		t.Fatalf("existsW: %v %v", ok, err)
	}
	c.Close()
	if ev := waitEvent(t, ech); ev.Type != zk.EventNodeDeleted {
		t.Fatalf("event %+v", ev)
	}
	if ok, _, _ := obs.Exists("/e1"); ok {
		t.Fatal("ephemeral survived its session's close")
	}
	var sessions []datatree.SessionInfo
	f.b.Read(func(tr *datatree.Tree) { sessions = tr.Sessions() })
	if len(sessions) != 1 || sessions[0].ID != obs.SessionID() {
		t.Fatalf("sessions %+v, want only the observer's", sessions)
	}
}

// TestEphemeralsGoneAfterExpiry expires a session deterministically: the client
// keeps pinging, but the server's clock jumps past its timeout.
func TestEphemeralsGoneAfterExpiry(t *testing.T) {
	t.Parallel() // waits on go-zookeeper's 1s reconnect backoff or a JVM
	clock := newFakeClock()
	f := startServer(t, Config{}, clock.now)
	c, events, err := zk.Connect([]string{f.addr}, time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitState(t, events, zk.StateHasSession)
	obs := f.connect(t, time.Second)
	if _, err := c.Create("/e", nil, zk.FlagEphemeralSequential, acl); err != nil {
		t.Fatal(err)
	}
	kids, _, ch, err := obs.ChildrenW("/")
	if err != nil || !slices.Contains(kids, "e0000000000") {
		t.Fatalf("children of /: %v %v", kids, err)
	}

	if ids := f.b.ExpireSessions(); len(ids) != 0 {
		t.Fatalf("expired %x before any timeout", ids)
	}
	clock.advance(time.Second - time.Millisecond) // negotiated timeout is 1s
	if ids := f.b.ExpireSessions(); len(ids) != 0 {
		t.Fatalf("expired %x before the timeout", ids)
	}
	clock.advance(2 * time.Millisecond)
	ids := f.b.ExpireSessions()
	slices.Sort(ids)
	want := []int64{c.SessionID(), obs.SessionID()}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("expired %x, want %x", ids, want)
	}
	// The observer's own session expired too, but its watch event was queued first.
	if ev := waitEvent(t, ch); ev.Type != zk.EventNodeChildrenChanged {
		t.Fatalf("event %+v", ev)
	}
	f.b.Read(func(tr *datatree.Tree) {
		if tr.Exists("/e0000000000") || len(tr.Sessions()) != 0 {
			t.Errorf("after expiry: ephemeral exists %v, sessions %v", tr.Exists("/e0000000000"), tr.Sessions())
		}
	})
	// The expired client is dropped, reconnects, and learns its session expired.
	waitState(t, events, zk.StateExpired)
}

// TestSessionExpiresWhenClientVanishes runs the real timer: a client cut off from
// the server loses its session and its ephemerals within its timeout plus a tick.
func TestSessionExpiresWhenClientVanishes(t *testing.T) {
	t.Parallel() // waits on go-zookeeper's 1s reconnect backoff or a JVM
	f := startServer(t, Config{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.b.Run(ctx, testTick, 0)

	var g gate
	c, events, err := zk.Connect([]string{f.addr}, 200*time.Millisecond, zk.WithLogger(quietLogger{}), zk.WithDialer(g.dial))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitState(t, events, zk.StateHasSession)
	obs := f.connect(t, time.Second)
	start := time.Now() // the client's last touch is at or after this
	if _, err := c.Create("/gone", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	_, _, ch, err := obs.GetW("/gone")
	if err != nil {
		t.Fatal(err)
	}
	g.shut()
	if ev := waitEvent(t, ch); ev.Type != zk.EventNodeDeleted {
		t.Fatalf("event %+v", ev)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("session expired after %v, before its 200ms timeout", d)
	}
	g.open()
	waitState(t, events, zk.StateExpired)
}

// TestReconnectSetWatches drops a client's connection, changes what it watches
// while it is away, and checks that on reconnect (same session) the watches it
// re-arms with setWatches fire for what it missed and stay armed for the rest.
func TestReconnectSetWatches(t *testing.T) {
	t.Parallel() // waits on go-zookeeper's 1s reconnect backoff or a JVM
	f := startServer(t, Config{}, nil)
	var g gate
	c, events, err := zk.Connect([]string{f.addr}, time.Second, zk.WithLogger(quietLogger{}), zk.WithDialer(g.dial))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitState(t, events, zk.StateHasSession)
	other := f.connect(t, time.Second)
	for _, p := range []string{"/changed", "/same", "/parent"} {
		if _, err := c.Create(p, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	sid := c.SessionID()
	_, _, changed, err := c.GetW("/changed")
	if err != nil {
		t.Fatal(err)
	}
	_, _, same, err := c.GetW("/same")
	if err != nil {
		t.Fatal(err)
	}
	_, _, born, err := c.ExistsW("/born")
	if err != nil {
		t.Fatal(err)
	}
	_, _, kids, err := c.ChildrenW("/parent")
	if err != nil {
		t.Fatal(err)
	}

	g.shut()
	waitState(t, events, zk.StateDisconnected)
	eventually(t, "watches of the closed connection dropped", func() bool { return f.srv.watches.count() == 0 })
	if _, err := other.Set("/changed", []byte("new"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create("/born", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create("/parent/kid", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	g.open()
	waitState(t, events, zk.StateHasSession)
	if c.SessionID() != sid {
		t.Fatalf("session changed from %x to %x", sid, c.SessionID())
	}
	for name, tc := range map[string]struct {
		ch   <-chan zk.Event
		want zk.EventType
	}{"data": {changed, zk.EventNodeDataChanged}, "exist": {born, zk.EventNodeCreated}, "child": {kids, zk.EventNodeChildrenChanged}} {
		if ev := waitEvent(t, tc.ch); ev.Type != tc.want {
			t.Errorf("%s watch after reconnect: %+v, want %v", name, ev, tc.want)
		}
	}
	// The unchanged node's watch was re-armed and fires on the next change.
	if _, err := other.Set("/same", []byte("now"), -1); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, same); ev.Type != zk.EventNodeDataChanged || ev.Path != "/same" {
		t.Fatalf("re-armed watch: %+v", ev)
	}
}

// TestConcurrentCAS: sessions racing on one counter with versioned sets lose no
// increment: ErrBadVersion tells each loser to retry.
func TestConcurrentCAS(t *testing.T) {
	f := startServer(t, Config{}, nil)
	setup := f.connect(t, time.Second)
	if _, err := setup.Create("/counter", []byte("0"), 0, acl); err != nil {
		t.Fatal(err)
	}
	const clients, incs = 6, 40
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		c := f.connect(t, time.Second)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < incs; {
				data, st, err := c.Get("/counter")
				if err != nil {
					errs <- err
					return
				}
				n, _ := strconv.Atoi(string(data))
				switch _, err := c.Set("/counter", []byte(strconv.Itoa(n+1)), st.Version); {
				case err == nil:
					i++
				case !errors.Is(err, zk.ErrBadVersion):
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	data, st, err := setup.Get("/counter")
	if err != nil || string(data) != strconv.Itoa(clients*incs) || st.Version != clients*incs {
		t.Fatalf("counter %q version %d (%v), want %d", data, st.Version, err, clients*incs)
	}
}
