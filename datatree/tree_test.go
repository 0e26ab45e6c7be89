package datatree

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/polebench/polebench/zab"
)

// harness applies txns at increasing zxids with time = 1000*zxid.
type harness struct {
	t    *testing.T
	tree *Tree
	zxid zab.Zxid
}

func newHarness(t *testing.T) *harness { return &harness{t: t, tree: New()} }

func (h *harness) apply(session int64, op Op) Result {
	h.t.Helper()
	h.zxid++
	r := h.tree.Apply(h.zxid, Txn{Session: session, Time: int64(h.zxid) * 1000, Op: op})
	if r.Zxid != h.zxid {
		h.t.Fatalf("result zxid %v, want %v", r.Zxid, h.zxid)
	}
	return r
}

func (h *harness) ok(session int64, op Op) Result {
	h.t.Helper()
	r := h.apply(session, op)
	if r.Err != Ok {
		h.t.Fatalf("%v %q: %v", op.Type, op.Path, r.Err)
	}
	return r
}

func (h *harness) stat(path string) Stat {
	h.t.Helper()
	s, err := h.tree.Stat(path)
	if err != nil {
		h.t.Fatalf("stat %s: %v", path, err)
	}
	return s
}

func TestNewTreeLooksLikeZooKeeper(t *testing.T) {
	tr := New()
	kids, st, err := tr.Children("/")
	if err != nil || !slices.Equal(kids, []string{"zookeeper"}) {
		t.Fatalf("children of /: %v %v", kids, err)
	}
	// ZooKeeper adds /zookeeper without counting a create: a fresh server's
	// "stat /" shows cversion -1.
	if want := (Stat{Cversion: -1, NumChildren: 1}); st != want {
		t.Errorf("stat / = %+v, want %+v", st, want)
	}
	kids, _, _ = tr.Children("/zookeeper")
	if !slices.Equal(kids, []string{"config", "quota"}) {
		t.Errorf("children of /zookeeper: %v", kids)
	}
	if tr.NodeCount() != 4 || tr.LastZxid() != 0 {
		t.Errorf("count %d last %v", tr.NodeCount(), tr.LastZxid())
	}
}

func TestCreateStat(t *testing.T) {
	h := newHarness(t)
	h.ok(0, Create("/p", nil, Persistent))
	r := h.ok(0, Create("/p/a", []byte("hello"), Persistent))
	want := Stat{Czxid: 2, Mzxid: 2, Pzxid: 2, Ctime: 2000, Mtime: 2000, DataLength: 5}
	if r.Path != "/p/a" || r.Stat != want || r.Type != OpCreate {
		t.Fatalf("create result %+v, want path /p/a stat %+v", r, want)
	}
	if got := h.stat("/p/a"); got != want {
		t.Errorf("stat /p/a = %+v, want %+v", got, want)
	}
	// The parent: one child created at zxid 2.
	want = Stat{Czxid: 1, Mzxid: 1, Pzxid: 2, Ctime: 1000, Mtime: 1000, Cversion: 1, NumChildren: 1}
	if got := h.stat("/p"); got != want {
		t.Errorf("stat /p = %+v, want %+v", got, want)
	}
	data, _, err := h.tree.Get("/p/a")
	if err != nil || string(data) != "hello" {
		t.Errorf("get /p/a = %q %v", data, err)
	}
}

