package zkserver

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/zkproto"
)

// jaasConf is the JAAS file kazoo's harness writes for its SASL tests.
const jaasConf = `
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_super="super_secret"
    user_jaasuser="jaas_password";
};`

// saslAnswer is a DIGEST-MD5 client's response to the challenge its session last
// received, computed here from RFC 2831 as pure-sasl (kazoo's) computes it.
type saslAnswer struct {
	user, password string
	uri            string // digest-uri; default zookeeper/zk-sasl-md5
}

func (saslAnswer) Encode(*zkproto.Encoder) { panic("saslAnswer is made from a challenge first") }
func (saslAnswer) Decode(*zkproto.Decoder) {}

func (a saslAnswer) from(prev zkproto.Message) zkproto.Message {
	challenge, _ := prev.(*zkproto.SASLPacket)
	if challenge == nil {
		return &zkproto.SASLPacket{Token: []byte("no challenge")}
	}
	dir, _ := parseDirectives(string(challenge.Token))
	uri := a.uri
	if uri == "" {
		uri = "zookeeper/zk-sasl-md5"
	}
	h := func(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	key := md5.Sum([]byte(a.user + ":" + dir["realm"] + ":" + a.password))
	cnonce, nc := "4711", "00000001"
	ha1 := h(string(key[:]) + ":" + dir["nonce"] + ":" + cnonce)
	resp := h(ha1 + ":" + dir["nonce"] + ":" + nc + ":" + cnonce + ":auth:" + h("AUTHENTICATE:"+uri))
	return &zkproto.SASLPacket{Token: fmt.Appendf(nil, `qop=auth,realm="%s",username="%s",nonce="%s",cnonce="%s",nc=%s,digest-uri="%s",response=%s`,
		dir["realm"], a.user, dir["nonce"], cnonce, nc, uri, resp)}
}

// normalizeSASL sorts a token's directives and hides what is random in it.
func normalizeSASL(token []byte) []byte {
	if token == nil {
		return []byte("<null>")
	}
	dir, err := parseDirectives(string(token))
	if err != nil || len(token) == 0 {
		return token
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(dir)) {
		v := dir[k]
		if k == "nonce" || k == "rspauth" {
			v = fmt.Sprintf("<%d chars>", len(v))
		}
		parts = append(parts, k+"="+v)
	}
	return []byte(strings.Join(parts, ","))
}

// hungUp says whether the server closed nc (within a while).
func hungUp(nc net.Conn) string {
	nc.SetReadDeadline(time.Now().Add(3 * time.Second))
	defer nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	n, err := nc.Read(b[:])
	var ne net.Error
	switch {
	case n > 0:
		return "open, more sent"
	case errors.As(err, &ne) && ne.Timeout():
		return "open"
	case errors.Is(err, io.EOF), err != nil:
		return "closed"
	}
	return "open"
}

// TestDifferentialSASL runs SASL DIGEST-MD5 exchanges, each on fresh sessions,
// against Debian's ZooKeeper (the JAAS file and authProvider kazoo's harness
// configures) and poled (the same users): challenges, failures and hang-ups, the
// identity sasl:<user> a success gives, and sasl ACLs.
func TestDifferentialSASL(t *testing.T) {
	jaas := filepath.Join(t.TempDir(), "jaas.conf")
	if err := os.WriteFile(jaas, []byte(jaasConf), 0o644); err != nil {
		t.Fatal(err)
	}
	users, err := ReadJAAS(jaas)
	if err != nil {
		t.Fatal(err)
	}
	real := startRealZooKeeper(t, "-Djava.security.auth.login.config="+jaas,
		"-Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider")
	ours := startServer(t, Config{Tick: 2 * time.Second, SASLUsers: users, SASLProvider: true}, nil)

	step := func(s int, op zkproto.Op, body zkproto.Message) diffStep { return diffStep{s, op, body, nil} }
	sasl := func(s int, token string) diffStep {
		return step(s, zkproto.OpSASL, &zkproto.SASLPacket{Token: []byte(token)})
	}
	answer := func(s int, a saslAnswer) diffStep { return step(s, zkproto.OpSASL, a) }
	hangup := func(s int) diffStep { return step(s, opHangup, nil) }
	acl := func(scheme, id string) []zkproto.ACL {
		return []zkproto.ACL{{Perms: zkproto.PermAll, Scheme: scheme, ID: id}}
	}
	create := func(path string, a []zkproto.ACL) diffStep {
		return step(0, zkproto.OpCreate, &zkproto.CreateRequest{Path: path, Data: []byte("d"), ACL: a})
	}
	get := func(s int, path string) diffStep {
		return step(s, zkproto.OpGetData, &zkproto.PathWatchRequest{Path: path})
	}
	good := saslAnswer{user: "jaasuser", password: "jaas_password"}
	for _, c := range []struct {
		name  string
		steps []diffStep
	}{
		{"authenticated", []diffStep{
			sasl(0, ""), answer(0, good), step(0, zkproto.OpWhoAmI, &zkproto.Empty{}),
			create("/s", acl("sasl", "jaasuser")), get(1, "/s"), get(0, "/s"),
			create("/sa", acl("auth", "")), step(0, zkproto.OpGetACL, &zkproto.PathRequest{Path: "/sa"}),
			sasl(0, ""), hangup(0),
		}},
		{"unknown user", []diffStep{sasl(0, ""), answer(0, saslAnswer{user: "baduser", password: "badpassword"}), hangup(0)}},
		{"wrong password", []diffStep{sasl(0, ""), answer(0, saslAnswer{user: "jaasuser", password: "nope"}), hangup(0)}},
		{"another digest-uri", []diffStep{sasl(0, ""), answer(0, saslAnswer{user: "jaasuser", password: "jaas_password", uri: "zookeeper/elsewhere"}), hangup(0)}},
		{"initial response", []diffStep{sasl(0, "username=jaasuser"), hangup(0)}},
		{"not directives", []diffStep{sasl(0, ""), sasl(0, "nonsense"), hangup(0)}},
		{"sasl ACL ids", []diffStep{
			create("/k1", acl("sasl", "a/b@R")), create("/k2", acl("sasl", "a@b@c")), create("/k3", acl("sasl", "")),
			create("/k4", acl("auth", "")), get(1, "/k1"),
		}},
	} {
		t.Run(c.name, func(t *testing.T) { compareTranscripts(t, real, ours.addr, c.steps) })
	}
	t.Run("no JAAS file, no provider", func(t *testing.T) {
		real := startRealZooKeeper(t)
		ours := startServer(t, Config{Tick: 2 * time.Second}, nil)
		compareTranscripts(t, real, ours.addr, []diffStep{
			create("/n", acl("sasl", "jaasuser")), create("/na", acl("auth", "")),
			step(0, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: "/", ACL: acl("sasl", "jaasuser"), Version: -1}),
			step(0, zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
				{Type: zkproto.OpCreate, Req: &zkproto.CreateRequest{Path: "/m", ACL: acl("sasl", "jaasuser")}},
			}}),
			sasl(0, ""), answer(0, good), step(0, zkproto.OpWhoAmI, &zkproto.Empty{}), hangup(0),
		})
	})
}

