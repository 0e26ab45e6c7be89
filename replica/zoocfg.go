package replica

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// zooAdminPort is ZooKeeper's default admin.serverPort: poled's admin endpoint takes
// it when a zoo.cfg names none.
const zooAdminPort = 8080

// zooDefaultWords is ZooKeeper 3.8's default 4lw.commands.whitelist.
var zooDefaultWords = []string{"srvr"}

// IsZooConfig reports whether b is ZooKeeper's properties format rather than
// poled's JSON: every JSON config is an object.
func IsZooConfig(b []byte) bool {
	t := bytes.TrimSpace(b)
	return len(t) == 0 || t[0] != '{'
}

// LoadZooConfig reads a ZooKeeper zoo.cfg, and the myid in its dataDir, as
// QuorumPeerMain does. What poled has no use for is returned as notes ("file:line:
// key ignored: why"), for the caller to log; a bad value is an error naming the
// file, line and key.
func LoadZooConfig(path string) (*Config, []string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	z := zooParser{file: path, lines: map[string]int{}}
	if err := z.parse(b); err != nil {
		return nil, nil, err
	}
	c, err := z.config()
	if err != nil {
		return nil, nil, err
	}
	c.Defaults()
	if err := c.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, z.notes, nil
}

type zooParser struct {
	file  string
	keys  []string          // in file order
	vals  map[string]string // the last value of each key, as Java's Properties
	lines map[string]int
	notes []string
}

// parse reads Java properties as ZooKeeper writes them: key=value (or key: value,
// key value), # and ! comments, values trimmed.
func (z *zooParser) parse(b []byte) error {
	z.vals = map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=: \t")
		if i <= 0 {
			return fmt.Errorf("%s:%d: %q is not key=value", z.file, n, line)
		}
		key := line[:i]
		val := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line[i:]), "=:"))
		if _, seen := z.vals[key]; !seen {
			z.keys = append(z.keys, key)
		}
		z.vals[key], z.lines[key] = val, n
	}
	return sc.Err()
}

func (z *zooParser) errf(key, format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s: %s", z.file, z.lines[key], key, fmt.Sprintf(format, a...))
}

func (z *zooParser) note(key, why string) {
	z.notes = append(z.notes, fmt.Sprintf("%s:%d: %s ignored: %s", z.file, z.lines[key], key, why))
}

// positive reads a key as a positive integer; ok is false when it is absent.
func (z *zooParser) positive(key string) (n int, ok bool, err error) {
	v, ok := z.vals[key]
	if !ok {
		return 0, false, nil
	}
	n, err = strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, true, z.errf(key, "%q is not a positive integer", v)
	}
	return n, true, nil
}

func (z *zooParser) port(key string) (int, bool, error) {
	n, ok, err := z.positive(key)
	if err == nil && n > 65535 {
		err = z.errf(key, "%d is not a port", n)
	}
	return n, ok, err
}

func (z *zooParser) boolean(key string) (bool, error) {
	v, ok := z.vals[key]
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, z.errf(key, "%q is not true or false", v)
	}
	return b, nil
}