// cversion counts child creates and deletes; pzxid follows both; the
// sequential counter only counts creates (ZooKeeper stores the create count
// and serves 2*creates-children).
func TestChildVersionsAndSequentialNames(t *testing.T) {
	h := newHarness(t)
	h.ok(0, Create("/p", nil, Persistent))
	steps := []struct {
		op       Op
		path     string // created path, if any
		cversion int32
		pzxid    int64
		children int32
	}{
		{Create("/p/s-", nil, PersistentSequential), "/p/s-0000000000", 1, 2, 1},
		{Create("/p/s-", nil, PersistentSequential), "/p/s-0000000001", 2, 3, 2},
		{Create("/p/x", nil, Persistent), "/p/x", 3, 4, 3},
		{Delete("/p/x", -1), "", 4, 5, 2},
		{Create("/p/s-", nil, PersistentSequential), "/p/s-0000000003", 5, 6, 3},
		{Delete("/p/s-0000000000", 0), "", 6, 7, 2},
		{SetData("/p/s-0000000001", []byte("x"), -1), "", 6, 7, 2}, // data changes leave the parent alone
		{Create("/p/", nil, PersistentSequential), "/p/0000000004", 7, 9, 3},
	}
	for i, s := range steps {
		r := h.ok(0, s.op)
		if r.Path != s.path && s.op.Type == OpCreate {
			t.Errorf("step %d: created %q, want %q", i, r.Path, s.path)
		}
		st := h.stat("/p")
		if st.Cversion != s.cversion || st.Pzxid != s.pzxid || st.NumChildren != s.children {
			t.Errorf("step %d (%v %s): /p cversion %d pzxid %d children %d, want %d %d %d",
				i, s.op.Type, s.op.Path, st.Cversion, st.Pzxid, st.NumChildren, s.cversion, s.pzxid, s.children)
		}
		if st.Version != 0 || st.Mzxid != 1 {
			t.Errorf("step %d: parent data version/mzxid changed: %+v", i, st)
		}
	}
	// Sequential under the root uses the root's create count (0 on a fresh
	// tree plus the /p create above).
	if r := h.ok(0, Create("/", nil, PersistentSequential)); r.Path != "/0000000001" {
		t.Errorf("sequential under / created %q", r.Path)
	}
}

func TestSetDataStat(t *testing.T) {
	h := newHarness(t)
	h.ok(0, Create("/a", []byte("1"), Persistent))
	r := h.ok(0, SetData("/a", []byte("22"), 0))
	want := Stat{Czxid: 1, Mzxid: 2, Pzxid: 1, Ctime: 1000, Mtime: 2000, Version: 1, DataLength: 2}
	if r.Stat != want || r.Type != OpSetData {
		t.Fatalf("setData result %+v, want stat %+v", r, want)
	}
	r = h.ok(0, SetData("/a", nil, -1))
	if r.Stat.Version != 2 || r.Stat.DataLength != 0 || r.Stat.Mzxid != 3 {
		t.Errorf("second setData stat %+v", r.Stat)
	}
	if d, _, _ := h.tree.Get("/a"); len(d) != 0 {
		t.Errorf("data %q after setting empty", d)
	}
}

