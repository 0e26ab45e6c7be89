package replica

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/polebench/polebench/score"
)

// ParseFlags builds poled's configuration from its command line: the --config file
// first (if given), then every flag the user set, then defaults; validated. Flags are
// bound to the loaded file's fields, so a flag overrides exactly its field.
func ParseFlags(name string, args []string, output io.Writer) (*Config, error) {
	var c Config
	if file := configArg(args); file != "" {
		fc, err := loadAnyConfig(file, output)
		if err != nil {
			return nil, err
		}
		c = *fc
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(output)
	fs.String("config", "", "config file: poled's JSON, or ZooKeeper's zoo.cfg with the myid in its dataDir (flags given too override it)")
	fs.IntVar(&c.ID, "id", c.ID, "this server's id (1..N, ZooKeeper's myid)")
	fs.Func("servers", "every server: id=host:client:peer:election:admin,... (e.g. 1=10.0.0.1:2181:2888:3888:8080)", func(s string) error {
		p, err := ParseServers(s)
		c.Servers = p
		return err
	})
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory for the transaction log and snapshots")
	fs.Func("oracle", "election oracle: history, rotating, request, consensus, latency, worst-case", func(s string) error {
		c.Oracle = score.Oracle{Name: s}
		return nil
	})
	fs.IntVar(&c.InitialLeader, "initial-leader", c.InitialLeader, "server that wins the first election of a fresh ensemble")
	fs.BoolVar(&c.Fsync, "fsync", c.Fsync, "fsync the log before acknowledging")
	durationVar(fs, &c.Tick, "tick", "clock of the election and broadcast cores (default 50ms)")
	durationVar(fs, &c.Heartbeat, "heartbeat", "heartbeat period for RTT estimation (default 1s)")
	durationVar(fs, &c.InitLimit, "init-limit", "how long recovery, election to serving, may take (default 20s)")
	durationVar(fs, &c.MinSessionTimeout, "min-session-timeout", "lower bound of negotiated session timeouts")
	durationVar(fs, &c.MaxSessionTimeout, "max-session-timeout", "upper bound of negotiated session timeouts (default 40s)")
	fs.IntVar(&c.SnapWindow, "snap-window", c.SnapWindow, "recent transactions kept for DIFFs (default 500)")
	fs.IntVar(&c.PreloadMB, "preload-mb", c.PreloadMB, "fill a fresh server with this many MB of deterministic data")
	fs.StringVar(&c.ListenHost, "listen-host", c.ListenHost, "address to bind the ports on instead of this server's host (e.g. 0.0.0.0)")
	fs.BoolVar(&c.Trace, "trace", c.Trace, "record the steps of every write for GET /trace (the latency anatomy of a run)")
	fs.StringVar(&c.LinkPlan, "link-plan", c.LinkPlan, "JSON link plan (netem.Plan) applied in user space to what this server sends")
	fs.StringVar(&c.LinkMode, "link-mode", c.LinkMode, "how the link plan is applied: user-space (default), kernel (this server's own interface: CAP_NET_ADMIN and sch_netem), auto (kernel when it can)")
	fs.StringVar(&c.LinkDev, "link-dev", c.LinkDev, "interface for kernel links (default: the one routing to the peers)")
	fs.StringVar(&c.SuperDigest, "super-digest", c.SuperDigest, "ZooKeeper's superDigest, super:base64(sha1(super:password)): the user every ACL admits")
	fs.StringVar(&c.JAASConfig, "jaas-config", c.JAASConfig, "JAAS login file whose Server section's DigestLoginModule lists the SASL DIGEST-MD5 users (ZooKeeper's java.security.auth.login.config)")
	fs.BoolVar(&c.SASLProvider, "sasl-provider", c.SASLProvider, "accept sasl ACLs (ZooKeeper's authProvider.N=org.apache.zookeeper.server.auth.SASLAuthenticationProvider)")
	fs.BoolVar(&c.ExtendedTypes, "extended-types", c.ExtendedTypes, "allow TTL nodes (ZooKeeper's extendedTypesEnabled)")
	durationVar(fs, &c.ContainerCheck, "container-check", "how often the leader deletes due container and TTL nodes (default 1m, ZooKeeper's znode.container.checkIntervalMs)")
	fs.Func("four-letter-words", "4lw whitelist, comma-separated, * for all (default: every word poled answers)", func(s string) error {
		c.FourLetterWords = strings.Split(s, ",")
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c.Defaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// loadAnyConfig reads poled's JSON or ZooKeeper's zoo.cfg, whichever file is; what a
// zoo.cfg sets that poled ignores is written to output, a line each.
func loadAnyConfig(file string, output io.Writer) (*Config, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if !IsZooConfig(b) {
		return LoadConfig(file)
	}
	c, notes, err := LoadZooConfig(file)
	for _, n := range notes {
		fmt.Fprintln(output, "poled:", n)
	}
	return c, err
}

// configArg finds --config's value before the flags are parsed.
func configArg(args []string) string {
	for i, a := range args {
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "config" {
			continue
		}
		if hasVal {
			return val
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func durationVar(fs *flag.FlagSet, d *Duration, name, usage string) {
	fs.Func(name, usage, func(s string) error {
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		if v < 0 {
			return fmt.Errorf("%v is negative", v)
		}
		*d = Duration(v)
		return nil
	})
}

// ParseServers reads id=host:client:peer:election:admin,... .
func ParseServers(s string) ([]Peer, error) {
	var out []Peer
	for i, item := range strings.Split(s, ",") {
		id, rest, ok := strings.Cut(strings.TrimSpace(item), "=")
		parts := strings.Split(rest, ":")
		if !ok || len(parts) != 5 {
			return nil, fmt.Errorf("entry %d %q: want id=host:client:peer:election:admin", i+1, item)
		}
		var nums [5]int
		for k, v := range append([]string{id}, parts[1:]...) {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("entry %d %q: %q is not a number", i+1, item, v)
			}
			nums[k] = n
		}
		out = append(out, Peer{ID: nums[0], Host: parts[0], ClientPort: nums[1], PeerPort: nums[2], ElectionPort: nums[3], AdminPort: nums[4]})
	}
	return out, nil
}