// ignoredZooKeys are keys ZooKeeper reads that change nothing poled does, and why.
var ignoredZooKeys = map[string]string{
	"maxClientCnxns":                "poled does not limit connections per host",
	"dataLogDir":                    "poled keeps its log in dataDir",
	"autopurge.snapRetainCount":     "poled keeps one snapshot",
	"autopurge.purgeInterval":       "poled keeps one snapshot",
	"preAllocSize":                  "poled's log does not preallocate",
	"snapCount":                     "poled snapshots on its own schedule",
	"standaloneEnabled":             "poled runs what the servers list says",
	"reconfigEnabled":               "poled has no dynamic reconfiguration (reconfig answers ReconfigDisabled)",
	"admin.enableServer":            "poled's admin endpoint always runs",
	"quorumListenOnAllIPs":          "use --listen-host",
	"peerType":                      "every poled server is a participant",
	"metricsProvider.className":     "poled has no metrics provider",
	"initLimit":                     "poled's broadcast times its sync with its own ticks",
	"syncLimit":                     "poled's broadcast times its followers with its own ticks",
	"globalOutstandingLimit":        "poled bounds each session's pipeline instead",
	"jute.maxbuffer":                "poled's frame limit is jute's default",
	"electionAlg":                   "poled elects with POLE",
	"syncEnabled":                   "every poled server is a participant",
	"skipACL":                       "poled always checks ACLs",
	"forceSync":                     "use --fsync",
	"clientPortAddress":             "poled binds the host the servers list names (or --listen-host)",
	"4lw.commands.enabled":          "see 4lw.commands.whitelist",
	"localSessionsEnabled":          "poled has global sessions only",
	"localSessionsUpgradingEnabled": "poled has global sessions only",
	"serverCnxnFactory":             "poled has one client port implementation",
	"secureClientPort":              "poled has no TLS client port",
	"sslQuorum":                     "poled has no TLS quorum",
	"admin.serverAddress":           "poled binds the host the servers list names",
	"connectToLearnerMasterLimit":   "poled's broadcast times its sync with its own ticks",
	"multiAddress.enabled":          "one address per server",
}

// config maps the parsed keys onto a poled Config.
func (z *zooParser) config() (*Config, error) {
	var c Config
	var errs []error
	c.DataDir = z.vals["dataDir"]
	if c.DataDir == "" {
		return nil, fmt.Errorf("%s: dataDir is missing", z.file)
	}
	client, ok, err := z.port("clientPort")
	errs = append(errs, err)
	if !ok && err == nil {
		errs = append(errs, fmt.Errorf("%s: clientPort is missing", z.file))
	}
	admin, ok, err := z.port("admin.serverPort")
	errs = append(errs, err)
	if !ok {
		admin = zooAdminPort
	}
	tick, ok, err := z.positive("tickTime")
	errs = append(errs, err)
	if !ok {
		tick = 3000 // ZooKeeper's own default tickTime
	}
	tickD := time.Duration(tick) * time.Millisecond
	c.MinSessionTimeout, c.MaxSessionTimeout = Duration(2*tickD), Duration(20*tickD)
	for key, d := range map[string]*Duration{"minSessionTimeout": &c.MinSessionTimeout, "maxSessionTimeout": &c.MaxSessionTimeout} {
		ms, ok, err := z.positive(key)
		errs = append(errs, err)
		if ok && err == nil {
			*d = Duration(time.Duration(ms) * time.Millisecond)
		}
	}
	for _, key := range []string{"initLimit", "syncLimit"} {
		_, _, err := z.positive(key) // checked as ZooKeeper does, used by neither core
		errs = append(errs, err)
	}
	c.FourLetterWords = zooDefaultWords
	if v, ok := z.vals["4lw.commands.whitelist"]; ok {
		c.FourLetterWords = nil
		for _, w := range strings.Split(v, ",") {
			if w = strings.TrimSpace(w); w != "" {
				c.FourLetterWords = append(c.FourLetterWords, w)
			}
		}
	}
	if c.ExtendedTypes, err = z.boolean("extendedTypesEnabled"); err != nil {
		errs = append(errs, err)
	}
	c.SuperDigest = z.vals["DigestAuthenticationProvider.superDigest"]
	for _, key := range z.keys {
		c.SASLProvider = c.SASLProvider || strings.HasPrefix(key, "authProvider.") && z.vals[key] == saslProvider
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := z.servers(&c, client, admin); err != nil {
		return nil, err
	}
	for _, key := range z.keys {
		if why, ok := ignoredZooKeys[key]; ok {
			z.note(key, why)
		} else if strings.HasPrefix(key, "authProvider.") && z.vals[key] != saslProvider {
			z.note(key, "poled's providers are ip, digest and sasl")
		} else if !zooKnown(key) {
			z.note(key, "poled does not know it")
		}
	}
	return &c, nil
}

// saslProvider is the authProvider.N value that registers the sasl ACL scheme.
const saslProvider = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"

// zooKnown reports whether config() reads key itself.
func zooKnown(key string) bool {
	if strings.HasPrefix(key, "authProvider.") {
		return true
	}
	switch key {
	case "dataDir", "clientPort", "admin.serverPort", "tickTime", "minSessionTimeout", "maxSessionTimeout",
		"4lw.commands.whitelist", "extendedTypesEnabled", "DigestAuthenticationProvider.superDigest":
		return true
	}
	return strings.HasPrefix(key, "server.")
}

// servers reads server.N=host:peer:election[:role][;[host:]client] and the myid; a
// zoo.cfg without servers is a standalone server, id 1.
func (z *zooParser) servers(c *Config, client, admin int) error {
	for _, key := range z.keys {
		if !strings.HasPrefix(key, "server.") {
			continue
		}
		id, err := strconv.Atoi(strings.TrimPrefix(key, "server."))
		// 255 would make session ids that read as TTL nodes' owners (ZooKeeper refuses
		// it with extended types on); poled refuses it always.
		if err != nil || id < 1 || id > 254 {
			return z.errf(key, "server id %q is not 1..254", strings.TrimPrefix(key, "server."))
		}
		p, err := parseZooServer(z.vals[key])
		if err != nil {
			return z.errf(key, "%v", err)
		}
		p.ID = id
		c.Servers = append(c.Servers, p)
	}
	if len(c.Servers) == 0 {
		c.ID = 1
		c.Servers = []Peer{{ID: 1, Host: "127.0.0.1", ClientPort: client, AdminPort: admin}}
		// A standalone server still opens the peer ports; the kernel picks them.
		return nil
	}
	myid := filepath.Join(c.DataDir, "myid")
	b, err := os.ReadFile(myid)
	if err != nil {
		return fmt.Errorf("%s: the servers are listed, so %s must name this one: %w", z.file, myid, err)
	}
	if c.ID, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
		return fmt.Errorf("%s:1: %q is not a server id", myid, strings.TrimSpace(string(b)))
	}
	for i := range c.Servers {
		if c.Servers[i].ID != c.ID {
			continue
		}
		if c.Servers[i].ClientPort == 0 {
			c.Servers[i].ClientPort = client
		}
		c.Servers[i].AdminPort = admin
		return nil
	}
	return fmt.Errorf("%s:1: server %d is not among %s's server.N", myid, c.ID, z.file)
}