// compareTranscripts runs steps on ZooKeeper (real) and poled (ours): every answer
// must be the same.
func compareTranscripts(t *testing.T, real, ours string, steps []diffStep) {
	t.Helper()
	want := transcript(t, real, steps)
	if testing.Verbose() {
		t.Log(strings.Join(want, "\n"))
	}
	got := transcript(t, ours, steps)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ours:      %s\nZooKeeper: %s", got[i], want[i])
		}
	}
}

func TestReadJAAS(t *testing.T) {
	for _, c := range []struct {
		name, src string
		users     map[string]string
		err       string
	}{
		{"kazoo's", jaasConf, map[string]string{"super": "super_secret", "jaasuser": "jaas_password"}, ""},
		{"comments and other sections", "// c\nClient { x.Y required a=b; };\n/* two\nlines */ Server {\n org.apache.zookeeper.server.auth.DigestLoginModule optional user_u=p;\n};",
			map[string]string{"u": "p"}, ""},
		{"no Server section", "Client { org.apache.zookeeper.server.auth.DigestLoginModule required user_u=\"p\"; };", nil, ""},
		{"Kerberos only", "Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };", nil, ""},
		{"bad flag", "Server {\n m.M needed;\n};", nil, "jaas.conf:2: m.M: flag \"needed\""},
		{"no value", "Server {\n m.M required user_u=;\n};", nil, "jaas.conf:2: user_u: want a value"},
		{"unterminated", "Server {\n m.M required user_u=\"p;\n};", nil, "jaas.conf:2: unterminated string"},
		{"no semicolon", "Server { m.M required }", nil, `jaas.conf:1: want a word, got "}"`},
		{"cut short", "Server {\n m.M required;", nil, "jaas.conf: want }, the file ends"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "jaas.conf")
			os.WriteFile(path, []byte(c.src), 0o644)
			users, err := ReadJAAS(path)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || !maps.Equal(users, c.users) || (users == nil) != (c.users == nil) {
				t.Fatalf("%v, %v; want %v", users, err, c.users)
			}
		})
	}
}

func TestParseDirectives(t *testing.T) {
	for _, c := range []struct {
		in   string
		want map[string]string
		err  bool
	}{
		{`realm="zk-sasl-md5",nonce="a\"b",qop="auth",charset=utf-8`, map[string]string{"realm": "zk-sasl-md5", "nonce": `a"b`, "qop": "auth", "charset": "utf-8"}, false},
		{` nc = 00000001 , Response=ab `, map[string]string{"nc": "00000001", "response": "ab"}, false},
		{`a=1,a=2`, nil, true},
		{`a="open`, nil, true},
		{`novalue`, nil, true},
		{`a="x"y`, nil, true},
	} {
		got, err := parseDirectives(c.in)
		if (err != nil) != c.err || (!c.err && !maps.Equal(got, c.want)) {
			t.Errorf("%q: %v, %v; want %v (error %v)", c.in, got, err, c.want, c.err)
		}
	}
}

// FuzzSASL: whatever a client sends, the exchange answers or fails, never panics,
// and only the right digest authenticates.
func FuzzSASL(f *testing.F) {
	f.Add([]byte(""), []byte(`username="u",nonce="n",nc=00000001,cnonce="c",digest-uri="zookeeper/zk-sasl-md5",response=ab`))
	f.Add([]byte("x"), []byte(`a="\`))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		d := &digestMD5{users: map[string]string{"u": "p"}}
		if _, _, err := d.next(first); err != nil {
			t.Fatalf("the first token always gets a challenge: %v", err)
		}
		if _, user, err := d.next(second); err == nil || user != "" {
			t.Fatalf("%q authenticated %q without the nonce", second, user)
		}
	})
}
