package docker

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/go-zookeeper/zk"
	"github.com/vishvananda/netns"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/image"
	"github.com/polebench/polebench/cluster/internal/bridge"
	"github.com/polebench/polebench/cluster/internal/clustertest"
	"github.com/polebench/polebench/cluster/internal/engine"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/topology"
)

func TestHostAddr(t *testing.T) {
	for _, c := range []struct {
		prefix string
		n      int
		want   string
	}{
		{"10.213.7.0/24", 1, "10.213.7.1"},
		{"10.213.7.0/24", 15, "10.213.7.15"},
		{"10.213.7.9/24", 11, "10.213.7.11"}, // the prefix is masked first
		{"10.213.0.0/16", 300, "10.213.1.44"},
	} {
		if got := hostAddr(netip.MustParsePrefix(c.prefix), c.n); got.String() != c.want {
			t.Errorf("hostAddr(%s, %d) = %v, want %s", c.prefix, c.n, got, c.want)
		}
	}
}

// testClient connects to the engine, or skips locally / fails under CI when there is none.
func testClient(t *testing.T) *client.Client {
	t.Helper()
	cli, err := image.Connect(t.Context())
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("docker is required under CI: %v", err)
		}
		t.Skipf("no docker engine (install docker.io and start it): %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

var poledImage struct {
	once  sync.Once
	tag   string
	built bool
	took  time.Duration
	err   error
}

// testImage builds the real poled's image once per test binary (from the source
// tree; no image build when one of the same binary exists).
func testImage(t *testing.T, cli *client.Client) string {
	t.Helper()
	im := &poledImage
	im.once.Do(func() {
		start := time.Now()
		im.tag, im.built, im.err = image.Poled(context.Background(), cli, image.Options{})
		im.took = time.Since(start)
	})
	if im.err != nil {
		t.Fatalf("poled image: %v", im.err)
	}
	t.Logf("poled image %s (built %v) ready in %v", im.tag, im.built, im.took.Round(time.Millisecond))
	return im.tag
}

// leftovers lists what still carries the run's label: Docker objects, the run's switch
// namespace and its host veth, as Down names what it removes.
func leftovers(t *testing.T, cli *client.Client, label string) []string {
	t.Helper()
	objs, err := engine.Objects(t.Context(), cli, label)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, o := range objs {
		left = append(left, o.String())
	}
	rest, err := bridge.Leftovers(label, netns.None(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return append(left, rest...)
}

// dataFiles lists the files under /data in a container, running or not.
func dataFiles(t *testing.T, cli *client.Client, name string) []string {
	t.Helper()
	rc, _, err := cli.CopyFromContainer(t.Context(), name, image.DataDir)
	if err != nil {
		t.Fatalf("read %s:%s: %v", name, image.DataDir, err)
	}
	defer rc.Close()
	var files []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			files = append(files, h.Name)
		}
	}
	return files
}

// TestDockerCluster runs the paper's two-DC cluster of real poled containers: a
// ZooKeeper client writes through one server and reads through another (both ways),
// a killed server keeps its volume and, restarted, serves what was written while it
// was down; Close, even with a cancelled context, leaves nothing behind.
func TestDockerCluster(t *testing.T) {
	cli := testClient(t)
	tag := testImage(t, cli)
	topo := clustertest.PaperTwoDC(t)
	label := clustertest.Label(t)
	log := slog.New(slog.NewTextHandler(clustertest.Writer{T: t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	start := time.Now()
	c, err := NewWith(t.Context(), cluster.Options{
		Topology: topo, Oracle: score.Oracle{Name: score.History}, InitialLeader: 5,
		Plan: netem.NewPlan(topo, netem.DefaultOptions(1)), Label: label, Logger: log,
	}, Config{Image: tag})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("5-server cluster up in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { c.Close(context.Background()) }) // a no-op once closed

	servers := c.Servers()
	if len(servers) != 5 {
		t.Fatalf("%d servers, want 5", len(servers))
	}
	for _, s := range servers {
		if want := topo.DC(s.ID); s.DC != want {
			t.Errorf("p%d in %s, want %s", s.ID, s.DC, want)
		}
		if !c.Alive(s.ID) {
			t.Errorf("p%d not alive after start", s.ID)
		}
	}
	checkLinks(t, cli, c, label)
	wctx, wcancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer wcancel()
	if leader, err := cluster.WaitLeader(wctx, servers, nil); err != nil || leader != 5 {
		t.Fatalf("leader p%d (%v), want the initial leader p5", leader, err)
	}

	p1, p4 := clustertest.Session(t, servers[0].Client), clustertest.Session(t, servers[3].Client)
	if _, err := p1.Create("/docker", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create via p1: %v", err)
	}
	if got := clustertest.Read(t, p4, "/docker"); got != "v1" {
		t.Fatalf("p4 reads %q, want v1", got)
	}
	if _, err := p4.Set("/docker", []byte("v2"), -1); err != nil {
		t.Fatalf("set via p4: %v", err)
	}
	if got := clustertest.Read(t, p1, "/docker"); got != "v2" {
		t.Fatalf("p1 reads %q, want v2", got)
	}

	p2 := engine.ServerName(label, 2)
	if err := c.Kill(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	if c.Alive(2) {
		t.Fatal("p2 alive after Kill")
	}
	if info, err := cli.ContainerInspect(t.Context(), p2); err != nil || info.State.Running {
		t.Fatalf("p2 container after Kill: running=%v err=%v", err == nil && info.State.Running, err)
	}
	before := dataFiles(t, cli, p2)
	t.Logf("p2 data volume after kill: %v", before)
	if len(before) == 0 {
		t.Fatal("p2 wrote no files into its data volume")
	}
	if _, err := p1.Set("/docker", []byte("v3"), -1); err != nil { // four of five: still a quorum
		t.Fatalf("set via p1 with p2 down: %v", err)
	}
	if err := c.Restart(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	if !c.Alive(2) {
		t.Fatal("p2 not alive after Restart")
	}
	after := dataFiles(t, cli, p2)
	for _, f := range before {
		if !slices.Contains(after, f) {
			t.Errorf("p2's %s did not survive kill and restart (now %v)", f, after)
		}
	}
	if err := cluster.WaitServing(wctx, servers, c.Alive); err != nil {
		t.Fatal(err)
	}
	if got := clustertest.Read(t, clustertest.Session(t, servers[1].Client), "/docker"); got != "v3" {
		t.Fatalf("restarted p2 reads %q, want v3", got)
	}

	logs := t.TempDir()
	if err := c.CollectLogs(t.Context(), logs); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		b, err := os.ReadFile(filepath.Join(logs, "p"+strconv.Itoa(s.ID)+".log"))
		if err != nil || len(b) == 0 {
			t.Errorf("log of p%d: %d bytes, %v", s.ID, len(b), err)
		}
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel() // as after Ctrl-C: Close must still clean up
	if err := c.Close(cancelled); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, cli, label); len(left) > 0 {
		t.Fatalf("Close left %v", left)
	}
	if err := c.Kill(t.Context(), 1); err == nil {
		t.Error("Kill after Close succeeded")
	}
}

// checkLinks checks that the plan went where Links says: a kernel tree in each
// container's namespace, or the plan file poled was pointed at.
func checkLinks(t *testing.T, cli *client.Client, c cluster.Cluster, label string) {
	t.Helper()
	d := c.(*containers)
	p1 := engine.ServerName(label, 1)
	switch c.Links() {
	case cluster.LinksKernel:
		info, err := cli.ContainerInspect(t.Context(), p1)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := netns.GetFromPid(info.State.Pid)
		if err != nil {
			t.Fatal(err)
		}
		defer ns.Close()
		out, err := netem.Show(t.Context(), netem.Target{NS: ns, Dev: "eth0", Self: 1, Addrs: d.addrs})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "jitter") {
			t.Fatalf("no netem leaf in p1:\n%s", out)
		}
	case cluster.LinksUserSpace:
		// What the kernel path needs besides netem: the container's namespace from the host.
		if ns, _, err := engine.ContainerNetns(t.Context(), cli, p1); err != nil {
			t.Errorf("p1's network namespace: %v", err)
		} else {
			host, _ := netns.Get()
			if ns.Equal(host) {
				t.Error("p1's network namespace is the host's")
			}
			ns.Close()
			host.Close()
		}
		rc, _, err := cli.CopyFromContainer(t.Context(), p1, image.ConfigDir+"/plan.json")
		if err != nil {
			t.Fatalf("no plan in p1: %v", err)
		}
		defer rc.Close()
		tr := tar.NewReader(rc)
		if _, err := tr.Next(); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		p, err := netem.ParsePlan("plan.json", b)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Links) != 20 || p.RTT(1, 5) != d.plan.RTT(1, 5) {
			t.Fatalf("plan in p1 has %d links, RTT(p1,p5) %v; want 20 and %v", len(p.Links), p.RTT(1, 5), d.plan.RTT(1, 5))
		}
	default:
		t.Fatalf("Links() = %q with a non-empty plan", c.Links())
	}
}

// TestDockerDown abandons a running cluster, as a crashed harness would, and removes it
// by label.
func TestDockerDown(t *testing.T) {
	cli := testClient(t)
	tag := testImage(t, cli)
	topo, err := topology.New(topology.Config{DCs: []topology.DC{{Name: "D1", Servers: []int{1, 2, 3}}}})
	if err != nil {
		t.Fatal(err)
	}
	label := clustertest.Label(t)
	if _, err := NewWith(t.Context(), cluster.Options{Topology: topo, Plan: netem.NewPlan(topo, netem.DefaultOptions(0)), Label: label}, Config{Image: tag}); err != nil {
		t.Fatal(err)
	}
	left := leftovers(t, cli, label)
	if len(left) != 3+3+2 {
		t.Fatalf("running cluster has %v, want 3 containers, 3 volumes, its switch namespace and host veth", left)
	}
	if _, err := NewWith(t.Context(), cluster.Options{Topology: topo, Plan: netem.NewPlan(topo, netem.DefaultOptions(0)), Label: label}, Config{Image: tag}); err == nil || !strings.Contains(err.Error(), "polebench cluster down "+label) {
		t.Fatalf("a second start with the abandoned run's label: %v; want it refused, naming the remedy", err)
	}
	removed, err := Down(t.Context(), label)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range left {
		if !slices.Contains(removed, o) {
			t.Errorf("Down removed %v, not %v", removed, o)
		}
	}
	if left := leftovers(t, cli, label); len(left) > 0 {
		t.Fatalf("Down left %v", left)
	}
}

// TestDockerStartFailureCleansUp fails a start after the switch and a volume exist
// (the engine refuses a 1 MB memory limit) and checks nothing is left.
func TestDockerStartFailureCleansUp(t *testing.T) {
	cli := testClient(t)
	tag := testImage(t, cli)
	topo, err := topology.New(topology.Config{DCs: []topology.DC{{Name: "D1", Servers: []int{1, 2, 3}}}})
	if err != nil {
		t.Fatal(err)
	}
	label := clustertest.Label(t)
	_, err = NewWith(t.Context(), cluster.Options{Topology: topo, Plan: netem.NewPlan(topo, netem.DefaultOptions(0)), Label: label},
		Config{Image: tag, Resources: Resources{MemoryBytes: 1 << 20}})
	if err == nil {
		t.Fatal("a 1 MB memory limit was accepted")
	}
	t.Log(err)
	if left := leftovers(t, cli, label); len(left) > 0 {
		t.Fatalf("failed start left %v", left)
	}
}

// TestDockerCancelledStart cancels the start as Ctrl-C would, once the first container
// exists, and checks NewWith fails and removes what it had made.
func TestDockerCancelledStart(t *testing.T) {
	cli := testClient(t)
	tag := testImage(t, cli)
	topo, err := topology.New(topology.Config{DCs: []topology.DC{{Name: "D1", Servers: []int{1, 2, 3}}}})
	if err != nil {
		t.Fatal(err)
	}
	label := clustertest.Label(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelRun+"="+label))}); err == nil && len(cs) > 0 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	c, err := NewWith(ctx, cluster.Options{Topology: topo, Plan: netem.NewPlan(topo, netem.DefaultOptions(0)), Label: label}, Config{Image: tag})
	if err == nil {
		c.Close(t.Context())
		t.Fatal("NewWith succeeded although its context was cancelled while it created containers")
	}
	t.Log(err)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v does not say the start was cancelled", err)
	}
	if left := leftovers(t, cli, label); len(left) > 0 {
		t.Fatalf("cancelled start left %v", left)
	}
}