// parseZooServer reads host:peer:election[:participant][;[host:]client].
func parseZooServer(v string) (Peer, error) {
	addr, clientPart, hasClient := strings.Cut(v, ";")
	parts := strings.Split(addr, ":")
	if len(parts) < 3 || len(parts) > 4 {
		return Peer{}, fmt.Errorf("%q is not host:peerPort:electionPort[:role][;clientPort]", v)
	}
	if len(parts) == 4 && parts[3] != "participant" {
		return Peer{}, fmt.Errorf("role %q: poled runs participants only", parts[3])
	}
	p := Peer{Host: parts[0]}
	if p.Host == "localhost" {
		p.Host = "127.0.0.1" // one address, so that peers' connections match their dials
	}
	var err error
	if p.PeerPort, err = portOf(parts[1]); err != nil {
		return Peer{}, err
	}
	if p.ElectionPort, err = portOf(parts[2]); err != nil {
		return Peer{}, err
	}
	if hasClient {
		if i := strings.LastIndex(clientPart, ":"); i >= 0 {
			clientPart = clientPart[i+1:]
		}
		if p.ClientPort, err = portOf(clientPart); err != nil {
			return Peer{}, err
		}
	}
	return p, nil
}

func portOf(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("%q is not a port", s)
	}
	return n, nil
}
