// Package zkcompat proves poled's ZooKeeper compatibility with a suite nobody here
// wrote: kazoo's own tests (Debian's python3-kazoo, run by python3-pytest). Kazoo's
// harness starts its ensemble itself, `java ... QuorumPeerMain zoo.cfg` per member;
// run against poled, the launcher (java, in this directory: a script named java)
// stands first on PATH and starts poled from the same zoo.cfg and myid. The same command, PATH aside, runs against Debian's
// ZooKeeper, whose results are the baseline (testdata/zookeeper.txt).
package zkcompat

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CIModules is the part of kazoo's suite CI runs on poled: every module that
// exercises the server, but the eventlet and gevent handlers' (test_client again
// under other client I/O loops, 100 s of the 300 s a whole run takes on ZooKeeper).
var CIModules = []string{
	"test_barrier", "test_cache", "test_client", "test_connection", "test_counter", "test_election",
	"test_exceptions", "test_hosts", "test_interrupt", "test_lease", "test_lock", "test_partitioner",
	"test_party", "test_paths", "test_queue", "test_retry", "test_sasl", "test_security",
	"test_threading_handler", "test_utils", "test_watchers",
}

// AllModules is the whole suite.
var AllModules = append(slices.Clone(CIModules), "test_build", "test_eventlet_handler", "test_gevent_handler")

// Exceptions are the tests ZooKeeper passes here and poled does not, and why. A
// test listed here that passes on poled fails this test: the list stays true.
var Exceptions = map[string]string{
	"test_client::TestReconfig::test_add_remove_observer": "dynamic reconfiguration: poled's ensemble is fixed, reconfig answers unimplemented",
	"test_client::TestReconfig::test_bad_input":           "dynamic reconfiguration (ZooKeeper parses the bad input before anything else)",
	"test_client::TestReconfig::test_no_super_auth":       "dynamic reconfiguration (ZooKeeper checks /zookeeper/config's ACL)",
}

// Racy are kazoo's tests whose outcome is a race inside the test itself, and why:
// Compare judges them on neither flavor. The differential tests check what they
// would (zkserver's TestDifferentialSASL).
var Racy = map[string]string{
	// start() waits for the client's live event, which the connection thread sets
	// (CONNECTED) before its SASL exchange and clears on the AuthFailed reply; then it
	// checks connected. A reply that lands between the two makes start() raise its
	// time-out error at once, not AuthFailedError (the test sees AuthFailed only
	// through the request start() makes after the check). poled answers in well
	// under a millisecond and loses the race now and then under load; ZooKeeper,
	// slower, mostly wins it.
	"test_sasl::TestLegacySASLDigestAuthentication::test_invalid_sasl_auth": "the AuthFailed reply races start()'s wait",
	"test_sasl::TestSASLDigestAuthentication::test_invalid_sasl_auth":       "the AuthFailed reply races start()'s wait",
	// It reads, 0.1 s after a create, through another server of the ensemble, which
	// need not have the node yet: NoNode instead of NoAuth (it failed on ZooKeeper in
	// the baseline's whole run).
	"test_sasl::TestLegacySASLDigestAuthentication::test_connect_sasl_auth": "reads after 0.1 s through another server, which may lag",
}

// Compare lists every test that passes on ZooKeeper (baseline) and not in got, every
// exception that no longer is one (onPoled), every test the baseline does not know,
// and every test of modules the baseline has that got lacks.
func Compare(baseline, got Results, modules []string, onPoled bool) []string {
	var problems []string
	for _, id := range slices.Sorted(maps.Keys(got)) {
		want, known := baseline[id]
		_, excused := Exceptions[id]
		switch {
		case !known:
			problems = append(problems, fmt.Sprintf("%s: %s, and not run on ZooKeeper (a new kazoo? rerun the baseline)", id, got[id]))
		case Racy[id] != "":
			// Its outcome is the host's scheduling, on either flavor: not judged.
		case want == Passed && got[id] != Passed && !(onPoled && excused):
			problems = append(problems, fmt.Sprintf("%s: passes on ZooKeeper, %s here", id, got[id]))
		case onPoled && excused && got[id] == Passed:
			problems = append(problems, fmt.Sprintf("%s: passes on poled now; drop it from the exceptions (%s)", id, Exceptions[id]))
		}
	}
	for id, res := range baseline {
		if _, ran := got[id]; !ran && slices.Contains(modules, Module(id)) && res != Skipped {
			problems = append(problems, fmt.Sprintf("%s: in the baseline, not run", id))
		}
	}
	return problems
}

