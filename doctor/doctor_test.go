package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/hiccup"
)

func TestParseClockSource(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{"tsc\n", "tsc", false},
		{"  kvm-clock  \n", "kvm-clock", false},
		{"", "", true},
		{"\n", "", true},
		{"tsc hpet\n", "", true},
	} {
		got, err := parseClockSource([]byte(tc.in))
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("parseClockSource(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestClockInfo(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("current_clocksource", "hpet\n")
	write("available_clocksource", "tsc hpet acpi_pm \n")
	c := clockInfo(dir)
	if c.Source != "hpet" || c.VDSO || len(c.Available) != 3 || c.Error != "" || !strings.Contains(c.Note, "system call") || !strings.Contains(c.Note, "tsc") {
		t.Errorf("hpet with tsc available: %+v", c)
	}
	if c.NowNS <= 0 {
		t.Errorf("time.Now cost %v, want it measured", c.NowNS)
	}
	write("current_clocksource", "tsc\n")
	if c := clockInfo(dir); c.Source != "tsc" || !c.VDSO {
		t.Errorf("tsc: %+v", c)
	}
	if c := clockInfo(filepath.Join(dir, "missing")); c.Error == "" || c.Source != "" {
		t.Errorf("no sysfs: %+v, want an error", c)
	}
}

func TestCPUModelAndPomVersion(t *testing.T) {
	if got := cpuModel([]byte("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD  EPYC 7B13\nflags\t: fpu\n")); got != "AMD EPYC 7B13" {
		t.Errorf("cpuModel = %q", got)
	}
	if got := cpuModel([]byte("processor\t: 0\n")); got != "" {
		t.Errorf("cpuModel without a model = %q", got)
	}
	if got := pomVersion([]byte("artifactId=zookeeper\ngroupId=org.apache.zookeeper\nversion=3.8.0\n")); got != "3.8.0" {
		t.Errorf("pomVersion = %q", got)
	}
	if got := jarVersion(filepath.Join(t.TempDir(), "none.jar")); got != "" {
		t.Errorf("jarVersion of no jar = %q", got)
	}
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]string{"local/poled": "local/poled", "local": "local/poled", "netns/zookeeper": "netns/zookeeper", " docker/poled ": "docker/poled"} {
		got, err := ParseTarget(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseTarget(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"sim", "docker/zookeeper", "moon/poled", "local/raft", ""} {
		if _, err := ParseTarget(in); err == nil {
			t.Errorf("ParseTarget(%q): no error", in)
		}
	}
}

func TestIdleOf(t *testing.T) {
	m := hiccup.New(time.Millisecond, time.Millisecond)
	base := time.Now().UnixNano()
	for i, late := range []time.Duration{100 * time.Microsecond, 200 * time.Microsecond, 2 * time.Millisecond, 6 * time.Millisecond} {
		m.Record(base+int64(i)*int64(time.Millisecond), late)
	}
	id := idleOf(m.Report("doctor"), []hiccup.HostSample{{CPUBusyPct: 40, CPUSomePct: 10}, {CPUBusyPct: 60, CPUSomePct: 30}})
	if id.Wakes != 4 || id.Stalls != 2 || id.LongStalls != 1 {
		t.Errorf("wakes %d, stalls %d, long %d; want 4, 2, 1", id.Wakes, id.Stalls, id.LongStalls)
	}
	if id.MaxMS < 5.9 || id.MaxMS > 6.1 {
		t.Errorf("max %v ms, want 6", id.MaxMS)
	}
	if id.CPUBusyPct == nil || *id.CPUBusyPct != 50 || id.CPUSomePct == nil || *id.CPUSomePct != 20 {
		t.Errorf("CPU %v, %v; want 50, 20", id.CPUBusyPct, id.CPUSomePct)
	}
}

func TestLoopbackMeasures(t *testing.T) {
	lb, err := loopback(context.Background(), 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// The order of the statistics only: what the host's loopback costs is not the test's.
	if lb.RoundTrips == 0 || lb.MinUS > lb.MedianUS || lb.MedianUS > lb.P99US {
		t.Errorf("loopback %+v", lb)
	}
}

func ptr(v float64) *float64 { return &v }

func TestLadder(t *testing.T) {
	pt := func(k float64, verdict string) Point {
		return Point{Target: "local/poled", Multiple: k, Rate: 1000 * k, Verdict: verdict, Reasons: []string{"why"},
			DCs: []DC{{Name: "D1", MeanMS: 22, ModelMS: ptr(20.9), SimMS: ptr(21.5)}}}
	}
	// Trusted at 1x and 2x, degraded at 4x.
	l := &ladder{em: &Emulation{Target: "local/poled"}}
	l.record(pt(1, "trusted"), true, false)
	l.record(pt(2, "trusted"), false, false)
	l.record(pt(4, "degraded"), false, true)
	e := l.em
	if !l.done || !e.Calibrated || e.OverheadAt != 1000 || e.TrustedUpTo != 2000 || e.TrustedMultiple != 2 || e.HighestRungTried || e.Stop != "degraded at 4000 req/s (4x)" {
		t.Errorf("trusted to 2x: %+v", e)
	}
	near := func(v *float64, want float64) bool { return v != nil && *v > want-1e-9 && *v < want+1e-9 }
	if len(e.Overhead) != 1 || !near(e.Overhead[0].OverSimMS, 0.5) || !near(e.Overhead[0].OverModelMS, 1.1) {
		t.Errorf("overhead %+v", e.Overhead)
	}
	// Trusted at every rung.
	l = &ladder{em: &Emulation{}}
	l.record(pt(1, "trusted"), true, false)
	l.record(pt(2, "trusted"), false, true)
	if !l.done || !l.em.HighestRungTried || l.em.TrustedUpTo != 2000 || l.em.Stop != "" {
		t.Errorf("trusted throughout: %+v", l.em)
	}
	// Not trusted at the first rung; then a failed first run.
	l = &ladder{em: &Emulation{}}
	l.record(pt(1, "untrusted"), true, false)
	if !l.done || l.em.TrustedUpTo != 0 || !l.em.Calibrated {
		t.Errorf("untrusted at 1x: %+v", l.em)
	}
	l = &ladder{em: &Emulation{}}
	l.record(Point{Multiple: 1, Rate: 1000, Error: "start cluster: boom"}, true, false)
	if !l.done || l.em.Calibrated || !strings.Contains(l.em.NotCalibratedWhy, "boom") {
		t.Errorf("failed run: %+v", l.em)
	}
}

// sample is a report with every section, as a calibration on a host with Docker but
// without Java would leave it.
func sample() *Report {
	return &Report{
		Started: time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC), WallS: 97.4, BudgetS: 105,
		Host:     Host{Cores: 2, GOMAXPROCS: 2, CPU: "AMD EPYC", Kernel: "Linux 6.1", Root: true},
		Clock:    Clock{Source: "tsc", Available: []string{"tsc", "kvm-clock"}, VDSO: true, NowNS: 21, Note: "read in user space (vDSO)"},
		Idle:     &Idle{Seconds: 3, Wakes: 2900, P50MS: 0.06, P99MS: 0.4, MaxMS: 3.2, Stalls: 12, CPUBusyPct: ptr(40)},
		Loopback: &Loopback{RoundTrips: 20000, Bytes: 64, MinUS: 15, MedianUS: 18, P99US: 40},
		Netem:    Netem{Status: No, Detail: "kernel lacks sch_netem"},
		Docker:   Docker{Reachable: true, Host: "unix:///var/run/docker.sock", Version: "28.5.2", Swarm: "inactive"},
		Java:     Java{ZooKeeperJar: "/usr/share/java/zookeeper.jar", Detail: "flavor zookeeper: java not found"},
		Flavors:  []Installed{{Flavor: "etcd", Version: "3.4.23 at /usr/bin/etcd"}},
		Backends: []Backend{{Target: "local/poled", Runs: true}, {Target: "local/zookeeper", Why: "flavor zookeeper: java not found"}},
		Calibration: &Calibration{Spec: "two-dc", DurationS: 10, WarmupS: 2, BaseRate: 1000, ZooKeeperWarmUpS: 10, Points: []Point{
			{Target: "sim", Multiple: 1, Rate: 1000, DCs: []DC{{Name: "D1", MeanMS: 21.5, P99MS: 22.4, ModelMS: ptr(20.9)}, {Name: "D2", MeanMS: 0.8, P99MS: 0.9, ModelMS: ptr(0.2)}}},
			{Target: "local/poled", Multiple: 1, Rate: 1000, Verdict: "trusted", Moved: "mean 0.05 ms (D2 of 1.20), p99 0.80 ms (D2 of 3.10)", StalledPct: 0.1, StallMaxMS: 6.3, SendLagP99MS: 1.1,
				DCs: []DC{{Name: "D1", MeanMS: 22.3, P99MS: 25.1, ModelMS: ptr(20.9), SimMS: ptr(21.5)}, {Name: "D2", MeanMS: 1.2, P99MS: 3.1, ModelMS: ptr(0.2), SimMS: ptr(0.8)}}},
			{Target: "local/poled", Multiple: 2, Rate: 2000, Verdict: "degraded", Reasons: []string{"the host's stalls moved D2's p99 by 6.00 ms of 9.00 (degraded above 5.00 ms: the larger of 5 ms and 25 %)"},
				DCs: []DC{{Name: "D1", MeanMS: 23.0, P99MS: 30.0}, {Name: "D2", MeanMS: 1.9, P99MS: 9.0}}},
		}},
		Emulates: []Emulation{
			{Target: "local/poled", Calibrated: true, OverheadAt: 1000, TrustedUpTo: 1000, TrustedMultiple: 1, Stop: "degraded at 2000 req/s (2x)",
				Overhead: []Overhead{{DC: "D1", OverSimMS: ptr(0.8), OverModelMS: ptr(1.4)}, {DC: "D2", OverSimMS: ptr(0.4), OverModelMS: ptr(1.0)}}},
			{Target: "local/zookeeper", NotCalibratedWhy: "cannot run here: flavor zookeeper: java not found"},
		},
		Unchecked: []string{"java/ZooKeeper: flavor zookeeper: java not found", "calibration of local/zookeeper: cannot run here: flavor zookeeper: java not found"},
	}
}

func TestRender(t *testing.T) {
	var b bytes.Buffer
	if err := Render(&b, sample()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"polebench doctor: 2026-11-27 20:00:00 UTC, 97.4 s\n",
		"cores        2 (GOMAXPROCS 2), AMD EPYC, Linux 6.1\n",
		"clock source tsc (available: tsc kvm-clock): read in user space (vDSO); time.Now 21 ns\n",
		"idle hiccups 3.0 s of 1 ms sleeps, late by p50 0.06, p99 0.40, max 3.20 ms; 12 stalls over 1 ms, 0 over 5 ms; CPU 40 % busy\n",
		"loopback RTT TCP ping-pong of 64 B on 127.0.0.1: median 18 µs, p99 40 µs, min 15 µs (20000 round trips)\n",
		"kernel netem no: kernel lacks sch_netem\n",
		"docker       engine 28.5.2 at unix:///var/run/docker.sock\n",
		"swarm        inactive (docker swarm init makes one)\n",
		"java         could not check: flavor zookeeper: java not found\n",
		"etcd         3.4.23 at /usr/bin/etcd\n",
		"backends     run here: local/poled\n",
		"             not local/zookeeper: flavor zookeeper: java not found\n",
		"local/poled      1000 (1x)     D1      22.3     25.1     21.5     20.9      +0.8  trusted: the host moved mean 0.05 ms (D2 of 1.20), p99 0.80 ms (D2 of 3.10); longest stall 6.3 ms; send lag p99 1.1 ms\n",
		"                               D2       1.2      3.1      0.8      0.2      +0.4  \n",
		"  local/poled      at 1000 req/s D1 +0.8 ms (+1.4), D2 +0.4 ms (+1.0); trusted up to 1000 req/s (1x); degraded at 2000 req/s (2x)\n",
		"  local/zookeeper  not calibrated: cannot run here: flavor zookeeper: java not found\n",
		"could not check: java/ZooKeeper: flavor zookeeper: java not found\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q; it is:\n%s", want, out)
		}
	}
	if strings.Contains(out, "interrupted") {
		t.Errorf("an uninterrupted report says interrupted:\n%s", out)
	}
	r := sample()
	r.Interrupted = true
	b.Reset()
	Render(&b, r)
	if !strings.Contains(b.String(), ", interrupted\n") {
		t.Errorf("an interrupted report does not say so:\n%s", b.String())
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, sample()); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("%v in\n%s", err, b.String())
	}
	if back.Emulates[0].TrustedUpTo != 1000 || len(back.Calibration.Points) != 3 || len(back.Unchecked) != 2 || back.Clock.Source != "tsc" {
		t.Errorf("round trip lost something: %+v", back)
	}
}

func TestInterruptedBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := Run(ctx, Options{netemProbe: func(context.Context) error { t.Error("probed netem after an interrupt"); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted || r.Calibration != nil || r.Host.Cores == 0 || !strings.Contains(strings.Join(r.Unchecked, "\n"), "idle hiccups: interrupted") {
		t.Errorf("interrupted report %+v", r)
	}
	var b bytes.Buffer
	if err := Render(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "docker       could not check: interrupted\n") {
		t.Errorf("interrupted report:\n%s", b.String())
	}
}

// TestWithoutDockerAndJava runs the command as the CLI does on a host where the Docker
// client finds no engine and PATH no java (nor etcd), with a short calibration on the local
// backend: it must succeed (exit 0) and say what it could not check. It judges the
// code, never the host: no latency is compared with anything.
func TestWithoutDockerAndJava(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 2 s calibration")
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent")
	t.Setenv("PATH", t.TempDir())
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	cfg := Flags(fs)
	if err := fs.Parse([]string{"--duration", "2s", "--warmup", "500ms", "--rungs", "1", "--budget", "60s"}); err != nil {
		t.Fatal(err)
	}
	cfg.Idle, cfg.Loopback = 200*time.Millisecond, 100*time.Millisecond
	// No namespace on a shared test machine: the probe is netem's, tested there.
	cfg.netemProbe = func(context.Context) error { return nil }
	var stdout, stderr bytes.Buffer
	if err := Command(context.Background(), cfg, &stdout, &stderr); err != nil {
		t.Fatalf("doctor failed (a non-zero exit): %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"docker       could not check: docker engine unreachable at unix:///nonexistent",
		"swarm        could not check: no Docker engine to ask",
		"java         could not check: flavor zookeeper: java not found",
		"etcd         could not check: flavor etcd: no etcd binary on PATH: install the Debian package etcd-server",
		"not docker/poled: no Docker engine answers",
		"not local/etcd: flavor etcd: no etcd binary on PATH",
		"could not check: etcd: flavor etcd: no etcd binary on PATH",
		"not local/zookeeper: flavor zookeeper: java not found",
		"could not check: docker: docker engine unreachable at unix:///nonexistent",
		"could not check: swarm: no Docker engine to ask",
		"could not check: java/ZooKeeper: flavor zookeeper: java not found",
		"could not check: calibration of local/zookeeper: cannot run here: flavor zookeeper: java not found",
		"  local/zookeeper  not calibrated: cannot run here: flavor zookeeper: java not found",
		"\nsim              1000 (1x)     D1",
		"\nlocal/poled      1000 (1x)     D1",
		"\n  local/poled      at 1000 req/s D1 ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q; it is:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr.String(), "doctor: calibration 2: local/poled at 1000 req/s (1x), 2s") {
		t.Errorf("no progress line for the calibration run; stderr:\n%s", stderr.String())
	}
	// Its runs' directories go with it.
	if left, _ := filepath.Glob(filepath.Join(tmp, "polebench-doctor-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestBudget: a calibration run that would end after the budget does not start, and
// the report says which rungs were not run and why.
func TestBudget(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent")
	r, err := Run(context.Background(), Options{Idle: 20 * time.Millisecond, Loopback: 20 * time.Millisecond,
		Budget: time.Second, Duration: 3 * time.Second, Targets: []Target{{"local", "poled"}},
		netemProbe: func(context.Context) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if r.Calibration == nil || len(r.Calibration.Points) != 0 {
		t.Fatalf("calibration %+v, want no run", r.Calibration)
	}
	e := r.Emulates[0]
	if e.Target != "local/poled" || e.Calibrated || !strings.Contains(e.Stop, "1000 req/s (1x), 2000 req/s (2x), 4000 req/s (4x) not run: each takes about 8s, over the 1s budget") {
		t.Errorf("emulation %+v", e)
	}
	var b bytes.Buffer
	Render(&b, r)
	if !strings.Contains(b.String(), "  local/poled      not calibrated: 1000 req/s (1x), 2000 req/s (2x), 4000 req/s (4x) not run:") {
		t.Errorf("report:\n%s", b.String())
	}
}

func TestBadSettings(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent")
	r, err := Run(context.Background(), Options{Idle: 20 * time.Millisecond, Loopback: 20 * time.Millisecond,
		Duration: 2 * time.Second, Warmup: 2 * time.Second, netemProbe: func(context.Context) error { return nil }})
	if err != nil {
		t.Fatalf("bad settings are the report's, not an error: %v", err)
	}
	if !strings.Contains(strings.Join(r.Unchecked, "\n"), "calibration: override warmup=2s") {
		t.Errorf("could not check: %q", r.Unchecked)
	}
}

func TestCommandJSON(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent")
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	cfg := Flags(fs)
	if err := fs.Parse([]string{"--json", "--no-calibration"}); err != nil {
		t.Fatal(err)
	}
	cfg.Idle, cfg.Loopback = 20*time.Millisecond, 20*time.Millisecond
	cfg.netemProbe = func(context.Context) error { return nil }
	var stdout, stderr bytes.Buffer
	if err := Command(context.Background(), cfg, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("stdout is not the report as JSON: %v\n%s", err, stdout.String())
	}
	if r.Docker.Reachable || r.Calibration != nil || len(r.Backends) == 0 || r.Host.Cores == 0 {
		t.Errorf("report %+v", r)
	}
	if !strings.Contains(stderr.String(), "doctor: docker and swarm") {
		t.Errorf("progress not on stderr: %q", stderr.String())
	}
}

func TestFlags(t *testing.T) {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	cfg := Flags(fs)
	if err := fs.Parse([]string{"--calibrate", "local/poled,netns", "--rungs", "1,3"}); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Targets) != 2 || cfg.Targets[1].String() != "netns/poled" || len(cfg.Rungs) != 2 || cfg.Rungs[1] != 3 {
		t.Errorf("config %+v", cfg)
	}
	for _, bad := range [][]string{{"--calibrate", "sim"}, {"--rungs", "1,x"}, {"--rungs", "0"}, {"--calibrate", "docker/zookeeper"}} {
		fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
		fs.SetOutput(new(bytes.Buffer))
		Flags(fs)
		if err := fs.Parse(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// TestInstalled: the flavors that register a Version are each a line, etcd's with the
// version of the binary on PATH and its path; none found is why, not an empty line.
func TestInstalled(t *testing.T) {
	byFlavor := func() map[string]Installed {
		out := map[string]Installed{}
		for _, f := range installed(context.Background()) {
			out[f.Flavor] = f
		}
		return out
	}
	if _, err := exec.LookPath("etcd"); err == nil {
		if e := byFlavor()["etcd"]; !strings.HasPrefix(e.Version, "3.") || !strings.Contains(e.Version, " at /") || e.Detail != "" {
			t.Errorf("etcd on PATH: %+v", e)
		}
	} else if os.Getenv("CI") != "" {
		t.Fatalf("etcd needed under CI: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if e := byFlavor()["etcd"]; e.Version != "" || !strings.Contains(e.Detail, "no etcd binary on PATH") {
		t.Errorf("no etcd on PATH: %+v", e)
	}
	if _, listed := byFlavor()["poled"]; listed {
		t.Error("poled, this build, has a version line")
	}
}
