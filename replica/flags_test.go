package replica

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p1.json")
	os.WriteFile(file, []byte(`{"id": 1, "data_dir": "/d1", "oracle": {"name": "rotating"}, "fsync": true,
 "servers": [{"id": 1, "host": "10.0.0.1", "client_port": 2181, "peer_port": 2888, "election_port": 3888, "admin_port": 8080},
             {"id": 2, "host": "10.0.0.2", "client_port": 2181, "peer_port": 2888, "election_port": 3888, "admin_port": 8080}]}`), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want func(*Config) bool
		err  string
	}{
		{"file alone", []string{"--config", file}, func(c *Config) bool {
			return c.ID == 1 && c.DataDir == "/d1" && c.Oracle.Name == "rotating" && c.Fsync && time.Duration(c.Tick) == 50*time.Millisecond
		}, ""},
		{"a flag overrides its field only", []string{"--config=" + file, "--oracle", "latency", "--id", "2", "--tick", "20ms"}, func(c *Config) bool {
			return c.ID == 2 && c.Oracle.Name == "latency" && c.DataDir == "/d1" && c.Fsync && time.Duration(c.Tick) == 20*time.Millisecond
		}, ""},
		{"flags alone", []string{"--id", "1", "--servers", "1=127.0.0.1:1:2:3:4", "--data-dir", "/x"}, func(c *Config) bool {
			return len(c.Servers) == 1 && c.Servers[0].AdminPort == 4 && c.Oracle.Name == "history"
		}, ""},
		{"listen host", []string{"--config", file, "--listen-host", "0.0.0.0"}, func(c *Config) bool { return c.ListenHost == "0.0.0.0" }, ""},
		{"bad listen host", []string{"--config", file, "--listen-host", "any"}, nil, `listen_host: "any" is not an IP address`},
		{"bad servers", []string{"--servers", "1=h:1:2"}, nil, "want id=host:client:peer:election:admin"},
		{"negative duration", []string{"--config", file, "--tick", "-1s"}, nil, "negative"},
		{"unknown server id", []string{"--config", file, "--id", "9"}, nil, "id: 9 is not one of the servers"},
		{"bad file", []string{"--config", file + ".missing"}, nil, "no such file"},
		{"stray argument", []string{"--config", file, "extra"}, nil, `unexpected argument "extra"`},
		{"link mode", []string{"--config", file, "--link-plan", "/p.json", "--link-mode", "auto", "--link-dev", "eth0"}, func(c *Config) bool {
			return c.LinkMode == LinksAuto && c.LinkDev == "eth0"
		}, ""},
		{"unknown link mode", []string{"--config", file, "--link-plan", "/p.json", "--link-mode", "tc"}, nil, `link_mode: "tc" is not user-space, kernel or auto`},
		{"link mode without a plan", []string{"--config", file, "--link-mode", "kernel"}, nil, `link_mode: "kernel" without a link_plan`},
		{"link dev in user space", []string{"--config", file, "--link-plan", "/p.json", "--link-dev", "eth0"}, nil, "link_dev: only for link_mode kernel or auto"},
	} {
		cfg, err := ParseFlags("poled", c.args, io.Discard)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && !c.want(cfg):
			t.Errorf("%s: got %+v", c.name, cfg)
		}
	}
}