// Python is Debian's interpreter, the one python3-kazoo installs into (a PATH
// python3 may be another without kazoo).
const Python = "/usr/bin/python3"

// ZooKeeperClasspath is what kazoo's harness runs ZooKeeper with: Debian's jar
// (whose manifest names its dependencies) and a console log binding.
const ZooKeeperClasspath = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"

// Version is the ZooKeeper version kazoo is told it runs against (its tests pick
// 3.5+ behaviour by it): Debian's package, and what poled answers envi with.
const Version = "3.8.0"

// Result is one test's outcome.
type Result string

const (
	Passed  Result = "passed"
	Failed  Result = "failed"
	Skipped Result = "skipped"
)

// Results maps a test id (module::Class::test) to its outcome.
type Results map[string]Result

// Available reports why kazoo's suite cannot run here, or nil.
func Available() error {
	if _, err := os.Stat(Python); err != nil {
		return fmt.Errorf("%s missing: install python3-kazoo python3-pytest python3-mock python3-objgraph python3-pure-sasl (make deps)", Python)
	}
	out, err := exec.Command(Python, "-c", "import kazoo.tests, kazoo.testing, pytest, mock, objgraph, puresasl").CombinedOutput()
	if err != nil {
		return fmt.Errorf("kazoo's test suite cannot be imported (install python3-kazoo python3-pytest python3-mock python3-objgraph python3-pure-sasl: make deps): %s", bytes.TrimSpace(out))
	}
	return nil
}

// Run is one run of kazoo's suite.
type Run struct {
	Modules []string // kazoo.tests modules, e.g. "test_client"
	Size    int      // ensemble size (ZOOKEEPER_CLUSTER_SIZE)
	// Launcher is a directory put first on PATH: one Launcher wrote runs the suite
	// on poled; empty runs it on ZooKeeper.
	Launcher string
	Dir      string    // scratch: the JUnit report, pytest's output
	Log      io.Writer // pytest's output as it runs; nil discards it
}

//go:embed java
var javaLauncher []byte

// Launcher writes into dir the java launcher and a link named poled to the poled
// binary: dir first on PATH, whatever runs QuorumPeerMain runs poled.
func Launcher(dir, poled string) error {
	if err := os.WriteFile(filepath.Join(dir, "java"), javaLauncher, 0o755); err != nil {
		return fmt.Errorf("zkcompat: %w", err)
	}
	abs, err := filepath.Abs(poled)
	if err != nil {
		return fmt.Errorf("zkcompat: %w", err)
	}
	if err := os.Symlink(abs, filepath.Join(dir, "poled")); err != nil {
		return fmt.Errorf("zkcompat: %w", err)
	}
	return nil
}