func TestErrors(t *testing.T) {
	const sess = 0x77
	big := make([]byte, MaxDataSize+1)
	setup := func(h *harness) {
		h.ok(sess, CreateSession(5000))
		h.ok(0, Create("/a", nil, Persistent))
		h.ok(0, Create("/a/b", nil, Persistent))
		h.ok(0, SetData("/a/b", []byte("v1"), -1)) // version 1
		h.ok(sess, Create("/eph", nil, Ephemeral))
	}
	cases := []struct {
		name    string
		session int64
		op      Op
		want    Code
	}{
		{"create exists", 0, Create("/a", nil, Persistent), NodeExists},
		{"create root", 0, Create("/", nil, Persistent), NodeExists},
		{"create no parent", 0, Create("/x/y", nil, Persistent), NoNode},
		{"create under ephemeral", 0, Create("/eph/c", nil, Persistent), NoChildrenForEphemerals},
		{"create seq under ephemeral", sess, Create("/eph/c", nil, EphemeralSequential), NoChildrenForEphemerals},
		{"create too big", 0, Create("/big", big, Persistent), BadArguments},
		{"create max size", 0, Create("/max", big[:MaxDataSize], Persistent), Ok},
		{"create ephemeral without session", 0, Create("/e", nil, Ephemeral), BadArguments},
		{"create bad mode", 0, Create("/m", nil, CreateMode(7)), BadArguments},
		{"create expired session", 0x99, Create("/s", nil, Persistent), SessionExpired},
		{"create seq trailing slash", 0, Create("/a/", nil, PersistentSequential), Ok},
		{"create trailing slash", 0, Create("/a/", nil, Persistent), BadArguments},
		{"delete missing", 0, Delete("/nope", -1), NoNode},
		{"delete bad version", 0, Delete("/a/b", 0), BadVersion},
		{"delete good version", 0, Delete("/a/b", 1), Ok},
		{"delete not empty", 0, Delete("/a", -1), NotEmpty},
		{"delete root", 0, Delete("/", -1), BadArguments},
		{"delete /zookeeper", 0, Delete("/zookeeper", -1), BadArguments},
		{"delete /zookeeper/quota", 0, Delete("/zookeeper/quota", -1), BadArguments},
		{"delete bad path", 0, Delete("/a/../a", -1), BadArguments},
		{"delete expired session", 0x99, Delete("/a/b", -1), SessionExpired},
		{"setData missing", 0, SetData("/nope", nil, -1), NoNode},
		{"setData bad version", 0, SetData("/a/b", nil, 0), BadVersion},
		{"setData good version", 0, SetData("/a/b", nil, 1), Ok},
		{"setData too big", 0, SetData("/a/b", big, -1), BadArguments},
		{"setData bad path", 0, SetData("a", nil, -1), BadArguments},
		{"check missing", 0, Check("/nope", -1), NoNode},
		{"check bad version", 0, Check("/a/b", 7), BadVersion},
		{"check good version", 0, Check("/a/b", 1), Ok},
		{"check any version", 0, Check("/a/b", -1), Ok},
		{"createSession no id", 0, CreateSession(100), BadArguments},
		{"createSession no timeout", 5, CreateSession(0), BadArguments},
		{"closeSession unknown", 0x99, CloseSession(), Ok},
		{"unknown op", 0, Op{Type: OpType(99)}, Unimplemented},
		{"create TTL without a TTL", 0, Create("/t", nil, PersistentWithTTL), BadArguments},
		{"create TTL too long", 0, CreateTTL("/t", nil, PersistentWithTTL, nil, MaxTTL+1), BadArguments},
		{"create persistent with a TTL", 0, Op{Type: OpCreate, Path: "/t", TTL: 5}, BadArguments},
		{"create TTL", 0, CreateTTL("/t", nil, PersistentSequentialWithTTL, nil, MaxTTL), Ok},
		{"create container", 0, Create("/c", nil, Container), Ok},
		{"create ephemeral container child", sess, Create("/a/e", nil, Ephemeral), Ok},
		{"deleteContainer of a persistent node", 0, DeleteContainer("/a/b"), BadVersion},
		{"deleteContainer not empty", 0, DeleteContainer("/a"), NotEmpty},
		{"deleteContainer missing", 0, DeleteContainer("/nope"), NoNode},
		{"deleteContainer from a session", sess, DeleteContainer("/a/b"), BadArguments},
		{"create bad ACL", 0, CreateACL("/x", nil, Persistent, []ACL{{PermAll, ID{"world", "me"}}}), InvalidACL},
		{"create unknown scheme", 0, CreateACL("/x", nil, Persistent, []ACL{{PermAll, ID{"foo", "me"}}}), InvalidACL},
		{"create auth without digest", 0, CreateACL("/x", nil, Persistent, []ACL{{PermAll, ID{"auth", ""}}}), InvalidACL},
		{"setACL bad version", 0, SetACL("/a", OpenACL(), 3), BadVersion},
		{"setACL missing", 0, SetACL("/nope", OpenACL(), -1), NoNode},
		{"setACL", 0, SetACL("/a", []ACL{{PermRead, Anyone}}, 0), Ok},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			setup(h)
			before := snapshotBytes(t, h.tree.Clone())
			r := h.apply(c.session, c.op)
			if r.Err != c.want {
				t.Fatalf("%v %q: got %v, want %v", c.op.Type, c.op.Path, r.Err, c.want)
			}
			if c.want != Ok {
				if len(r.Events) != 0 {
					t.Errorf("failed op produced events %v", r.Events)
				}
				// A failed op changes nothing but LastZxid.
				ref := New()
				if err := ref.ReadSnapshot(bytes.NewReader(before)); err != nil {
					t.Fatal(err)
				}
				ref.Apply(h.zxid, Txn{Op: Noop()})
				if !bytes.Equal(snapshotBytes(t, ref), snapshotBytes(t, h.tree)) {
					t.Errorf("failed op changed the tree")
				}
			}
		})
	}
}

