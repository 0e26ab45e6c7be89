package zkserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polebench/polebench/zkproto"
)

// startRealZooKeeper runs Debian's ZooKeeper 3.8 standalone on a loopback port
// until the test ends, with the JVM system properties props. Missing, the test fails
// under CI and skips locally.
func startRealZooKeeper(t *testing.T, props ...string) string {
	t.Helper()
	jar := os.Getenv("POLEBENCH_ZOOKEEPER_JAR")
	if jar == "" {
		jar = "/usr/share/java/zookeeper.jar"
	}
	java, err := exec.LookPath("java")
	if _, serr := os.Stat(jar); serr != nil || err != nil {
		msg := fmt.Sprintf("ZooKeeper server not available (%s: %v; java: %v): install the Debian package zookeeper", jar, serr, err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	ln.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.enableServer=false\n", dir, addr.Port)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"-XX:TieredStopAtLevel=1", "-cp", jar, "-Dzookeeper.admin.enableServer=false"}, props...)
	cmd := exec.CommandContext(ctx, java, append(args, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath)...)
	logf, err := os.Create(filepath.Join(dir, "zookeeper.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no orphan JVM if the test binary dies
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait(); logf.Close() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if nc, err := net.DialTimeout("tcp", addr.String(), time.Second); err == nil {
			nc.SetDeadline(time.Now().Add(2 * time.Second)) // a starting JVM may accept and stall
			io.WriteString(nc, "srvr")                      // ruok answers before the server takes sessions
			b, _ := io.ReadAll(nc)
			nc.Close()
			if strings.HasPrefix(string(b), "Zookeeper version:") {
				return addr.String()
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "zookeeper.log"))
			t.Fatalf("ZooKeeper did not start within 30s:\n%s", log)
		}
	}
}

// diffStep is one request of the differential script, from session 0 or 1.
type diffStep struct {
	session int
	op      zkproto.Op
	body    zkproto.Message
	raw     []byte // sent instead of the encoded body when set
}

// dynamicBody is a step's body made from the last reply its session received (a
// SASL response to the server's challenge, say).
type dynamicBody interface {
	zkproto.Message
	from(prev zkproto.Message) zkproto.Message
}

// opHangup is a step that sends nothing and records whether the server has closed
// the session's connection.
const opHangup zkproto.Op = -1000

// transcript runs the script against addr and returns, per step, every frame the
// acting session received up to and including its reply, decoded and normalized.
func transcript(t *testing.T, addr string, steps []diffStep) []string {
	var clients [2]*rawClient
	for i := range clients {
		clients[i] = rawConnect(t, addr, zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true})
	}
	sessions := map[int64]int64{clients[0].resp.SessionID: 1, clients[1].resp.SessionID: 2}
	norm := func(h zkproto.ReplyHeader, body zkproto.Message) string {
		if p, ok := body.(*zkproto.SASLPacket); ok {
			return fmt.Sprintf("%+v sasl %q", h, normalizeSASL(p.Token))
		}
		v := reflect.ValueOf(body)
		if body != nil && v.Kind() == reflect.Pointer {
			cp := reflect.New(v.Elem().Type())
			cp.Elem().Set(v.Elem())
			normalizeStats(cp, sessions)
			body = cp.Interface().(zkproto.Message)
		}
		return fmt.Sprintf("%+v %+v", h, body)
	}
	var out []string
	var last [2]zkproto.Message
	for i, s := range steps {
		c := clients[s.session]
		if s.op == opHangup {
			out = append(out, fmt.Sprintf("step %d (S%d): %s", i, s.session, hungUp(c.nc)))
			continue
		}
		c.xid++
		xid := c.xid
		if s.op == zkproto.OpPing {
			xid = zkproto.XidPing
		}
		body := s.body
		if d, ok := body.(dynamicBody); ok {
			body = d.from(last[s.session])
		}
		frame := zkproto.EncodeRequest(zkproto.RequestHeader{Xid: xid, Type: s.op}, body)
		if s.raw != nil {
			frame = append(zkproto.EncodeRequest(zkproto.RequestHeader{Xid: xid, Type: s.op}, nil), s.raw...)
		}
		if _, err := c.nc.Write(zkproto.AppendFrame(nil, frame)); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		var got []string
		for {
			h, body := c.recv(s.op)
			got = append(got, norm(h, body))
			if h.Xid == xid {
				last[s.session] = body
				break
			}
		}
		out = append(out, fmt.Sprintf("step %d (S%d %v): %s", i, s.session, s.op, strings.Join(got, " | ")))
	}
	return out
}

// normalizeStats zeroes what two servers legitimately differ in: creation and
// modification times, and session ids (replaced by the session's index + 1).
func normalizeStats(v reflect.Value, sessions map[int64]int64) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			normalizeStats(v.Elem(), sessions)
		}
	case reflect.Slice:
		for i := range v.Len() {
			normalizeStats(v.Index(i), sessions)
		}
	case reflect.Struct:
		switch r := v.Addr().Interface().(type) {
		case *zkproto.GetChildrenResponse:
			slices.Sort(r.Children) // ZooKeeper's order is a hash set's
		case *zkproto.GetChildren2Response:
			slices.Sort(r.Children)
		case *zkproto.OpResult:
			slices.Sort(r.Children)
		case *zkproto.EphemeralsResponse:
			slices.Sort(r.Paths) // a hash set's order too
		case *zkproto.WhoAmIResponse:
			slices.SortFunc(r.Info, func(a, b zkproto.AuthInfo) int { return strings.Compare(a.Scheme+" "+a.User, b.Scheme+" "+b.User) })
		}
		if st, ok := v.Addr().Interface().(*zkproto.Stat); ok {
			st.Ctime, st.Mtime = 0, 0
			if n, ok := sessions[st.EphemeralOwner]; ok {
				st.EphemeralOwner = n
			}
			return
		}
		for i := range v.NumField() {
			normalizeStats(v.Field(i), sessions)
		}
	}
}

