// Package replica composes POLE election, Zab-like broadcast, the data tree and storage
// into one poled node, and serves it to ZooKeeper clients.
package replica

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/polebench/polebench/score"
	"github.com/polebench/polebench/zab"
)

// Peer is where one server of the ensemble listens.
type Peer struct {
	ID           int    `json:"id"`
	Host         string `json:"host"`
	ClientPort   int    `json:"client_port"`
	PeerPort     int    `json:"peer_port"`     // broadcast channel
	ElectionPort int    `json:"election_port"` // election and heartbeats
	AdminPort    int    `json:"admin_port"`    // HTTP: /events, /status
}

func (p Peer) addr(port int) string { return net.JoinHostPort(p.Host, strconv.Itoa(port)) }

// ClientAddr is host:port for ZooKeeper clients.
func (p Peer) ClientAddr() string { return p.addr(p.ClientPort) }

// AdminAddr is host:port of the admin endpoint.
func (p Peer) AdminAddr() string { return p.addr(p.AdminPort) }

// Duration is a time.Duration written as "50ms" in JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as \"50ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Config is one poled's configuration: the file `poled --config` reads, and what
// every cluster backend writes for its servers.
type Config struct {
	ID      int          `json:"id"`
	Servers []Peer       `json:"servers"` // every server, this one included
	DataDir string       `json:"data_dir"`
	Oracle  score.Oracle `json:"oracle"`
	// InitialLeader, if set, wins the first election of a fresh ensemble whatever the oracle.
	InitialLeader int  `json:"initial_leader,omitempty"`
	Fsync         bool `json:"fsync"`
	// Tick is the clock of the election and broadcast cores.
	Tick      Duration `json:"tick,omitempty"`
	Heartbeat Duration `json:"heartbeat,omitempty"`
	// MinSessionTimeout and MaxSessionTimeout bound negotiated session timeouts.
	MinSessionTimeout Duration `json:"min_session_timeout,omitempty"`
	MaxSessionTimeout Duration `json:"max_session_timeout,omitempty"`
	// SnapWindow is how many recent committed transactions a server keeps for DIFFs.
	SnapWindow int `json:"snap_window,omitempty"`
	// InitLimit is how long recovery (election to serving) may take, ZooKeeper's
	// initLimit × tickTime: a sync still unfinished then goes back to an election
	// (default zab.DefaultInitLimit).
	InitLimit Duration `json:"init_limit,omitempty"`
	// PreloadMB fills a fresh server's tree with that much deterministic data before it
	// joins (the same on every server), for the snapshot-size sweeps.
	PreloadMB int `json:"preload_mb,omitempty"`
	// LinkPlan is a JSON netem.Plan file; when set, the peer transport delays what this
	// server sends as the plan says (user-space emulation).
	LinkPlan string `json:"link_plan,omitempty"`
	// LinkMode says how the plan is applied: LinksUserSpace ("", the default),
	// LinksKernel (on this server's own interface) or LinksAuto (kernel when it can).
	LinkMode string `json:"link_mode,omitempty"`
	// LinkDev is the interface kernel links go on; empty: the one that routes to the peers.
	LinkDev string `json:"link_dev,omitempty"`
	// ListenHost, if set, is the address the ports are bound on instead of this
	// server's own host: 0.0.0.0 in a container whose interface is plugged in after
	// it starts.
	ListenHost string `json:"listen_host,omitempty"`
	// Trace records the steps of every write (package trace) for GET /trace: the
	// latency anatomy of a run. Off by default: it costs a few marks per write.
	Trace bool `json:"trace,omitempty"`
	// FourLetterWords is the 4lw whitelist ("*": all); empty, every word poled answers.
	FourLetterWords []string `json:"four_letter_words,omitempty"`
	// SuperDigest is ZooKeeper's DigestAuthenticationProvider.superDigest
	// ("super:base64(sha1(super:password))"): the digest user that passes every ACL.
	SuperDigest string `json:"super_digest,omitempty"`
	// JAASConfig is the JAAS login file ZooKeeper's java.security.auth.login.config
	// names: the users of its Server section's DigestLoginModule may authenticate
	// with SASL DIGEST-MD5. Empty: SASL exchanges fail, as on such a ZooKeeper.
	JAASConfig string `json:"jaas_config,omitempty"`
	// SASLProvider registers the sasl ACL scheme, as ZooKeeper's
	// authProvider.N=org.apache.zookeeper.server.auth.SASLAuthenticationProvider does.
	SASLProvider bool `json:"sasl_provider,omitempty"`
	// ExtendedTypes is ZooKeeper's extendedTypesEnabled: TTL nodes may be created.
	ExtendedTypes bool `json:"extended_types,omitempty"`
	// ContainerCheck is how often the leader deletes the containers and TTL nodes
	// that are due (ZooKeeper's znode.container.checkIntervalMs; default 60s).
	ContainerCheck Duration `json:"container_check,omitempty"`
	// Broken, for the checkers' tests only, breaks this server on purpose (Variant):
	// never in a config file, so only servers in the harness's process (the local
	// backend, the simulator) carry it.
	Broken Variant `json:"-"`
}

