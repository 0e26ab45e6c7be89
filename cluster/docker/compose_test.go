package docker

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/image"
	"github.com/polebench/polebench/cluster/internal/clustertest"
	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/replica"
	"github.com/polebench/polebench/score"
)

var updateCompose = flag.Bool("update-compose", false, "rewrite deploy/compose/*.json")

// composeSubnet is the network of docker-compose.yml; p<N> is host 10+N on it.
var composeSubnet = netip.MustParsePrefix("10.211.0.0/24")

// composeFiles are the files under deploy/compose that docker-compose.yml mounts: each
// server's config (the two-DC experiment, p5 the initial leader) and the two-DC link
// plan for user-space emulation.
func composeFiles(t *testing.T) map[string][]byte {
	topo := clustertest.PaperTwoDC(t)
	var peers []replica.Peer
	for id := 1; id <= topo.N(); id++ {
		peers = append(peers, replica.Peer{ID: id, Host: hostAddr(composeSubnet, 10+id).String(),
			ClientPort: cluster.ClientPort, PeerPort: cluster.PeerPort, ElectionPort: cluster.ElectionPort, AdminPort: cluster.AdminPort})
	}
	files := map[string][]byte{}
	for id := 1; id <= topo.N(); id++ {
		cfg := replica.Config{ID: id, Servers: peers, DataDir: image.DataDir, Oracle: score.Oracle{Name: score.History}, InitialLeader: 5, Fsync: true}
		b, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		files["p"+strconv.Itoa(id)+".json"] = append(b, '\n')
	}
	b, err := json.MarshalIndent(netem.NewPlan(topo, netem.DefaultOptions(1)), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	files["plan.json"] = append(b, '\n')
	return files
}

// TestDockerComposeFiles keeps deploy/compose and docker-compose.yml in step: the configs are
// what composeFiles makes (go test -run DockerCompose -update-compose rewrites them), poled
// accepts them, and each service has its config's address and mounts.
func TestDockerComposeFiles(t *testing.T) {
	root, err := image.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "deploy", "compose")
	for name, want := range composeFiles(t) {
		path := filepath.Join(dir, name)
		if *updateCompose {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go test ./cluster/docker -run DockerCompose -update-compose", path)
		}
	}
	if _, err := netem.ReadPlan(filepath.Join(dir, "plan.json")); err != nil {
		t.Error(err)
	}

	b, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image    string
			Networks map[string]struct {
				IPv4 string `yaml:"ipv4_address"`
			}
			Volumes []string
		}
		Networks map[string]struct {
			IPAM struct{ Config []struct{ Subnet string } }
		}
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	if got := compose.Networks["wan"].IPAM.Config; len(got) != 1 || got[0].Subnet != composeSubnet.String() {
		t.Errorf("network wan: %+v, want subnet %v", got, composeSubnet)
	}
	if len(compose.Services) != 5 {
		t.Errorf("%d services, want 5", len(compose.Services))
	}
	for id := 1; id <= 5; id++ {
		name := "p" + strconv.Itoa(id)
		cfg, err := replica.LoadConfig(filepath.Join(dir, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		svc, ok := compose.Services[name]
		if !ok {
			t.Errorf("no service %s", name)
			continue
		}
		if svc.Image != image.Latest {
			t.Errorf("%s runs %q, want %s", name, svc.Image, image.Latest)
		}
		if got := svc.Networks["wan"].IPv4; got != cfg.Self().Host {
			t.Errorf("%s at %s, its config says %s", name, got, cfg.Self().Host)
		}
		for _, v := range []string{"./deploy/compose/" + name + ".json:" + image.ConfigDir + "/poled.json:ro", name + "-data:" + image.DataDir} {
			found := false
			for _, m := range svc.Volumes {
				found = found || m == v
			}
			if !found {
				t.Errorf("%s does not mount %s (has %v)", name, v, svc.Volumes)
			}
		}
	}
}

// TestDockerComposeConfig has docker-compose itself check the file.
func TestDockerComposeConfig(t *testing.T) {
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("docker-compose is required under CI (Debian package docker-compose)")
		}
		t.Skip("no docker-compose (Debian package docker-compose)")
	}
	root, err := image.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "-f", filepath.Join(root, "docker-compose.yml"), "config", "-q")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
}

// hostAddr is host number n of an IPv4 subnet.
func hostAddr(p netip.Prefix, n int) netip.Addr {
	a := p.Masked().Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += uint32(n)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
