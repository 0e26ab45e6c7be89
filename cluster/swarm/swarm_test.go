package swarm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dockerimage "github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/swarm"
	"github.com/go-zookeeper/zk"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/cluster/internal/clustertest"
	"github.com/polebench/polebench/cluster/swarm/swarmtest"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/score"
)

func node(id, host, dc string, ready bool) swarm.Node {
	nd := swarm.Node{ID: id}
	nd.Description.Hostname = host
	nd.Status.State = swarm.NodeStateDown
	if ready {
		nd.Status.State = swarm.NodeStateReady
	}
	nd.Spec.Availability = swarm.NodeAvailabilityActive
	if dc != "" {
		nd.Spec.Labels = map[string]string{LabelDC: dc}
	}
	return nd
}

func TestPlace(t *testing.T) {
	topo := clustertest.PaperTwoDC(t) // D1 {1, 2}, D2 {3, 4, 5}
	for _, c := range []struct {
		name  string
		nodes []swarm.Node
		want  string // server:node ...
		err   string
		named map[string][]string // the spec's nodes per DC
	}{
		{"one unlabelled node takes all", []swarm.Node{node("a", "h", "", true)}, "1:a 2:a 3:a 4:a 5:a", "", nil},
		{"by label, round robin in a DC", []swarm.Node{node("b", "y", "D2", true), node("a", "x", "D1", true), node("c", "z", "D2", true)},
			"1:a 2:a 3:b 4:c 5:b", "", nil},
		{"a node that is down takes nothing", []swarm.Node{node("a", "x", "D1", true), node("b", "y", "D2", false), node("c", "z", "D2", true)},
			"1:a 2:a 3:c 4:c 5:c", "", nil},
		{"a DC without a node", []swarm.Node{node("a", "x", "D1", true), node("b", "y", "", true)}, "",
			"no ready node is labelled polebench.dc=D2 for DC D2's servers [3 4 5] (docker node update --label-add polebench.dc=D2 NODE)", nil},
		{"one node, labelled for one DC only", []swarm.Node{node("a", "x", "D1", true)}, "", "polebench.dc=D2", nil},
		{"two unlabelled nodes", []swarm.Node{node("a", "x", "", true), node("b", "y", "", true)}, "", "polebench.dc=D1", nil},
		{"no node ready", []swarm.Node{node("a", "x", "", false)}, "", "no ready, active node", nil},
		{"by name, in the spec's order, over labels", []swarm.Node{node("a", "x", "D2", true), node("b", "y", "", true), node("c", "z", "D2", true)},
			"1:a 2:a 3:c 4:b 5:c", "", map[string][]string{"D1": {"x"}, "D2": {"z", "b"}}},
		{"by ID for one DC, by label for the other", []swarm.Node{node("a", "x", "", true), node("b", "y", "D2", true)},
			"1:a 2:a 3:b 4:b 5:b", "", map[string][]string{"D1": {"a"}}},
		{"a named node that is down", []swarm.Node{node("a", "x", "", true), node("b", "y", "D2", false)}, "",
			`DC D2's nodes: no ready, active node has the host name or ID "y" (usable: x/a)`, map[string][]string{"D1": {"x"}, "D2": {"y"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			placed, err := place(topo, c.nodes, c.named)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, id := range topo.Servers() {
				got = append(got, fmt.Sprintf("%d:%s", id, placed[id].ID))
			}
			if strings.Join(got, " ") != c.want {
				t.Errorf("placed %s, want %s", strings.Join(got, " "), c.want)
			}
		})
	}
}

func TestRunName(t *testing.T) {
	for label, want := range map[string]string{
		"r0123456":                               "polebench-r0123456",
		"test-TestSwarm-012116.830917":           "polebench-test-TestSwarm-012116-830917",
		"test-TestSwarmTwoEngines-012116.830917": "polebench-test-TestSwarmTwoEngines-0-", // + hash
	} {
		got := runName(label)
		if !strings.HasPrefix(got, want) || len(got) > 45 {
			t.Errorf("runName(%q) = %q, want %q (at most 45 bytes)", label, got, want)
		}
	}
	if a, b := runName("test-TestSwarmTwoEngines-012116.830917"), runName("test-TestSwarmTwoEngines-012116.830918"); a == b {
		t.Errorf("two long labels share the name %s", a)
	}
}

func TestConfigFromEnv(t *testing.T) {
	for _, c := range []struct {
		engines, ports string
		err            string
	}{
		{"unix:///run/a.sock, tcp://10.0.0.2:2375", "30000", ""},
		{"10.0.0.2:2375", "", `POLEBENCH_SWARM_ENGINES: "10.0.0.2:2375" is not an engine address`},
		{"", "80", `POLEBENCH_SWARM_PORTS: "80" is not a port`},
		{"", "65500", `POLEBENCH_SWARM_PORTS: "65500" is not a port`},
	} {
		t.Setenv(EnginesEnv, c.engines)
		t.Setenv(PortsEnv, c.ports)
		sc, err := ConfigFromEnv()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q %q: error %v, want %q", c.engines, c.ports, err, c.err)
			}
			continue
		}
		if err != nil || len(sc.Engines) != 2 || sc.Engines[1] != "tcp://10.0.0.2:2375" || sc.PortBase != 30000 {
			t.Errorf("%q %q: %+v, %v", c.engines, c.ports, sc, err)
		}
	}
}

