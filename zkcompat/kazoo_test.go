package zkcompat

import (
	"context"
	"flag"
	"io"
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
	modules := CIModules
	if *all {
		modules = AllModules
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
	for _, problem := range Compare(baseline, got, modules, *flavor == "poled") {
		t.Error(problem)
	}
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

// launcher builds poled and writes the launcher beside it: that directory first
// on PATH, kazoo's harness starts poled.
func launcher(t *testing.T) string {
	dir := t.TempDir()
	poled := filepath.Join(dir, "poled-bin")
	build := exec.Command("go", "build", "-o", poled, "github.com/polebench/polebench/cmd/poled")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build poled: %v\n%s", err, out)
	}
	if err := Launcher(dir, poled); err != nil {
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
		"m::C::new: passed, and not run on ZooKeeper (a new kazoo? rerun the baseline)",
		"m::C::ok: passes on ZooKeeper, failed here",
		"m::C::gone: in the baseline, not run",
	}
	if p := Compare(base, got, []string{"m", "test_client"}, true); !slices.Equal(p, want) {
		t.Errorf("compare:\n%s\nwant:\n%s", strings.Join(p, "\n"), strings.Join(want, "\n"))
	}
	racy := "test_sasl::TestSASLDigestAuthentication::test_invalid_sasl_auth"
	if p := Compare(Results{racy: Passed}, Results{racy: Failed}, []string{"test_sasl"}, true); len(p) != 0 {
		t.Errorf("a racy test judged: %v", p)
	}
	got["test_client::TestReconfig::test_bad_input"] = Passed
	if p := Compare(base, got, []string{"test_client"}, true); !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, "drop it from the exceptions") }) {
		t.Errorf("a passing exception went unnoticed: %v", p)
	}
}
