// Package zkcompat proves poled's ZooKeeper compatibility with a suite nobody here
// wrote: kazoo's own tests (Debian's python3-kazoo, run by python3-pytest). Kazoo's
// harness starts its ensemble itself, `java ... QuorumPeerMain zoo.cfg` per member;
// run against poled, scripts/zkcompat/java stands first on PATH and starts poled from
// the same zoo.cfg and myid. The same command, PATH aside, runs against Debian's
// ZooKeeper, whose results are the baseline (testdata/zookeeper.txt).
package zkcompat

import (
	"bufio"
	"bytes"
	"context"
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
	// Launcher is a directory put first on PATH: one holding scripts/zkcompat/java
	// and poled runs the suite on poled; empty runs it on ZooKeeper.
	Launcher string
	Dir      string    // scratch: the JUnit report, pytest's output
	Log      io.Writer // pytest's output as it runs; nil discards it
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
