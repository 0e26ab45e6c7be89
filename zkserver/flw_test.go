package zkserver

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zkproto"
)

// fourLetter sends a four-letter word on a raw connection and reads the answer
// until the server closes.
func fourLetter(t *testing.T, addr, word string) string {
	t.Helper()
	nc := dialRaw(t, addr)
	if _, err := io.WriteString(nc, word); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatalf("%s: %v", word, err)
	}
	return string(b)
}

// TestFourLetterWords asks a serving standalone server over raw TCP and checks the
// values it reports; zkproto's tests hold the format against real ZooKeeper's.
func TestFourLetterWords(t *testing.T) {
	f := startServer(t, Config{}, nil)
	c := f.connect(t, time.Second)
	for i := range 3 {
		if _, err := c.Create(fmt.Sprintf("/n%d", i), []byte("data"), zk.FlagEphemeral, acl); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, err := c.GetW("/n0"); err != nil {
		t.Fatal(err)
	}
	var zxid, nodes int64
	f.b.Read(func(tr *datatree.Tree) { zxid, nodes = int64(tr.LastZxid()), int64(tr.NodeCount())+1 }) // +1: as ZooKeeper counts

	if got := fourLetter(t, f.addr, "ruok"); got != "imok" {
		t.Fatalf("ruok: %q", got)
	}
	for _, w := range []string{"srvr", "stat"} {
		text := fourLetter(t, f.addr, w)
		info, err := zkproto.ParseSrvr(text)
		if err != nil {
			t.Fatalf("%s: %v\n%s", w, err, text)
		}
		// One session connection plus the asking one, as ZooKeeper counts.
		want := zkproto.SrvrInfo{Version: DefaultVersion, Mode: "standalone", Zxid: zxid, NodeCount: nodes, Connections: 2}
		info.Received, info.Sent, info.Outstanding = 0, 0, 0
		if info != want {
			t.Errorf("%s: %+v, want %+v\n%s", w, info, want, text)
		}
		if w == "stat" && !strings.Contains(text, "Clients:\n /127.0.0.1:") {
			t.Errorf("stat lists no clients:\n%s", text)
		}
	}
	mntr := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(fourLetter(t, f.addr, "mntr"), "\n"), "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("mntr line %q", line)
		}
		mntr[k] = v
	}
	for k, want := range map[string]string{
		"zk_server_state": "standalone", "zk_znode_count": fmt.Sprint(nodes), "zk_ephemerals_count": "3",
		"zk_watch_count": "1", "zk_num_alive_connections": "2", "zk_global_sessions": "1",
	} {
		if mntr[k] != want {
			t.Errorf("mntr %s = %q, want %q", k, mntr[k], want)
		}
	}
	if got := fourLetter(t, f.addr, "conf"); got != "conf is not executed because it is not in the whitelist.\n" {
		t.Errorf("conf: %q", got)
	}

	// go-zookeeper's own four-letter-word helpers read poled's answers.
	stats, ok := zk.FLWSrvr([]string{f.addr}, 5*time.Second)
	if !ok || stats[0].Error != nil {
		t.Fatalf("FLWSrvr: %v %+v", ok, stats)
	}
	if s := stats[0]; s.Mode != zk.ModeStandalone || int64(s.Counter) != zxid&0xffffffff || s.NodeCount != nodes {
		t.Errorf("FLWSrvr: %+v", s)
	}
	if oks := zk.FLWRuok([]string{f.addr}, 5*time.Second); !oks[0] {
		t.Error("FLWRuok: not ok")
	}
}