// The Docker CLI's context store, as `docker context create` writes it.
func TestDockerContexts(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	write := func(digest, meta string) {
		p := filepath.Join(dir, "contexts", "meta", digest, "meta.json")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("d1", `{"Name":"node-b","Metadata":{},"Endpoints":{"docker":{"Host":"tcp://10.0.0.2:2376","SkipTLSVerify":false}}}`)
	write("d2", `{"Name":"node-a","Metadata":{},"Endpoints":{"docker":{"Host":"unix:///run/other.sock"}}}`)
	write("d3", `{"Name":"over-ssh","Metadata":{},"Endpoints":{"docker":{"Host":"ssh://me@host"}}}`)
	tls := filepath.Join(dir, "contexts", "tls", "d1", "docker")
	os.MkdirAll(tls, 0o755)
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		os.WriteFile(filepath.Join(tls, f), []byte("x"), 0o600)
	}
	got, err := dockerContexts()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].name != "node-a" || got[0].host != "unix:///run/other.sock" || len(got[0].opts) != 1 ||
		got[1].name != "node-b" || got[1].host != "tcp://10.0.0.2:2376" || len(got[1].opts) != 2 {
		t.Fatalf("contexts %+v; want node-a (unix, no TLS) and node-b (tcp with TLS), ssh skipped", got)
	}
	write("d4", `{"Name":`)
	if _, err := dockerContexts(); err == nil || !strings.Contains(err.Error(), "d4/meta.json") {
		t.Errorf("a broken meta.json: error %v, want one naming it", err)
	}
}