// Defaults fills unset fields.
func (c *Config) Defaults() {
	if c.Tick == 0 {
		c.Tick = Duration(50 * time.Millisecond)
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = Duration(time.Second)
	}
	if c.MinSessionTimeout == 0 {
		// ZooKeeper's floor is 2 of its 2 s ticks; our ticks are the cores' (50 ms),
		// so the floor is 4 of them: clients choose their timeouts above it.
		c.MinSessionTimeout = Duration(4 * time.Duration(c.Tick))
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = Duration(40 * time.Second)
	}
	if c.SnapWindow == 0 {
		c.SnapWindow = zab.DefaultWindow
	}
	if c.ContainerCheck == 0 {
		c.ContainerCheck = Duration(time.Minute)
	}
	if c.Oracle.Name == "" {
		c.Oracle.Name = score.History
	}
}

// Self is this server's entry in Servers.
func (c Config) Self() Peer {
	for _, p := range c.Servers {
		if p.ID == c.ID {
			return p
		}
	}
	return Peer{}
}

// Validate reports every problem with c, each naming its field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, a...)))
	}
	ids := map[int]bool{}
	for i, p := range c.Servers {
		f := fmt.Sprintf("servers[%d]", i)
		if p.ID < 1 {
			bad(f+".id", "%d is not a positive server id", p.ID)
		}
		if ids[p.ID] {
			bad(f+".id", "server %d listed twice", p.ID)
		}
		ids[p.ID] = true
		if p.Host == "" {
			bad(f+".host", "missing")
		}
		for name, port := range map[string]int{"client_port": p.ClientPort, "peer_port": p.PeerPort, "election_port": p.ElectionPort, "admin_port": p.AdminPort} {
			if port == 0 && unknownPortOK(name, p.ID == c.ID, len(c.Servers)) {
				continue
			}
			if port < 1 || port > 65535 {
				bad(f+"."+name, "%d is not a port", port)
			}
		}
	}
	for id := 1; id <= len(c.Servers); id++ {
		if !ids[id] {
			bad("servers", "ids must be exactly 1..%d; %d is missing", len(c.Servers), id)
		}
	}
	switch c.LinkMode {
	case "", LinksUserSpace, LinksKernel, LinksAuto:
		if c.LinkMode != "" && c.LinkPlan == "" {
			bad("link_mode", "%q without a link_plan", c.LinkMode)
		}
	default:
		bad("link_mode", "%q is not %s, %s or %s", c.LinkMode, LinksUserSpace, LinksKernel, LinksAuto)
	}
	if c.LinkDev != "" && (c.LinkMode == "" || c.LinkMode == LinksUserSpace) {
		bad("link_dev", "only for link_mode %s or %s", LinksKernel, LinksAuto)
	}
	if c.ListenHost != "" && net.ParseIP(c.ListenHost) == nil {
		bad("listen_host", "%q is not an IP address", c.ListenHost)
	}
	if len(c.Servers) == 0 {
		bad("servers", "missing")
	}
	if !ids[c.ID] {
		bad("id", "%d is not one of the servers", c.ID)
	}
	if c.DataDir == "" {
		bad("data_dir", "missing")
	}
	if err := c.Oracle.Check(len(c.Servers)); err != nil {
		bad("oracle", "%v", err)
	}
	if c.InitialLeader != 0 && !ids[c.InitialLeader] {
		bad("initial_leader", "%d is not one of the servers", c.InitialLeader)
	}
	if c.Tick < 0 || c.Heartbeat < 0 || c.MinSessionTimeout < 0 || c.MaxSessionTimeout < 0 || c.ContainerCheck < 0 {
		bad("tick/heartbeat/session timeouts", "must not be negative")
	}
	if c.MinSessionTimeout > c.MaxSessionTimeout {
		bad("min_session_timeout", "%v is above max_session_timeout %v", time.Duration(c.MinSessionTimeout), time.Duration(c.MaxSessionTimeout))
	}
	if c.SnapWindow < 0 {
		bad("snap_window", "%d is negative", c.SnapWindow)
	}
	if c.InitLimit < 0 {
		bad("init_limit", "%v is negative", time.Duration(c.InitLimit))
	}
	if c.PreloadMB < 0 {
		bad("preload_mb", "%d is negative", c.PreloadMB)
	}
	return errors.Join(errs...)
}

// unknownPortOK says whether a port may be 0: a peer's client and admin ports are
// nobody's business here (a zoo.cfg names only this server's), and a lone server's
// peer ports are the kernel's to pick.
func unknownPortOK(name string, self bool, servers int) bool {
	switch name {
	case "client_port", "admin_port":
		return !self
	}
	return servers == 1
}

// LoadConfig reads a JSON config file, applies defaults and validates it. Errors name
// the file and, for syntax errors, the line.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		off := dec.InputOffset()
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		if errors.As(err, &se) {
			off = se.Offset
		} else if errors.As(err, &te) {
			off = te.Offset
		}
		return nil, fmt.Errorf("%s:%d: %w", path, 1+bytes.Count(b[:min(int(off), len(b))], []byte("\n")), err)
	}
	c.Defaults()
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}