// TestDifferentialAgainstZooKeeper runs one script of requests from two sessions
// against Debian's real ZooKeeper 3.8 and against poled's standalone server: every
// reply and watch event, in order, must be the same (times and session ids aside).
func TestDifferentialAgainstZooKeeper(t *testing.T) {
	t.Parallel() // the JVM takes seconds to start
	real := startRealZooKeeper(t)
	ours := startServer(t, Config{Tick: 2 * time.Second}, nil)

	pw := func(path string, watch bool) *zkproto.PathWatchRequest {
		return &zkproto.PathWatchRequest{Path: path, Watch: watch}
	}
	create := func(path, data string, mode int32) *zkproto.CreateRequest {
		return &zkproto.CreateRequest{Path: path, Data: []byte(data), ACL: zkproto.OpenACL, Flags: mode}
	}
	ping := diffStep{0, zkproto.OpPing, &zkproto.Empty{}, nil}
	steps := []diffStep{
		{0, zkproto.OpCreate, create("/d", "x", zkproto.ModePersistent), nil},
		{0, zkproto.OpCreate2, create("/d/s-", "e", zkproto.ModeEphemeralSequential), nil},
		{0, zkproto.OpCreate, create("/d/s-", "p", zkproto.ModePersistentSequential), nil},
		{1, zkproto.OpCreate, create("/be", "", zkproto.ModeEphemeral), nil},
		{0, zkproto.OpGetData, pw("/d", true), nil},
		{0, zkproto.OpGetChildren2, pw("/d", true), nil},
		{0, zkproto.OpExists, pw("/nope", true), nil},
		{0, zkproto.OpExists, pw("/be", true), nil},
		{1, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/d", Data: []byte("y"), Version: 0}, nil},
		ping,
		{1, zkproto.OpCreate, create("/nope", "n", zkproto.ModePersistent), nil},
		ping,
		{0, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/d", Data: []byte("z"), Version: 5}, nil},
		{0, zkproto.OpDelete, &zkproto.PathVersionRequest{Path: "/d", Version: -1}, nil},
		{0, zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Type: zkproto.OpCreate, Req: create("/d/m", "m", zkproto.ModePersistent)},
			{Type: zkproto.OpSetData, Req: &zkproto.SetDataRequest{Path: "/d", Data: []byte("w"), Version: 1}},
			{Type: zkproto.OpCheck, Req: &zkproto.PathVersionRequest{Path: "/d", Version: 2}},
			{Type: zkproto.OpDelete, Req: &zkproto.PathVersionRequest{Path: "/d/m", Version: 0}},
		}}, nil},
		{0, zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Type: zkproto.OpCreate, Req: create("/d/n", "", zkproto.ModePersistent)},
			{Type: zkproto.OpCheck, Req: &zkproto.PathVersionRequest{Path: "/d", Version: 9}},
			{Type: zkproto.OpDelete, Req: &zkproto.PathVersionRequest{Path: "/d", Version: -1}},
		}}, nil},
		{0, zkproto.OpMulti, &zkproto.MultiRequest{}, nil},
		{0, zkproto.OpMultiRead, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Type: zkproto.OpGetData, Req: pw("/d", false)},
			{Type: zkproto.OpGetChildren, Req: pw("/missing", false)},
			{Type: zkproto.OpGetChildren, Req: pw("/d", false)},
		}}, nil},
		{0, zkproto.OpGetChildren, pw("/d", false), nil},
		{0, zkproto.OpCreate, create("/d/s-0000000000/x", "", zkproto.ModePersistent), nil},
		{0, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/noacl"}, nil},
		{0, zkproto.OpCreate, create("/x/y", "", zkproto.ModePersistent), nil},
		{0, zkproto.OpDelete, &zkproto.PathVersionRequest{Path: "/zookeeper", Version: -1}, nil},
		{0, zkproto.OpSync, &zkproto.PathRequest{Path: "/d"}, nil},
		{0, zkproto.OpGetACL, &zkproto.PathRequest{Path: "/d"}, nil},
		{0, zkproto.OpGetData, pw("/zookeeper", false), nil},
		{0, zkproto.OpExists, pw("/d/s-0000000001", true), nil},
		{1, zkproto.OpDelete, &zkproto.PathVersionRequest{Path: "/d/s-0000000001", Version: 0}, nil},
		ping,
		{0, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}, nil},
		{0, zkproto.OpSetWatches, &zkproto.SetWatches{RelativeZxid: 3, Data: []string{"/d", "/gone"}, Exist: []string{"/nope", "/zz"}, Child: []string{"/", "/zookeeper"}}, nil},
		{0, zkproto.OpGetData, nil, []byte{0, 0}},
		{1, zkproto.OpCloseSession, &zkproto.Empty{}, nil},
		ping,
		{0, zkproto.OpCloseSession, &zkproto.Empty{}, nil},
	}
	want := transcript(t, real, steps)
	got := transcript(t, ours.addr, steps)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ours:      %s\nZooKeeper: %s", got[i], want[i])
		}
	}
}