// TestSwarmTwoEngines runs the two-DC cluster on a swarm of two Docker engines on
// this machine: the local one (manager, labelled D1) and a second dockerd in its own
// network namespace (worker, D2). It checks placement by label, the image loaded into
// the worker's empty engine, the overlay across the engines (a write on p1 read on p3,
// heartbeats that measure the plan's RTT between them), a kill and a restart on the
// worker that keeps its volume, and that nothing is left on either engine.
func TestSwarmTwoEngines(t *testing.T) {
	mgr := swarmtest.Manager(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	info, err := mgr.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := swarmtest.Worker(t, mgr)
	topo := clustertest.PaperTwoDC(t)
	plan := netem.NewPlan(topo, netem.DefaultOptions(1))
	label := clustertest.Label(t)
	opts := cluster.Options{Topology: topo, Oracle: score.Oracle{Name: score.History}, InitialLeader: 5,
		Plan: plan, Label: label, Logger: clustertest.Logger(t)}

	// Two nodes and no labels: nothing says where the DCs go.
	if _, err := NewWith(ctx, opts, Config{Engines: []string{w.Host}}); err == nil ||
		!strings.Contains(err.Error(), "no ready node is labelled polebench.dc=D1") {
		t.Fatalf("unlabelled nodes: error %v", err)
	}
	// D1 goes by the node label, D2 by the node the spec names (its ID here).
	swarmtest.LabelNode(t, mgr, info.Swarm.NodeID, LabelDC, "D1")
	opts.Nodes = map[string][]string{"D2": {w.NodeID}}
	// The worker's engine unknown: nothing can load the image into it. The worker
	// shares this machine's host name.
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewWith(ctx, opts, Config{}); err == nil ||
		!strings.Contains(err.Error(), "no Docker engine address for node "+host+"/"+w.NodeID[:12]+": add it to POLEBENCH_SWARM_ENGINES") {
		t.Fatalf("no engine for the worker: error %v", err)
	}
	if left, err := objects(ctx, mgr, nodeEngines{info.Swarm.NodeID: mgr, w.NodeID: w.Client}, label); err != nil || len(left) > 0 {
		t.Fatalf("a start that failed left %v (%v)", left, err)
	}

	t0 := time.Now()
	c, err := NewWith(ctx, opts, Config{Engines: []string{w.Host}})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close(context.Background())
		}
	}()
	t.Logf("5 servers up on 2 engines in %v, links %s", time.Since(t0).Round(time.Millisecond), c.Links())
	for _, s := range c.Servers() {
		want := info.Swarm.NodeID
		if topo.DC(s.ID) == "D2" {
			want = w.NodeID
		}
		if !strings.HasSuffix(s.Node, "/"+want[:12]) {
			t.Errorf("p%d (%s) on node %s, want %s", s.ID, s.DC, s.Node, want)
		}
		if s.Links == "" || s.ClientRTTms <= 0 {
			t.Errorf("p%d: links %q, client RTT %v ms: not recorded", s.ID, s.Links, s.ClientRTTms)
		}
	}
	if imgs, err := w.Client.ImageList(ctx, dockerimage.ListOptions{}); err != nil || len(imgs) != 1 {
		t.Errorf("the worker's engine holds %d images (%v), want the one poled image loaded into it", len(imgs), err)
	}

	servers := c.Servers()
	leader, err := cluster.WaitLeader(ctx, servers, c.Alive)
	if err != nil || leader != 5 {
		t.Fatalf("leader p%d (%v), want p5", leader, err)
	}
	if err := cluster.WaitServing(ctx, servers, c.Alive); err != nil {
		t.Fatal(err)
	}
	p1 := clustertest.Session(t, servers[0].Client)
	if _, err := p1.Create("/across", []byte("from D1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p3 := clustertest.Session(t, servers[2].Client)
	if got := clustertest.Read(t, p3, "/across"); got != "from D1" {
		t.Fatalf("p3 on the worker reads %q", got)
	}
	// The heartbeats between the engines measure the plan's RTT (20.75 ms), whatever
	// emulates it.
	want := plan.RTT(1, 3).Seconds() * 1000
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := cluster.NodeStatus(ctx, servers[0])
		var rtt float64
		for _, p := range st.Peers {
			if p.ID == 3 && p.Samples >= 3 {
				rtt = p.RTTms
			}
		}
		if err == nil && rtt > want*0.75 && rtt < want*1.25 {
			t.Logf("p1 (manager) measures p3 (worker) at %.2f ms, plan %.2f ms", rtt, want)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("p1 measures p3 at %.2f ms (%v); the plan says %.2f", rtt, err, want)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// p4 on the worker: killed, then back from its volume on the same node.
	if err := c.Kill(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if c.Alive(4) {
		t.Fatal("p4 alive after Kill")
	}
	if _, err := p1.Set("/across", []byte("while p4 was down"), -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, 4); err != nil {
		t.Fatal(err)
	}
	st, err := cluster.NodeStatus(ctx, servers[3])
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := cluster.NodeEvents(ctx, servers[3]); err != nil || len(ev) == 0 || ev[0].Zxid == 0 {
		t.Errorf("p4 restarted without its state: first event %v (%v)", ev, err)
	}
	p4 := clustertest.Session(t, servers[3].Client)
	if got := clustertest.Read(t, p4, "/across"); got != "while p4 was down" {
		t.Errorf("restarted p4 reads %q", got)
	}
	t.Logf("p4 restarted on the worker: role %s, last zxid %v", st.Role, st.LastZxid)

	for _, conn := range []*zk.Conn{p1, p3, p4} {
		conn.Close()
	}
	logs := t.TempDir()
	if err := c.CollectLogs(ctx, logs); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(logs, "p4.log")); err != nil || strings.Count(string(b), "msg=serving") != 2 {
		t.Errorf("p4.log has %d starts, want 2 (both tasks, from the worker): %v", strings.Count(string(b), "msg=serving"), err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closed = true
	left, err := objects(ctx, mgr, nodeEngines{info.Swarm.NodeID: mgr, w.NodeID: w.Client}, label)
	if err != nil || len(left) > 0 {
		t.Fatalf("left behind on the engines: %v (%v)", left, err)
	}
	if down, err := cluster.Down(ctx, label); err != nil || len(down) > 0 {
		t.Fatalf("cluster down after Close removed %v (%v)", down, err)
	}
}

// Without a swarm, the backend says how to make one.
func TestSwarmNotAManager(t *testing.T) {
	cli := swarmtest.Require(t)
	swarmtest.Lock(t)
	if info, err := cli.Info(t.Context()); err != nil || info.Swarm.LocalNodeState != swarm.LocalNodeStateInactive {
		if os.Getenv("CI") != "" { // CI's engine is out of a swarm: the swarm tests leave it as they found it
			t.Fatalf("the engine is in a swarm (%v, %v)", info.Swarm.LocalNodeState, err)
		}
		t.Skipf("the engine is in a swarm (%v, %v)", info.Swarm.LocalNodeState, err)
	}
	topo := clustertest.PaperTwoDC(t)
	_, err := NewWith(t.Context(), cluster.Options{Topology: topo, Plan: netem.NewPlan(topo, netem.DefaultOptions(1))}, Config{})
	if err == nil || !strings.Contains(err.Error(), "is not a swarm manager (swarm inactive): run `docker swarm init` there") {
		t.Fatalf("error %v", err)
	}
}

// TestPrepare: on an engine in no swarm, Check says Prepare mends it; Prepare makes
// a single-node swarm manager, which Check accepts; release leaves the engine as it
// found it: out of swarm mode, with the gateway bridge only if it was there before.
func TestPrepare(t *testing.T) {
	cli := swarmtest.Require(t)
	ctx := t.Context()
	fail := t.Skipf
	if os.Getenv("CI") != "" { // CI's engine is out of a swarm: the swarm tests leave it as they found it
		fail = t.Fatalf
	}
	info, err := cli.Info(ctx)
	if err != nil || info.Swarm.LocalNodeState != swarm.LocalNodeStateInactive {
		fail("the engine is in a swarm (%v, %v)", info.Swarm.LocalNodeState, err)
	}
	_, bridgeErr := cli.NetworkInspect(ctx, "docker_gwbridge", network.InspectOptions{})
	if err := cluster.Check(ctx, backend.Swarm, ""); !errors.Is(err, cluster.ErrUnprepared) || !strings.Contains(err.Error(), "is not a swarm manager (swarm inactive)") {
		t.Fatalf("check before: %v, want one Prepare mends", err)
	}
	note, release, err := cluster.Prepare(ctx, backend.Swarm)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(note)
	released := false
	defer func() {
		if !released {
			release(context.Background())
		}
	}()
	if !strings.Contains(note, "single-node swarm initialised") {
		fail("another holder made a swarm meanwhile: %s", note) // release leaves it alone
	}
	if err := cluster.Check(ctx, backend.Swarm, ""); err != nil {
		t.Errorf("check after Prepare: %v", err)
	}
	released = true
	if err := release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if info, err := cli.Info(ctx); err != nil || info.Swarm.LocalNodeState != swarm.LocalNodeStateInactive {
		t.Errorf("after release the engine is %v (%v)", info.Swarm.LocalNodeState, err)
	}
	if _, err := cli.NetworkInspect(ctx, "docker_gwbridge", network.InspectOptions{}); (err == nil) != (bridgeErr == nil) {
		t.Errorf("the gateway bridge: before %v, after %v", bridgeErr, err)
	}
	if err := cluster.Check(ctx, backend.Swarm, ""); !errors.Is(err, cluster.ErrUnprepared) {
		t.Errorf("check after release: %v", err)
	}
}

// TestSwarmRegistry: with a registry named, the image is pushed there and the
// services name it by the registry's reference, which the node pulls; the cluster
// elects its initial leader and leaves nothing behind.
func TestSwarmRegistry(t *testing.T) {
	mgr := swarmtest.Manager(t)
	reg := swarmtest.Registry(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	topo := clustertest.PaperTwoDC(t)
	label := clustertest.Label(t)
	c, err := NewWith(ctx, cluster.Options{Topology: topo, Oracle: score.Oracle{Name: score.History}, InitialLeader: 5,
		Plan: netem.NewPlan(topo, netem.DefaultOptions(1)), Label: label, Logger: clustertest.Logger(t)}, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	svc, _, err := mgr.ServiceInspectWithRaw(ctx, runName(label)+"-p1", swarm.ServiceInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := svc.Spec.TaskTemplate.ContainerSpec.Image
	if !strings.HasPrefix(ref, reg+"/polebench/poled:") {
		t.Fatalf("services run %q, want the image from %s", ref, reg)
	}
	t.Cleanup(func() { mgr.ImageRemove(context.Background(), ref, dockerimage.RemoveOptions{}) })
	resp, err := http.Get("http://" + reg + "/v2/polebench/poled/tags/list")
	if err != nil {
		t.Fatal(err)
	}
	tags, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if tag := ref[strings.LastIndex(ref, ":")+1:]; !strings.Contains(string(tags), `"`+tag+`"`) {
		t.Fatalf("the registry lists %s, not the tag %s", tags, tag)
	}
	if leader, err := cluster.WaitLeader(ctx, c.Servers(), c.Alive); err != nil || leader != 5 {
		t.Fatalf("leader p%d (%v), want p5", leader, err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if down, err := cluster.Down(ctx, label); err != nil || len(down) > 0 {
		t.Fatalf("cluster down after Close removed %v (%v)", down, err)
	}
}