// Do runs the suite and returns every test's outcome. A failing test is a result, not
// an error; the error is for a run that did not report (pytest crashed, no report).
func (r Run) Do(ctx context.Context) (Results, error) {
	offset, err := portOffset(r.Size)
	if err != nil {
		return nil, err
	}
	// pytest names a test's class after its rootdir: kazoo's tests directory makes it
	// "test_client.TestClient" however the modules are chosen.
	where, err := exec.CommandContext(ctx, Python, "-c", "import os, kazoo.tests; print(os.path.dirname(kazoo.tests.__file__))").Output()
	if err != nil {
		return nil, fmt.Errorf("zkcompat: where kazoo's tests are: %w", err)
	}
	report := filepath.Join(r.Dir, "junit.xml")
	args := []string{"-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs", "--junitxml=" + report,
		"--rootdir=" + string(bytes.TrimSpace(where)), "--pyargs"}
	for _, m := range r.Modules {
		args = append(args, "kazoo.tests."+m)
	}
	cmd := exec.CommandContext(ctx, Python, args...)
	cmd.Dir = r.Dir
	env := append(os.Environ(), "ZOOKEEPER_CLASSPATH="+ZooKeeperClasspath, "ZOOKEEPER_VERSION="+Version,
		"ZOOKEEPER_PORT_OFFSET="+strconv.Itoa(offset), "ZOOKEEPER_CLUSTER_SIZE="+strconv.Itoa(r.Size))
	if r.Launcher != "" {
		env = append(env, "PATH="+r.Launcher+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = r.Log, r.Log
	runErr := cmd.Run()
	b, err := os.ReadFile(report)
	if err != nil {
		return nil, fmt.Errorf("kazoo's suite wrote no report (pytest: %v): %w", runErr, err)
	}
	return ParseJUnit(b)
}

// portOffset finds a ZOOKEEPER_PORT_OFFSET whose ports (four per member, members ten
// apart, as kazoo's harness lays them out) are free now, below the kernel's
// ephemeral range so no outgoing connection takes one first.
func portOffset(size int) (int, error) {
	for range 200 {
		base := 10000 + 10*rand.IntN(2000) // 10000..29990, under Linux's 32768
		if allFree(base, size) {
			return base, nil
		}
	}
	return 0, errors.New("zkcompat: no free port range for kazoo's ensemble")
}

func allFree(base, size int) bool {
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for i := range size {
		for p := range 4 {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+10*i+p)))
			if err != nil {
				return false
			}
			lns = append(lns, l)
		}
	}
	return true
}

type junitCase struct {
	Class   string    `xml:"classname,attr"`
	Name    string    `xml:"name,attr"`
	Failure *struct{} `xml:"failure"`
	Error   *struct{} `xml:"error"`
	Skipped *struct{} `xml:"skipped"`
}

// ParseJUnit reads pytest's JUnit XML report.
func ParseJUnit(b []byte) (Results, error) {
	var doc struct {
		Suites []struct {
			Cases []junitCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("zkcompat: JUnit report: %w", err)
	}
	out := Results{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			res := Passed
			switch {
			case c.Failure != nil || c.Error != nil:
				res = Failed
			case c.Skipped != nil:
				res = Skipped
			}
			// classname is "test_client.TestClient" (module.Class); a failing
			// fixture may report a second entry for the same test: failed wins.
			id := strings.Replace(c.Class, ".", "::", 1) + "::" + c.Name
			if prev, ok := out[id]; !ok || prev != Failed {
				out[id] = res
			}
		}
	}
	return out, nil
}

// Counts is a row of the results table.
func (r Results) Counts() (passed, failed, skipped int) {
	for _, v := range r {
		switch v {
		case Passed:
			passed++
		case Failed:
			failed++
		case Skipped:
			skipped++
		}
	}
	return
}

// Module is the module a test id belongs to.
func Module(id string) string { m, _, _ := strings.Cut(id, "::"); return m }

// Format writes results as "id result" lines, sorted: the baseline file's format.
func (r Results) Format() []byte {
	var b bytes.Buffer
	for _, id := range slices.Sorted(maps.Keys(r)) {
		fmt.Fprintf(&b, "%s %s\n", id, r[id])
	}
	return b.Bytes()
}

// ParseBaseline reads what Format wrote; errors name the file and line.
func ParseBaseline(name string, b []byte) (Results, error) {
	out := Results{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, res, ok := strings.Cut(line, " ")
		switch r := Result(res); {
		case !ok || (r != Passed && r != Failed && r != Skipped):
			return nil, fmt.Errorf("%s:%d: want \"module::Class::test passed|failed|skipped\", got %q", name, n, line)
		default:
			out[id] = r
		}
	}
	return out, sc.Err()
}