func TestBadPaths(t *testing.T) {
	bad := []string{"", "a", "/a/", "//a", "/a//b", "/.", "/..", "/a/.", "/a/../b", "/a\x00b",
		"/a\x01", "/\x1f", "/\u007f", "/\u009f", "/\ue000", "/\uf8ff", "/\ufff0", "/\uffff", "/😀", "/\xff"}
	good := []string{"/", "/a", "/...", "/.a", "/a.", "/a..b", "/ü", "/\u00a0", "/\ufeff", "/a b", "/a-/b_"}
	for _, p := range bad {
		if ValidatePath(p) == nil {
			t.Errorf("ValidatePath(%q) accepted", p)
		}
		h := newHarness(t)
		for _, op := range []Op{Create(p, nil, Persistent), SetData(p, nil, -1), Check(p, -1)} {
			if r := h.apply(0, op); r.Err != BadArguments {
				t.Errorf("%v %q: %v, want BadArguments", op.Type, p, r.Err)
			}
		}
	}
	for _, p := range good {
		if err := ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q): %v", p, err)
		}
	}
}

// TestPlainPathAgrees: the one-pass check accepts only what the full check accepts,
// and accepts the plain paths, over every path of up to 4 bytes from a small alphabet.
func TestPlainPathAgrees(t *testing.T) {
	alphabet := []string{"/", ".", "a", " ", "~", "\x00", "\x7f", "\xc3\xbc"}
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		plain, err := plainPath(p), checkPath(p)
		if plain && err != nil {
			t.Errorf("plainPath(%q) accepts what checkPath rejects: %v", p, err)
		}
		if !plain && err == nil && strings.Trim(p, "/.a ~") == "" && strings.HasPrefix(p, "/") && len(p) > 1 {
			t.Errorf("plainPath(%q) rejects a plain valid path", p)
		}
		if depth == 4 {
			return
		}
		for _, c := range alphabet {
			walk(p+c, depth+1)
		}
	}
	walk("", 0)
}

