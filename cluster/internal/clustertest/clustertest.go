// Package clustertest holds what the backends' tests share: the two-DC layouts they
// run, ZooKeeper clients pinned to one server, test logs, labels, and the root check.
package clustertest

import (
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/topology"
)

// TwoDC is the layout of the shipped two-dc experiment.
func TwoDC(t testing.TB) *topology.Topology {
	t.Helper()
	b, err := spec.Shipped("two-dc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spec.Parse("two-dc.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := sp.Topology()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// PaperTwoDC is the paper's Fig. 4 layout: p1, p2 in D1 (tud), p3, p4, p5 in D2 (cern).
func PaperTwoDC(t testing.TB) *topology.Topology {
	t.Helper()
	topo, err := topology.New(topology.Config{
		DCs:      []topology.DC{{Name: "D1", Endpoint: "tud", Servers: []int{1, 2}}, {Name: "D2", Endpoint: "cern", Servers: []int{3, 4, 5}}},
		IntraRTT: topology.DefaultIntraRTT,
	})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// NeedRoot skips without root, except in CI, where the backends that need it must be
// tested.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("this test needs root (CI runs it as root)")
	}
	t.Skip("this test needs root")
}

// Label is a label for the test's run, unique across tests and time, in the
// characters every backend accepts.
func Label(t testing.TB) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, t.Name())
	return "test-" + name + "-" + time.Now().UTC().Format("150405.000000")
}

// Writer writes each line to the test's log.
type Writer struct{ T testing.TB }

func (w Writer) Write(b []byte) (int, error) {
	w.T.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// Logger logs everything, debug included, to the test's log.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(Writer{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Quiet is a ZooKeeper client logger that says nothing.
type Quiet struct{}

func (Quiet) Printf(string, ...any) {}

type zkLog struct{ t testing.TB }

func (l zkLog) Printf(format string, a ...any) { l.t.Logf("zk: "+format, a...) }

// Connect opens a quiet ZooKeeper client to addr, closed when the test ends.
func Connect(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(Quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Session opens a ZooKeeper client pinned to the server at addr, logging to the test,
// and waits for its session.
func Session(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkLog{t}))
	if err != nil {
		t.Fatalf("zk connect %s: %v", addr, err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatalf("no zk session with %s after 30 s (state %v)", addr, conn.State())
		}
	}
}

// Read syncs the server with the leader and reads path.
func Read(t testing.TB, conn *zk.Conn, path string) string {
	t.Helper()
	if _, err := conn.Sync(path); err != nil {
		t.Fatalf("sync %s: %v", path, err)
	}
	b, _, err := conn.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	return string(b)
}
