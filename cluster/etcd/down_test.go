package etcd

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/cluster/internal/procs"
)

// TestDownKillsLeftover: a real etcd a crashed harness left (its token names the
// label) is killed by Down of that label and named; Down of another label leaves it.
func TestDownKillsLeftover(t *testing.T) {
	require(t)
	label := fmt.Sprintf("dt%x", time.Now().UnixNano()&0xffffff)
	client, peer := freeAddr(t), freeAddr(t)
	cmd := exec.Command(Binary, "--name", "p1", "--data-dir", filepath.Join(t.TempDir(), "p1"),
		"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", "http://"+peer, "--initial-advertise-peer-urls", "http://"+peer,
		"--initial-cluster", "p1=http://"+peer, "--initial-cluster-token", tokenPrefix+label)
	p, err := procs.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	if left, err := Down(label + "x"); err != nil || len(left) > 0 {
		t.Fatalf("Down of another label: %v (%v)", left, err)
	}
	left, err := Down(label)
	want := fmt.Sprintf("etcd process %d (%s)", p.Pid(), label)
	if err != nil || len(left) != 1 || left[0] != want {
		t.Fatalf("Down(%s) = %v (%v), want [%s]", label, left, err, want)
	}
	<-p.Done()
	if !strings.Contains(p.ExitString(), "kill") {
		t.Errorf("etcd ended %s, want killed", p.ExitString())
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