func TestEphemeralsAndCloseSession(t *testing.T) {
	h := newHarness(t)
	const s1, s2 = 0x100, 0x200
	h.ok(s1, CreateSession(4000))
	h.ok(s2, CreateSession(6000))
	h.ok(0, Create("/p", nil, Persistent))              // 3
	h.ok(s1, Create("/p/e1", []byte("x"), Ephemeral))   // 4
	h.ok(s1, Create("/p/q-", nil, EphemeralSequential)) // 5
	h.ok(s2, Create("/e2", nil, Ephemeral))             // 6
	if st := h.stat("/p/e1"); st.EphemeralOwner != s1 {
		t.Errorf("ephemeralOwner %x", st.EphemeralOwner)
	}
	if h.tree.EphemeralCount() != 3 {
		t.Errorf("ephemeral count %d", h.tree.EphemeralCount())
	}
	want := []SessionInfo{{s1, 4000, []string{"/p/e1", "/p/q-0000000001"}}, {s2, 6000, []string{"/e2"}}}
	if got := h.tree.Sessions(); !reflect.DeepEqual(got, want) {
		t.Errorf("sessions %+v, want %+v", got, want)
	}
	r := h.ok(s1, CloseSession()) // 7
	wantEv := []Event{
		{EventNodeDeleted, "/p/e1"}, {EventNodeChildrenChanged, "/p"},
		{EventNodeDeleted, "/p/q-0000000001"}, {EventNodeChildrenChanged, "/p"},
	}
	if !reflect.DeepEqual(r.Events, wantEv) {
		t.Errorf("closeSession events %v, want %v", r.Events, wantEv)
	}
	if h.tree.Exists("/p/e1") || h.tree.Exists("/p/q-0000000001") || !h.tree.Exists("/e2") {
		t.Errorf("wrong nodes after closeSession")
	}
	if st := h.stat("/p"); st.Pzxid != 7 || st.Cversion != 4 || st.NumChildren != 0 {
		t.Errorf("/p after closeSession: %+v", st)
	}
	if _, ok := h.tree.Session(s1); ok {
		t.Errorf("session still live")
	}
	if r := h.apply(s1, Create("/late", nil, Persistent)); r.Err != SessionExpired {
		t.Errorf("create after close: %v", r.Err)
	}
	if r := h.apply(s1, Multi(Create("/late", nil, Persistent))); r.Err != SessionExpired ||
		!reflect.DeepEqual(r.Ops, []OpResult{{Type: OpError, Err: SessionExpired}}) {
		t.Errorf("multi after close: %+v", r)
	}
	if h.tree.EphemeralCount() != 1 {
		t.Errorf("ephemeral count %d", h.tree.EphemeralCount())
	}
	// Expiry is the same txn; proposing it twice is harmless.
	if r := h.ok(s1, CloseSession()); len(r.Events) != 0 {
		t.Errorf("second close produced events")
	}
	// Re-registering a session refreshes its timeout.
	h.ok(s2, CreateSession(9000))
	if to, ok := h.tree.Session(s2); !ok || to != 9000 {
		t.Errorf("timeout %d %v", to, ok)
	}
}

func TestEvents(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		op   Op
		want []Event
	}{
		{Create("/a", nil, Persistent), []Event{{EventNodeCreated, "/a"}, {EventNodeChildrenChanged, "/"}}},
		{Create("/a/b", nil, Persistent), []Event{{EventNodeCreated, "/a/b"}, {EventNodeChildrenChanged, "/a"}}},
		{SetData("/a/b", []byte("x"), -1), []Event{{EventNodeDataChanged, "/a/b"}}},
		{Check("/a/b", -1), nil},
		{Delete("/a/b", -1), []Event{{EventNodeDeleted, "/a/b"}, {EventNodeChildrenChanged, "/a"}}},
		{Noop(), nil},
	}
	for _, c := range cases {
		if r := h.ok(0, c.op); !reflect.DeepEqual(r.Events, c.want) {
			t.Errorf("%v %s: events %v, want %v", c.op.Type, c.op.Path, r.Events, c.want)
		}
	}
}