// superDigest is super:test's digest, the super user kazoo's harness configures.
const superDigest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="

// TestDifferentialACL runs a script of ACL'd requests, from a digest user, an
// unauthenticated session that later becomes super, against Debian's ZooKeeper 3.8
// and poled: every answer (NoAuth, InvalidACL, BadVersion, the ACLs read back, the
// zxids the refusals take) must be the same.
func TestDifferentialACL(t *testing.T) {
	// Not parallel: a JVM each, one at a time, so a loaded host starts them in time.
	real := startRealZooKeeper(t, "-Dzookeeper.DigestAuthenticationProvider.superDigest="+superDigest)
	ours := startServer(t, Config{Tick: 2 * time.Second, SuperDigest: superDigest}, nil)

	user := zkproto.ACL{Perms: zkproto.PermAll, Scheme: "digest", ID: digestID("u:p")}
	acl := func(a ...zkproto.ACL) []zkproto.ACL { return a }
	create := func(path string, a []zkproto.ACL) *zkproto.CreateRequest {
		return &zkproto.CreateRequest{Path: path, Data: []byte("d"), ACL: a}
	}
	pw := func(path string) *zkproto.PathWatchRequest { return &zkproto.PathWatchRequest{Path: path} }
	world := func(perms int32) zkproto.ACL { return zkproto.ACL{Perms: perms, Scheme: "world", ID: "anyone"} }
	step := func(s int, op zkproto.Op, body zkproto.Message) diffStep { return diffStep{s, op, body, nil} }
	steps := []diffStep{
		step(0, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}),
		step(0, zkproto.OpCreate, create("/a", acl(user))),
		step(0, zkproto.OpCreate, create("/a/c", zkproto.OpenACL)),
		step(1, zkproto.OpGetData, pw("/a")),
		step(1, zkproto.OpGetChildren, pw("/a")),
		step(1, zkproto.OpGetChildren2, pw("/a")),
		step(1, zkproto.OpExists, pw("/a")),
		step(1, zkproto.OpGetACL, &zkproto.PathRequest{Path: "/a"}),
		step(0, zkproto.OpGetACL, &zkproto.PathRequest{Path: "/a"}),
		step(1, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/a", Data: []byte("x"), Version: -1}),
		step(1, zkproto.OpCreate, create("/a/b", zkproto.OpenACL)),
		step(1, zkproto.OpDelete, &zkproto.PathVersionRequest{Path: "/a/c", Version: -1}),
		step(1, zkproto.OpDelete, &zkproto.PathVersionRequest{Path: "/a/none", Version: -1}),
		step(1, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: "/a", ACL: zkproto.OpenACL, Version: -1}),
		step(1, zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Type: zkproto.OpCheck, Req: &zkproto.PathVersionRequest{Path: "/a", Version: -1}},
		}}),
		step(0, zkproto.OpCreate, create("/b", acl(zkproto.ACL{Perms: zkproto.PermAll, Scheme: "auth"}))),
		step(0, zkproto.OpGetACL, &zkproto.PathRequest{Path: "/b"}),
		step(1, zkproto.OpCreate, create("/c", acl(zkproto.ACL{Perms: zkproto.PermAll, Scheme: "auth"}))),
		step(0, zkproto.OpCreate, create("/w", acl(zkproto.ACL{Perms: zkproto.PermAll, Scheme: "world", ID: "someone"}))),
		step(0, zkproto.OpCreate, create("/f", acl(zkproto.ACL{Perms: zkproto.PermAll, Scheme: "foo", ID: "bar"}))),
		step(0, zkproto.OpCreate, create("/d", acl(zkproto.ACL{Perms: zkproto.PermAll, Scheme: "digest", ID: "nocolon"}))),
		step(0, zkproto.OpCreate, create("/i", acl(zkproto.ACL{Perms: zkproto.PermRead, Scheme: "ip", ID: "127.0.0.1"}))),
		step(0, zkproto.OpCreate, create("/n", acl(zkproto.ACL{Perms: zkproto.PermAll, Scheme: "ip", ID: "10.0.0.0/8"}))),
		step(0, zkproto.OpCreate, create("/v", acl(zkproto.ACL{Perms: zkproto.PermAll, Scheme: "ip", ID: "300.1.1.1"}))),
		step(1, zkproto.OpGetData, pw("/i")),
		step(1, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/i", Data: []byte("x"), Version: -1}),
		step(1, zkproto.OpGetData, pw("/n")),
		step(0, zkproto.OpCreate, create("/dup", acl(world(zkproto.PermAll), world(zkproto.PermAll)))),
		step(0, zkproto.OpGetACL, &zkproto.PathRequest{Path: "/dup"}),
		step(0, zkproto.OpCreate, create("/r", acl(zkproto.ACL{Perms: zkproto.PermRead, Scheme: "digest", ID: user.ID}))),
		step(0, zkproto.OpGetACL, &zkproto.PathRequest{Path: "/r"}),
		step(0, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: "/a", ACL: acl(world(zkproto.PermRead)), Version: 5}),
		step(0, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: "/a", ACL: acl(world(zkproto.PermRead)), Version: 0}),
		step(0, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: "/none", ACL: zkproto.OpenACL, Version: -1}),
		step(0, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: "/a", ACL: acl(), Version: -1}),
		step(0, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: "/a", ACL: acl(zkproto.ACL{Perms: zkproto.PermAll, Scheme: "foo"}), Version: -1}),
		step(1, zkproto.OpGetData, pw("/a")),
		step(1, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/a", Data: []byte("x"), Version: -1}),
		step(0, zkproto.OpGetACL, &zkproto.PathRequest{Path: "/a"}),
		step(1, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("super:test")}),
		step(1, zkproto.OpGetData, pw("/b")),
		step(1, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: "/b", ACL: zkproto.OpenACL, Version: 0}),
		step(1, zkproto.OpDelete, &zkproto.PathVersionRequest{Path: "/a/c", Version: -1}),
		step(0, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "ip", Auth: []byte("ignored")}),
		step(0, zkproto.OpGetData, pw("/n")),
		step(1, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "foo", Auth: []byte("x")}),
	}
	want := transcript(t, real, steps)
	if testing.Verbose() {
		t.Log(strings.Join(want, "\n"))
	}
	got := transcript(t, ours.addr, steps)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ours:      %s\nZooKeeper: %s", got[i], want[i])
		}
	}
}

