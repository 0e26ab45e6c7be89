package zkcompat

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	flavor  = flag.String("kazoo.flavor", "poled", "what kazoo's suite runs against: poled, or zookeeper (the baseline, nightly)")
	all     = flag.Bool("kazoo.all", false, "every module of kazoo's suite, not only CI's")
	size    = flag.Int("kazoo.size", 3, "ensemble size")
	update  = flag.Bool("update", false, "with -kazoo.flavor=zookeeper -kazoo.all: rewrite testdata/zookeeper.txt")
	verbose = flag.Bool("kazoo.v", false, "stream pytest's output")
	only    = flag.String("kazoo.modules", "", "comma-separated modules to run instead (e.g. test_sasl)")
)

// ciModules is the part of kazoo's suite CI runs on poled: every module that
// exercises the server, but the eventlet and gevent handlers' (test_client again
// under other client I/O loops, 100 s of the 300 s a whole run takes on ZooKeeper).
var ciModules = []string{
	"test_barrier", "test_cache", "test_client", "test_connection", "test_counter", "test_election",
	"test_exceptions", "test_hosts", "test_interrupt", "test_lease", "test_lock", "test_partitioner",
	"test_party", "test_paths", "test_queue", "test_retry", "test_sasl", "test_security",
	"test_threading_handler", "test_utils", "test_watchers",
}

var allModules = append(slices.Clone(ciModules), "test_build", "test_eventlet_handler", "test_gevent_handler")

// exceptions are the tests ZooKeeper passes here and poled does not, and why. A
// test listed here that passes on poled fails this test: the list stays true.
var exceptions = map[string]string{
	"test_client::TestReconfig::test_add_remove_observer": "dynamic reconfiguration: poled's ensemble is fixed, reconfig answers unimplemented",
	"test_client::TestReconfig::test_bad_input":           "dynamic reconfiguration (ZooKeeper parses the bad input before anything else)",
	"test_client::TestReconfig::test_no_super_auth":       "dynamic reconfiguration (ZooKeeper checks /zookeeper/config's ACL)",
}

// TestKazoo runs kazoo's own suite against poled (or, -kazoo.flavor=zookeeper,
// against Debian's ZooKeeper) and fails when a test that passes on ZooKeeper
// (testdata/zookeeper.txt, from a whole run on ZooKeeper) fails here, exceptions
// aside.
func TestKazoo(t *testing.T) {
	if err := Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if _, err := exec.LookPath("java"); err != nil && *flavor == "zookeeper" {
		t.Fatalf("java: %v (install the Debian package zookeeper)", err)
	}
	modules := ciModules
	if *all {
		modules = allModules
	}
	if *only != "" {
		modules = strings.Split(*only, ",")
	}
	run := Run{Modules: modules, Size: *size, Dir: t.TempDir(), Log: io.Discard}
	if *verbose {
		run.Log = os.Stderr
	}
	switch *flavor {
	case "poled":
		run.Launcher = launcher(t)
	case "zookeeper":
	default:
		t.Fatalf("-kazoo.flavor %q: want poled or zookeeper", *flavor)
	}
	baseline := readBaseline(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	got, err := run.Do(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, f, s := got.Counts()
	t.Logf("kazoo on %s (%d servers, %d modules): %d passed, %d failed, %d skipped in %v",
		*flavor, *size, len(modules), p, f, s, time.Since(start).Round(time.Second))
	if *update {
		if *flavor != "zookeeper" || !*all {
			t.Fatal("-update rewrites ZooKeeper's baseline: with -kazoo.flavor=zookeeper -kazoo.all only")
		}
		if err := os.WriteFile(baselinePath, append([]byte(baselineHeader), got.Format()...), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, problem := range compare(baseline, got, modules, *flavor == "poled") {
		t.Error(problem)
	}
}

// compare lists every test that passes on ZooKeeper and not here, every exception
// that no longer is one, and every test the baseline does not know.
func compare(baseline, got Results, modules []string, onPoled bool) []string {
	var problems []string
	for _, id := range slices.Sorted(maps.Keys(got)) {
		want, known := baseline[id]
		_, excused := exceptions[id]
		switch {
		case !known:
			problems = append(problems, fmt.Sprintf("%s: %s, and not in %s (a new kazoo? rerun the baseline)", id, got[id], baselinePath))
		case want == Passed && got[id] != Passed && !(onPoled && excused):
			problems = append(problems, fmt.Sprintf("%s: passes on ZooKeeper, %s here", id, got[id]))
		case onPoled && excused && got[id] == Passed:
			problems = append(problems, fmt.Sprintf("%s: passes on poled now; drop it from the exceptions (%s)", id, exceptions[id]))
		}
	}
	for id, res := range baseline {
		if _, ran := got[id]; !ran && slices.Contains(modules, Module(id)) && res != Skipped {
			problems = append(problems, fmt.Sprintf("%s: in the baseline, not run", id))
		}
	}
	return problems
}

const baselinePath = "testdata/zookeeper.txt"

const baselineHeader = `# kazoo 2.8.0's suite on Debian's ZooKeeper 3.8.0, 3 servers, every module:
#   go test ./zkcompat -run TestKazoo -kazoo.flavor=zookeeper -kazoo.all -update
`

func readBaseline(t *testing.T) Results {
	b, err := os.ReadFile(baselinePath)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseBaseline(baselinePath, b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// launcher builds poled into a directory beside scripts/zkcompat/java: that
// directory first on PATH, kazoo's harness starts poled.
func launcher(t *testing.T) string {
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "poled"), "github.com/polebench/polebench/cmd/poled")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build poled: %v\n%s", err, out)
	}
	script, err := os.ReadFile("../scripts/zkcompat/java")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "java"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestParseBaselineErrors(t *testing.T) {
	for _, c := range []struct{ in, err string }{
		{"a::B::c passed\n", ""},
		{"# comment\n\na::B::c skipped\n", ""},
		{"a::B::c passed\na::B::d maybe\n", "x.txt:2:"},
		{"lonely\n", "x.txt:1:"},
	} {
		_, err := ParseBaseline("x.txt", []byte(c.in))
		if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: %v, want %q", c.in, err, c.err)
		}
	}
}

func TestCompare(t *testing.T) {
	base := Results{"m::C::ok": Passed, "m::C::zkfails": Failed, "m::C::gone": Passed, "test_client::TestReconfig::test_bad_input": Passed}
	got := Results{"m::C::ok": Failed, "m::C::zkfails": Failed, "m::C::new": Passed, "test_client::TestReconfig::test_bad_input": Failed}
	want := []string{
		"m::C::new: passed, and not in testdata/zookeeper.txt (a new kazoo? rerun the baseline)",
		"m::C::ok: passes on ZooKeeper, failed here",
		"m::C::gone: in the baseline, not run",
	}
	if p := compare(base, got, []string{"m", "test_client"}, true); !slices.Equal(p, want) {
		t.Errorf("compare:\n%s\nwant:\n%s", strings.Join(p, "\n"), strings.Join(want, "\n"))
	}
	got["test_client::TestReconfig::test_bad_input"] = Passed
	if p := compare(base, got, []string{"test_client"}, true); !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, "drop it from the exceptions") }) {
		t.Errorf("a passing exception went unnoticed: %v", p)
	}
}