func TestMultiSuccess(t *testing.T) {
	h := newHarness(t)
	h.ok(0, Create("/old", []byte("o"), Persistent))
	r := h.ok(0, Multi(
		Create("/m", []byte("1"), Persistent),
		Create("/m/c-", nil, PersistentSequential),
		Create("/m/c-", nil, PersistentSequential), // sees the first one's cversion
		SetData("/m", []byte("2"), 0),
		Check("/m", 1),
		Delete("/old", 0),
	))
	want := []OpResult{
		{Type: OpCreate, Path: "/m", Stat: Stat{Czxid: 2, Mzxid: 2, Pzxid: 2, Ctime: 2000, Mtime: 2000, DataLength: 1}},
		{Type: OpCreate, Path: "/m/c-0000000000", Stat: Stat{Czxid: 2, Mzxid: 2, Pzxid: 2, Ctime: 2000, Mtime: 2000}},
		{Type: OpCreate, Path: "/m/c-0000000001", Stat: Stat{Czxid: 2, Mzxid: 2, Pzxid: 2, Ctime: 2000, Mtime: 2000}},
		{Type: OpSetData, Stat: Stat{Czxid: 2, Mzxid: 2, Pzxid: 2, Ctime: 2000, Mtime: 2000, Version: 1, DataLength: 1, Cversion: 2, NumChildren: 2}},
		{Type: OpCheck},
		{Type: OpDelete},
	}
	if !reflect.DeepEqual(r.Ops, want) {
		t.Errorf("multi results\n got %+v\nwant %+v", r.Ops, want)
	}
	if len(r.Events) != 9 {
		t.Errorf("events %v", r.Events)
	}
	if h.tree.Exists("/old") || !h.tree.Exists("/m/c-0000000001") {
		t.Errorf("multi did not apply")
	}
	if r := h.ok(0, Multi()); len(r.Ops) != 0 {
		t.Errorf("empty multi: %+v", r)
	}
}

// A failing multi changes nothing (every kind of op rolled back), and its
// results are ZooKeeper's: Ok before the failure, the code, then
// RuntimeInconsistency.
func TestMultiAllOrNothing(t *testing.T) {
	const sess = 0x5
	for failAt, bad := range []Op{
		Check("/p", 9),
		Delete("/nope", -1),
		Create("/p/e/x", nil, Persistent),
		SetData("/p", nil, 42),
		Create("/p/", make([]byte, MaxDataSize+1), PersistentSequential),
		CreateSession(10), // not allowed in a multi
	} {
		h := newHarness(t)
		h.ok(sess, CreateSession(1000))
		h.ok(0, Create("/p", []byte("p"), Persistent))
		h.ok(0, Create("/p/gone", []byte("g"), Persistent))
		h.ok(sess, Create("/p/e", nil, Ephemeral))
		before := h.tree.Clone()
		ops := []Op{
			Create("/p/n-", []byte("new"), PersistentSequential),
			SetData("/p", []byte("changed"), 0),
			Delete("/p/gone", -1),
			Create("/p/eph", nil, Ephemeral),
			Delete("/p/e", -1),
		}
		ops = append(ops, bad, Create("/after", nil, Persistent))
		r := h.apply(sess, Multi(ops...))
		wantErr := map[int]Code{0: BadVersion, 1: NoNode, 2: NoNode, 3: BadVersion, 4: BadArguments, 5: BadArguments}[failAt]
		if r.Err != wantErr {
			t.Fatalf("case %d: multi err %v, want %v", failAt, r.Err, wantErr)
		}
		for i, o := range r.Ops {
			want := OpResult{Type: OpError, Err: Ok}
			if i == 5 {
				want.Err = wantErr
			} else if i > 5 {
				want.Err = RuntimeInconsistency
			}
			if o != want {
				t.Errorf("case %d op %d: %+v, want %+v", failAt, i, o, want)
			}
		}
		if len(r.Events) != 0 {
			t.Errorf("case %d: events %v", failAt, r.Events)
		}
		before.Apply(h.zxid, Txn{Op: Noop()})
		if !bytes.Equal(snapshotBytes(t, before), snapshotBytes(t, h.tree)) {
			t.Errorf("case %d: failed multi changed the tree", failAt)
		}
		if h.tree.ApproximateSize() != before.ApproximateSize() || h.tree.EphemeralCount() != before.EphemeralCount() ||
			!reflect.DeepEqual(h.tree.Sessions(), before.Sessions()) {
			t.Errorf("case %d: accounting not rolled back", failAt)
		}
		// The next sequential name is the same as if the multi never ran.
		if r := h.ok(0, Create("/p/n-", nil, PersistentSequential)); r.Path != "/p/n-0000000002" {
			t.Errorf("case %d: next sequential %s", failAt, r.Path)
		}
	}
}