// TestDifferentialReads covers the reads ZooKeeper 3.6+ added that poled answers:
// getEphemerals (prefixes are string prefixes), getAllChildrenNumber (NoNode, NoAuth,
// the root) and whoAmI (the connection's identities, a set: ZooKeeper's order is a
// hash map's).
func TestDifferentialReads(t *testing.T) {
	real := startRealZooKeeper(t, "-Dzookeeper.DigestAuthenticationProvider.superDigest="+superDigest)
	ours := startServer(t, Config{Tick: 2 * time.Second, SuperDigest: superDigest}, nil)
	create := func(path string, mode int32, acl []zkproto.ACL) *zkproto.CreateRequest {
		return &zkproto.CreateRequest{Path: path, ACL: acl, Flags: mode}
	}
	path := func(p string) *zkproto.PathRequest { return &zkproto.PathRequest{Path: p} }
	step := func(s int, op zkproto.Op, body zkproto.Message) diffStep { return diffStep{s, op, body, nil} }
	private := []zkproto.ACL{{Perms: zkproto.PermAll, Scheme: "digest", ID: digestID("u:p")}}
	steps := []diffStep{
		step(0, zkproto.OpCreate, create("/e", zkproto.ModeEphemeral, zkproto.OpenACL)),
		step(0, zkproto.OpCreate, create("/e2", zkproto.ModeEphemeral, zkproto.OpenACL)),
		step(0, zkproto.OpCreate, create("/p", zkproto.ModePersistent, zkproto.OpenACL)),
		step(0, zkproto.OpCreate, create("/p/q", zkproto.ModePersistent, zkproto.OpenACL)),
		step(0, zkproto.OpCreate, create("/p/q/e", zkproto.ModeEphemeral, zkproto.OpenACL)),
		step(0, zkproto.OpCreate, create("/s", zkproto.ModePersistent, private)),
		step(0, zkproto.OpCreate, create("/s/t", zkproto.ModePersistent, zkproto.OpenACL)),
		step(1, zkproto.OpCreate, create("/x", zkproto.ModeEphemeral, zkproto.OpenACL)),
		step(0, zkproto.OpGetEphemerals, path("")),
		step(0, zkproto.OpGetEphemerals, path("/")),
		step(0, zkproto.OpGetEphemerals, path("/e")),
		step(0, zkproto.OpGetEphemerals, path("/p/")),
		step(0, zkproto.OpGetEphemerals, path("/none")),
		step(1, zkproto.OpGetEphemerals, path("/")),
		step(0, zkproto.OpGetAllChildren, path("/p")),
		step(0, zkproto.OpGetAllChildren, path("/")),
		step(0, zkproto.OpGetAllChildren, path("/p/q/e")),
		step(0, zkproto.OpGetAllChildren, path("/none")),
		step(0, zkproto.OpGetAllChildren, path("/s")),
		step(0, zkproto.OpWhoAmI, &zkproto.Empty{}),
		step(0, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}),
		step(0, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}),
		step(0, zkproto.OpGetAllChildren, path("/s")),
		step(0, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("super:test")}),
		step(0, zkproto.OpWhoAmI, &zkproto.Empty{}),
	}
	want := transcript(t, real, steps)
	if testing.Verbose() {
		t.Log(strings.Join(want, "\n"))
	}
	got := transcript(t, ours.addr, steps)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ours:      %s\nZooKeeper: %s", got[i], want[i])
		}
	}
}

