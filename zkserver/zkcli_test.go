package zkserver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// zkCli finds the official Java client's shell script (Debian package zookeeper).
// Missing, the test fails under CI and skips locally.
func zkCli(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("POLEBENCH_ZKCLI"), "/usr/share/zookeeper/bin/zkCli.sh"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if p, err := exec.LookPath("zkCli.sh"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("zkCli.sh not found: CI must install the Debian package zookeeper (and a Java runtime)")
	}
	t.Skip("zkCli.sh not found: install the Debian package zookeeper (or set POLEBENCH_ZKCLI) to test the Java client")
	return ""
}

// runZkCli runs zkCli.sh against addr with args, feeding stdin, and returns what it
// printed.
func runZkCli(t *testing.T, cli, addr, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, append([]string{"-server", addr}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS=-Xshare:auto -XX:TieredStopAtLevel=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && ctx.Err() == nil) {
		// A failed command exits 1; what it printed is checked by the caller.
		t.Fatalf("zkCli.sh %v: %v\n%s", args, err, out)
	}
	// The watcher thread prints the connection event whenever it likes, so it is
	// not a marker for where the commands' output starts.
	text := string(out)
	if !strings.Contains(text, "WatchedEvent state:SyncConnected type:None path:null\n") {
		t.Fatalf("zkCli.sh %v never connected:\n%s", args, text)
	}
	return text
}

// expectLines checks that every pattern matches a line of out, in order.
func expectLines(t *testing.T, out string, patterns ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	i := 0
	for _, p := range patterns {
		re := regexp.MustCompile("^" + p + "$")
		for i < len(lines) && !re.MatchString(lines[i]) {
			i++
		}
		if i == len(lines) {
			t.Fatalf("no line matching %q (in order) in zkCli output:\n%s", p, out)
		}
		i++
	}
}

// TestJavaClient drives the official Java client, zkCli.sh, against the standalone
// server: one-shot commands and a scripted session of every command it maps to the
// operations poled serves.
func TestJavaClient(t *testing.T) {
	t.Parallel() // JVM start-ups
	cli := zkCli(t)
	f := startServer(t, Config{Tick: time.Second}, nil) // zkCli asks for 30s: allowed up to 20 ticks

	out := runZkCli(t, cli, f.addr, "", "create", "/oneshot", "x")
	expectLines(t, out, "Created /oneshot")

	script := strings.Join([]string{
		"create /a hello",
		"get /a",
		"set /a world",
		"get -s /a",
		"ls /",
		"create /a again",
		"create -s /a/q- 1",
		"create -s /a/q- 2",
		"ls -s /a",
		"create -e /eph e",
		"create /eph/child c",
		"set -v 7 /a bad",
		"delete /a",
		"stat /missing",
		"getAcl /a",
		"sync /a",
		"deleteall /a",
		"ls /",
		"quit",
	}, "\n") + "\n"
	out = runZkCli(t, cli, f.addr, script)
	expectLines(t, out,
		"Created /a",
		"hello",
		"world",
		"cZxid = 0x[0-9a-f]+",
		"ctime = .*",
		"mZxid = 0x[0-9a-f]+",
		"mtime = .*",
		"pZxid = 0x[0-9a-f]+",
		"cversion = 0",
		"dataVersion = 1",
		"aclVersion = 0",
		"ephemeralOwner = 0x0",
		"dataLength = 5",
		"numChildren = 0",
		`\[a, oneshot, zookeeper\]`,
		"Node already exists: /a",
		"Created /a/q-0000000000",
		"Created /a/q-0000000001",
		`\[q-0000000000, q-0000000001\]`,
		"cversion = 2",
		"numChildren = 2",
		"Created /eph",
		"Ephemerals cannot have children: /eph/child",
		"version No is not valid : /a",
		"Node not empty: /a",
		"Node does not exist: /missing",
		"'world,'anyone",
		": cdrwa",
		"Sync is OK",
		`\[eph, oneshot, zookeeper\]`,
		"WatchedEvent state:Closed type:None path:null",
	)

	// quit closed the session: its ephemeral is gone.
	out = runZkCli(t, cli, f.addr, "", "stat", "/eph")
	expectLines(t, out, "Node does not exist: /eph")
}