func TestApplyOutOfOrder(t *testing.T) {
	h := newHarness(t)
	h.ok(0, Create("/a", nil, Persistent))
	r := h.tree.Apply(1, Txn{Op: Create("/b", nil, Persistent)})
	if r.Err != RuntimeInconsistency || h.tree.Exists("/b") || h.tree.LastZxid() != 1 {
		t.Errorf("replayed zxid: %+v", r)
	}
}

func TestApplyEncoded(t *testing.T) {
	tr := New()
	txn := Txn{Time: 5, Op: Create("/x", []byte("d"), Persistent)}
	r, err := tr.ApplyEncoded(zab.Txn{Zxid: 3, Data: txn.Marshal()})
	if err != nil || r.Err != Ok || r.Stat.Czxid != 3 || r.Stat.Ctime != 5 {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := tr.ApplyEncoded(zab.Txn{Zxid: 4, Data: []byte{9}}); !errors.Is(err, ErrTxnCorrupt) {
		t.Errorf("corrupt txn: %v", err)
	}
}

func TestReadsOnMissingNodes(t *testing.T) {
	tr := New()
	if _, _, err := tr.Get("/x"); !errors.Is(err, NoNode) || CodeOf(err) != NoNode {
		t.Errorf("get: %v", err)
	}
	if _, _, err := tr.Children("/x"); err != NoNode {
		t.Errorf("children: %v", err)
	}
	if _, err := tr.Stat("/x"); err != NoNode {
		t.Errorf("stat: %v", err)
	}
	if tr.Exists("/x") {
		t.Errorf("exists")
	}
	if CodeOf(nil) != Ok || CodeOf(errors.New("x")) != SystemError || Ok.Err() != nil || NoNode.Err() == nil {
		t.Errorf("CodeOf/Err")
	}
	if !strings.Contains(NodeExists.Error(), "exists") {
		t.Errorf("message %q", NodeExists.Error())
	}
}

func TestChildrenSorted(t *testing.T) {
	h := newHarness(t)
	for _, n := range []string{"b", "c", "a", "aa"} {
		h.ok(0, Create("/"+n, nil, Persistent))
	}
	kids, _, _ := h.tree.Children("/")
	if !slices.Equal(kids, []string{"a", "aa", "b", "c", "zookeeper"}) {
		t.Errorf("children %v", kids)
	}
}

func TestSizeAccounting(t *testing.T) {
	h := newHarness(t)
	base := h.tree.ApproximateSize()
	h.ok(0, Create("/ab", []byte("12345"), Persistent))
	if got := h.tree.ApproximateSize() - base; got != 3+5 {
		t.Errorf("size grew by %d", got)
	}
	h.ok(0, SetData("/ab", []byte("1"), -1))
	h.ok(0, Delete("/ab", -1))
	if h.tree.ApproximateSize() != base {
		t.Errorf("size %d, want %d", h.tree.ApproximateSize(), base)
	}
}

func TestCloneIsIndependent(t *testing.T) {
	h := newHarness(t)
	h.ok(0, Create("/a", []byte("1"), Persistent))
	c := h.tree.Clone()
	h.ok(0, Create("/a/b", nil, Persistent))
	h.ok(0, SetData("/a", []byte("2"), -1))
	if c.Exists("/a/b") {
		t.Errorf("clone sees a later create")
	}
	if d, st, _ := c.Get("/a"); string(d) != "1" || st.NumChildren != 0 {
		t.Errorf("clone sees later changes: %q %+v", d, st)
	}
}

func snapshotBytes(t testing.TB, tr *Tree) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tr.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Readers may run while Apply does (run with -race).
func TestConcurrentReads(t *testing.T) {
	tr := New()
	txns := randomTxns(3, 2000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i, txn := range txns {
			tr.Apply(zab.Zxid(i+1), txn)
		}
	}()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		tr.Get("/a")
		tr.Children("/a")
		tr.Exists("/a/x")
		tr.Sessions()
		tr.Clone()
		tr.NodeCount()
	}
	if tr.LastZxid() != 2000 {
		t.Errorf("last %v", tr.LastZxid())
	}
}