// TestDifferentialExtendedTypes covers container and TTL creates, by their opcodes,
// by plain creates' flags and inside a multi, with ZooKeeper's extended types on and
// off: the ephemeral owners the stats carry, and every refusal.
func TestDifferentialExtendedTypes(t *testing.T) {
	create := func(path string, flags int32) *zkproto.CreateRequest {
		return &zkproto.CreateRequest{Path: path, Data: []byte("d"), ACL: zkproto.OpenACL, Flags: flags}
	}
	ttl := func(path string, flags int32, ttl int64) *zkproto.CreateTTLRequest {
		return &zkproto.CreateTTLRequest{CreateRequest: *create(path, flags), TTL: ttl}
	}
	step := func(op zkproto.Op, body zkproto.Message) diffStep { return diffStep{0, op, body, nil} }
	steps := []diffStep{
		step(zkproto.OpCreateContainer, create("/c", zkproto.ModeContainer)),
		step(zkproto.OpCreate, create("/c2", zkproto.ModeContainer)),
		step(zkproto.OpCreate2, create("/c3", zkproto.ModeContainer)),
		step(zkproto.OpCreateContainer, create("/c4", zkproto.ModePersistent)),
		step(zkproto.OpCreateTTL, ttl("/t", zkproto.ModePersistentWithTTL, 1000)),
		step(zkproto.OpCreateTTL, ttl("/ts", zkproto.ModePersistentSequentialWithTTL, 1000)),
		step(zkproto.OpCreateTTL, ttl("/tb", zkproto.ModePersistentWithTTL, 0)),
		step(zkproto.OpCreateTTL, ttl("/tb", zkproto.ModePersistentWithTTL, -5)),
		step(zkproto.OpCreateTTL, ttl("/tb", zkproto.ModePersistentWithTTL, 1<<40)),
		step(zkproto.OpCreateTTL, ttl("/tb", zkproto.ModePersistent, 1000)),
		step(zkproto.OpCreateTTL, ttl("/tb", zkproto.ModeEphemeral, 1000)),
		step(zkproto.OpCreate2, create("/tb", zkproto.ModePersistentWithTTL)),
		step(zkproto.OpCreate, create("/c/x", zkproto.ModePersistent)),
		step(zkproto.OpCreate2, create("/t/e", zkproto.ModeEphemeral)),
		step(zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Type: zkproto.OpCreateContainer, Req: create("/mc", zkproto.ModeContainer)},
			{Type: zkproto.OpCreateTTL, Req: ttl("/mt", zkproto.ModePersistentWithTTL, 10)},
		}}),
		step(zkproto.OpGetData, &zkproto.PathWatchRequest{Path: "/mc"}),
		step(zkproto.OpGetData, &zkproto.PathWatchRequest{Path: "/mt"}),
		step(zkproto.OpGetData, &zkproto.PathWatchRequest{Path: "/c"}),
		step(zkproto.OpCreateTTL, &zkproto.CreateTTLRequest{CreateRequest: zkproto.CreateRequest{Path: "/na", Flags: zkproto.ModePersistent}, TTL: 5}),
		step(zkproto.OpCreateTTL, &zkproto.CreateTTLRequest{CreateRequest: zkproto.CreateRequest{Path: "/na", Flags: zkproto.ModePersistentWithTTL}, TTL: 5}),
		step(zkproto.OpCreateContainer, &zkproto.CreateRequest{Path: "/na", Flags: zkproto.ModeContainer}),
	}
	for _, extended := range []bool{true, false} {
		t.Run(fmt.Sprintf("extendedTypesEnabled=%v", extended), func(t *testing.T) {
			real := startRealZooKeeper(t, fmt.Sprintf("-Dzookeeper.extendedTypesEnabled=%v", extended))
			ours := startServer(t, Config{Tick: 2 * time.Second, ExtendedTypes: extended}, nil)
			want := transcript(t, real, steps)
			if testing.Verbose() {
				t.Log(strings.Join(want, "\n"))
			}
			got := transcript(t, ours.addr, steps)
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("ours:      %s\nZooKeeper: %s", got[i], want[i])
				}
			}
		})
	}
}

