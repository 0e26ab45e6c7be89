package zkproto

import (
	"bufio"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Server modes as the four-letter words print them.
const (
	ModeLeader     = "leader"
	ModeFollower   = "follower"
	ModeStandalone = "standalone"
)

// NotServing is what srvr, stat and mntr print while the server has no quorum.
const NotServing = "This ZooKeeper instance is not currently serving requests\n"

// Status is what the four-letter words report about a server.
type Status struct {
	Version     string // after "Zookeeper version: "
	Serving     bool   // false: srvr, stat and mntr print NotServing
	Mode        string // ModeLeader, ModeFollower or ModeStandalone
	Zxid        int64  // last zxid applied
	NodeCount   int64
	Clients     []ClientInfo // one per open client connection (stat lists them)
	Outstanding int64        // requests received and not answered yet
	Received    int64        // packets received
	Sent        int64        // packets sent
	MinLatency  int64        // ms
	AvgLatency  float64      // ms
	MaxLatency  int64        // ms
	Watches     int64
	Ephemerals  int64
	DataSize    int64 // approximate bytes of paths and data
	Sessions    int64 // global sessions
	UptimeMs    int64
	// Env is envi's key=value lines after zookeeper.version (host.name, os.name, ...).
	Env []string
	// Leader only.
	Followers       int64
	SyncedFollowers int64
	PendingSyncs    int64
}

// ClientInfo is one connection in stat's client list. ZooKeeper counts and lists
// the four-letter-word connection itself too, with interest ops 0.
type ClientInfo struct {
	Addr        string // host:port of the client
	InterestOps int32  // 1 (read) for a session connection, 0 for the 4lw one
	Queued      int64
	Received    int64
	Sent        int64
}

// fourLetterWords are the commands ZooKeeper 3.8 knows; anything else in the first
// four bytes is a frame length.
var fourLetterWords = map[string]bool{
	"ruok": true, "srvr": true, "stat": true, "mntr": true, "conf": true, "cons": true,
	"crst": true, "dump": true, "envi": true, "gtmk": true, "stmk": true, "srst": true,
	"wchs": true, "wchc": true, "wchp": true, "dirs": true, "isro": true, "hash": true,
}

// FourLetterWord reports whether the first four bytes of a connection are a
// four-letter command rather than the length of a connect request.
func FourLetterWord(first [4]byte) (string, bool) {
	w := string(first[:])
	return w, fourLetterWords[w]
}

// Answer is the text the server writes for a four-letter word before closing the
// connection. poled answers ruok, srvr, stat, mntr, envi and isro; the others get
// ZooKeeper's not-whitelisted message.
func Answer(word string, s Status) string {
	switch word {
	case "ruok":
		return "imok"
	case "srvr":
		return FormatSrvr(s)
	case "stat":
		return FormatStat(s)
	case "mntr":
		return FormatMntr(s)
	case "envi":
		return FormatEnvi(s)
	case "isro":
		return "rw" // poled has no read-only mode
	}
	return NotWhitelisted(word)
}

// NotWhitelisted is ZooKeeper's answer to a word the whitelist leaves out.
func NotWhitelisted(word string) string {
	return word + " is not executed because it is not in the whitelist.\n"
}

// FormatEnvi is envi's text: "Environment:", then key=value lines, the version first
// (clients read the server's version from it).
func FormatEnvi(s Status) string {
	var b strings.Builder
	b.WriteString("Environment:\n")
	fmt.Fprintf(&b, "zookeeper.version=%s\n", s.Version)
	for _, kv := range s.Env {
		b.WriteString(kv + "\n")
	}
	return b.String()
}

// FormatSrvr is srvr's text.
func FormatSrvr(s Status) string { return formatStats(s, false) }

// FormatStat is stat's text: srvr's plus the client list.
func FormatStat(s Status) string { return formatStats(s, true) }

func formatStats(s Status, clients bool) string {
	if !s.Serving {
		return NotServing
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Zookeeper version: %s\n", s.Version)
	if clients {
		b.WriteString("Clients:\n")
		for _, c := range s.Clients {
			fmt.Fprintf(&b, " /%s[%x](queued=%d,recved=%d,sent=%d)\n", c.Addr, c.InterestOps, c.Queued, c.Received, c.Sent)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Latency min/avg/max: %d/%s/%d\n", s.MinLatency, javaDouble(s.AvgLatency), s.MaxLatency)
	fmt.Fprintf(&b, "Received: %d\n", s.Received)
	fmt.Fprintf(&b, "Sent: %d\n", s.Sent)
	fmt.Fprintf(&b, "Connections: %d\n", len(s.Clients))
	fmt.Fprintf(&b, "Outstanding: %d\n", s.Outstanding)
	fmt.Fprintf(&b, "Zxid: 0x%x\n", uint64(s.Zxid))
	fmt.Fprintf(&b, "Mode: %s\n", s.Mode)
	fmt.Fprintf(&b, "Node count: %d\n", s.NodeCount)
	if s.Mode == ModeLeader {
		b.WriteString("Proposal sizes last/min/max: -1/-1/-1\n")
	}
	return b.String()
}

// FormatMntr is mntr's text: tab-separated zk_ keys, the ones ZooKeeper 3.8 prints
// that poled can fill, in 3.8's order.
func FormatMntr(s Status) string {
	if !s.Serving {
		return NotServing
	}
	var b strings.Builder
	kv := func(k, v string) { fmt.Fprintf(&b, "zk_%s\t%s\n", k, v) }
	n := func(k string, v int64) { kv(k, strconv.FormatInt(v, 10)) }
	kv("version", s.Version)
	kv("server_state", s.Mode)
	n("ephemerals_count", s.Ephemerals)
	n("num_alive_connections", int64(len(s.Clients)))
	kv("avg_latency", javaDouble(s.AvgLatency))
	n("outstanding_requests", s.Outstanding)
	n("znode_count", s.NodeCount)
	n("global_sessions", s.Sessions)
	n("packets_sent", s.Sent)
	n("packets_received", s.Received)
	n("watch_count", s.Watches)
	n("min_latency", s.MinLatency)
	n("approximate_data_size", s.DataSize)
	n("uptime", s.UptimeMs)
	n("max_latency", s.MaxLatency)
	if s.Mode == ModeLeader {
		n("followers", s.Followers)
		n("synced_followers", s.SyncedFollowers)
		n("pending_syncs", s.PendingSyncs)
	}
	return b.String()
}

// javaDouble prints v as Java's Double.toString does, which is how ZooKeeper prints
// average latencies ("0.0", "2.5", "1.0E-4").
func javaDouble(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case v == 0:
		return "0.0"
	}
	if a := math.Abs(v); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'E', -1, 64) // e.g. 1E-04
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// SrvrInfo is what ParseSrvr reads from srvr (or stat) output.
type SrvrInfo struct {
	Version     string
	Mode        string
	Zxid        int64
	NodeCount   int64
	Connections int64
	Outstanding int64
	Received    int64
	Sent        int64
}

// ParseSrvr reads srvr or stat output of poled or Apache ZooKeeper (any version that
// prints "Zxid:" and "Mode:"), so one probe finds the leader on both flavors.
func ParseSrvr(text string) (SrvrInfo, error) {
	var info SrvrInfo
	if strings.HasPrefix(text, "This ZooKeeper instance is not currently serving") {
		return info, fmt.Errorf("zkproto: srvr: server not serving")
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	line := 0
	for sc.Scan() {
		line++
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		var err error
		switch k {
		case "Zookeeper version":
			info.Version = v
		case "Mode":
			info.Mode = v
		case "Zxid":
			info.Zxid, err = strconv.ParseInt(v, 0, 64)
		case "Node count":
			info.NodeCount, err = strconv.ParseInt(v, 10, 64)
		case "Connections":
			info.Connections, err = strconv.ParseInt(v, 10, 64)
		case "Outstanding":
			info.Outstanding, err = strconv.ParseInt(v, 10, 64)
		case "Received":
			info.Received, err = strconv.ParseInt(v, 10, 64)
		case "Sent":
			info.Sent, err = strconv.ParseInt(v, 10, 64)
		default:
			continue
		}
		if err != nil {
			return info, fmt.Errorf("zkproto: srvr line %d (%s): %w", line, k, err)
		}
		seen[k] = true
	}
	for _, k := range []string{"Zxid", "Mode"} {
		if !seen[k] {
			return info, fmt.Errorf("zkproto: srvr: no %q line", k)
		}
	}
	return info, nil
}