// Containers go once their last child does (never before they had one), TTL nodes
// once childless and unchanged for their TTL; the reaper's delete re-checks, so a
// node that changed after it was picked stays.
func TestReaping(t *testing.T) {
	h := newHarness(t)
	h.ok(0, Create("/c", nil, Container))
	h.ok(0, Create("/fresh", nil, Container))
	h.ok(0, Create("/c/x", nil, Persistent))
	created := h.ok(0, CreateTTL("/t", nil, PersistentWithTTL, nil, 1550)) // at time 4000: due after 5550
	if st := h.stat("/t"); st.EphemeralOwner != 0 || created.Stat.EphemeralOwner != 0 {
		t.Errorf("TTL node's ephemeral owner %#x, want 0 (as ZooKeeper shows it)", uint64(st.EphemeralOwner))
	}
	if n := h.tree.nodes["/c"]; n.st.ephemeralOwner != math.MinInt64 || h.stat("/c").EphemeralOwner != 0 {
		t.Errorf("container's ephemeral owner %#x (shown %#x), want 0x8000000000000000 (shown 0)", uint64(n.st.ephemeralOwner), h.stat("/c").EphemeralOwner)
	}
	if n := h.tree.nodes["/t"]; n.st.ephemeralOwner != -1<<56|1550 {
		t.Errorf("TTL node's stored owner %#x, want ZooKeeper's 0xff0000000000060e", uint64(n.st.ephemeralOwner))
	}
	if got := h.tree.Reapable(5000); len(got) != 0 {
		t.Errorf("reapable at 5000: %v, want none", got)
	}
	h.ok(0, Delete("/c/x", -1)) // zxid 5, time 5000
	if got := h.tree.Reapable(5501); !slices.Equal(got, []string{"/c"}) {
		t.Errorf("reapable at 5501: %v, want [/c]", got)
	}
	if got := h.tree.Reapable(5600); !slices.Equal(got, []string{"/c", "/t"}) {
		t.Errorf("reapable at 5600: %v, want [/c /t]", got)
	}
	if r := h.apply(0, DeleteContainer("/t")); r.Err != Ok { // time 6000: due
		t.Errorf("deleteContainer /t: %v", r.Err)
	}
	h.ok(0, SetData("/fresh", nil, -1))
	if r := h.apply(0, DeleteContainer("/fresh")); r.Err != BadVersion {
		t.Errorf("deleteContainer of a never-used container: %v, want bad version", r.Err)
	}
	r := h.ok(0, DeleteContainer("/c"))
	if !slices.Equal(r.Events, []Event{{EventNodeDeleted, "/c"}, {EventNodeChildrenChanged, "/"}}) {
		t.Errorf("events %v", r.Events)
	}
	loaded, err := LoadSnapshot(bytes.NewReader(snapshotBytes(t, h.tree)))
	if err != nil {
		t.Fatal(err)
	}
	// The loaded tree knows its containers too.
	for i, op := range []Op{Create("/fresh/k", nil, Persistent), Delete("/fresh/k", -1)} {
		if r := loaded.Apply(h.zxid+zab.Zxid(i+1), Txn{Time: 9000, Op: op}); r.Err != Ok {
			t.Fatal(r.Err)
		}
	}
	if got := loaded.Reapable(1 << 40); !slices.Equal(got, []string{"/fresh"}) || loaded.EphemeralCount() != 0 {
		t.Errorf("a loaded tree reaps %v (want [/fresh]) and counts %d ephemerals", got, loaded.EphemeralCount())
	}
}