// TestDifferentialPersistentWatches covers addWatch (persistent and recursive),
// checkWatches and removeWatches by watcher type, and the events such watches get.
func TestDifferentialPersistentWatches(t *testing.T) {
	real := startRealZooKeeper(t)
	ours := startServer(t, Config{Tick: 2 * time.Second}, nil)
	create := func(path string) *zkproto.CreateRequest {
		return &zkproto.CreateRequest{Path: path, ACL: zkproto.OpenACL}
	}
	watch := func(path string, mode int32) *zkproto.PathModeRequest {
		return &zkproto.PathModeRequest{Path: path, Mode: mode}
	}
	set := func(path string) *zkproto.SetDataRequest {
		return &zkproto.SetDataRequest{Path: path, Data: []byte("v"), Version: -1}
	}
	del := func(path string) *zkproto.PathVersionRequest {
		return &zkproto.PathVersionRequest{Path: path, Version: -1}
	}
	step := func(s int, op zkproto.Op, body zkproto.Message) diffStep { return diffStep{s, op, body, nil} }
	ping := step(0, zkproto.OpPing, &zkproto.Empty{})
	steps := []diffStep{
		step(0, zkproto.OpCreate, create("/w")),
		step(0, zkproto.OpAddWatch, watch("/w", zkproto.WatchPersistent)),
		step(0, zkproto.OpAddWatch, watch("/r", zkproto.WatchPersistentRecursive)),
		step(1, zkproto.OpCreate, create("/r")),
		step(1, zkproto.OpCreate, create("/r/a")),
		step(1, zkproto.OpSetData, set("/r/a")),
		step(1, zkproto.OpSetData, set("/w")),
		step(1, zkproto.OpCreate, create("/w/c")),
		step(1, zkproto.OpDelete, del("/w/c")),
		ping,
		step(0, zkproto.OpCheckWatches, watch("/w", zkproto.WatcherPersistent)),
		step(0, zkproto.OpCheckWatches, watch("/w", zkproto.WatcherData)),
		step(0, zkproto.OpCheckWatches, watch("/w", zkproto.WatcherAny)),
		step(0, zkproto.OpCheckWatches, watch("/r", zkproto.WatcherPersistent)),
		step(0, zkproto.OpRemoveWatches, watch("/w", zkproto.WatcherData)),
		step(0, zkproto.OpRemoveWatches, watch("/w", zkproto.WatcherPersistent)),
		step(0, zkproto.OpRemoveWatches, watch("/w", zkproto.WatcherPersistent)),
		step(0, zkproto.OpGetData, &zkproto.PathWatchRequest{Path: "/w", Watch: true}),
		step(0, zkproto.OpCheckWatches, watch("/w", zkproto.WatcherData)),
		step(0, zkproto.OpRemoveWatches, watch("/w", zkproto.WatcherChildren)),
		step(0, zkproto.OpRemoveWatches, watch("/w", zkproto.WatcherAny)),
		step(1, zkproto.OpSetData, set("/w")),
		ping,
		step(0, zkproto.OpRemoveWatches, watch("/r", zkproto.WatcherPersistentRecursive)),
		step(1, zkproto.OpSetData, set("/r/a")),
		ping,
		step(0, zkproto.OpAddWatch, watch("/w", 7)),
		step(0, zkproto.OpRemoveWatches, watch("/w", 9)),
	}
	want := transcript(t, real, steps)
	if testing.Verbose() {
		t.Log(strings.Join(want, "\n"))
	}
	got := transcript(t, ours.addr, steps)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ours:      %s\nZooKeeper: %s", got[i], want[i])
		}
	}
}
