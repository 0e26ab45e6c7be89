// Package zookeeper is the ZooKeeper flavor, Apache ZooKeeper as the baseline:
// Debian's zookeeper package (3.8), one JVM per server started with the package's jar,
// configured by a zoo.cfg and myid the harness writes. It runs on the local backend
// (JVMs on loopback, NewLocal) and on the netns backend (a JVM per namespace on the
// netns bridge, NewNetns), and registers itself on both. What the two share is here:
// the configuration, the command line, the start order, the user-space links
// (proxy.go), the servers' timelines read off their logs (events.go), the warm-up
// (warm.go), and the removal of a crashed harness's JVMs (down.go).
package zookeeper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/polebench/polebench/cluster"
	"github.com/polebench/polebench/cluster/internal/logtail"
	"github.com/polebench/polebench/topology"
)

// Jar is the server jar of Debian's libzookeeper-java; its manifest's
// Class-Path names every dependency.
const Jar = "/usr/share/java/zookeeper.jar"

// logJar gives ZooKeeper's slf4j a console binding: the log the timelines are read from.
const logJar = "/usr/share/java/slf4j-simple.jar"

// labelProp marks a JVM with the cluster's label on its command line, so that
// `polebench cluster down` finds a crashed harness's servers.
const labelProp = "-Dpolebench.label="

const (
	tickTime = 2 * time.Second // ZooKeeper's shipped default (zoo_sample.cfg)
	heapMB   = 1000            // zkServer.sh's default ZK_SERVER_HEAP
)

// Available returns nil if Apache ZooKeeper can run here, else why not.
func Available() error {
	if _, err := exec.LookPath("java"); err != nil {
		return errors.New("flavor zookeeper: java not found: install the Debian package zookeeper (it pulls in default-jre)")
	}
	for _, jar := range []string{Jar, logJar} {
		if _, err := os.Stat(jar); err != nil {
			return fmt.Errorf("flavor zookeeper: %s missing: install the Debian packages zookeeper and libslf4j-java", jar)
		}
	}
	return nil
}

// hostPorts is where a server's ports are, or how a peer's zoo.cfg names them.
type hostPorts struct {
	Host                     string
	Client, Quorum, Election int
}

func (a hostPorts) client() string { return net.JoinHostPort(a.Host, strconv.Itoa(a.Client)) }

// ensemble is a ZooKeeper replica set's configuration and user-space links.
type ensemble struct {
	log   *slog.Logger
	label string
	topo  *topology.Topology
	fsync bool
	root  string            // server id keeps zoo.cfg and data/ in root/p<ID>, its log in root/p<ID>.log
	addrs map[int]hostPorts // where each server binds
	// names[i][j] is how server i's zoo.cfg names server j: j itself, or i's proxy to j.
	names   map[int]map[int]hostPorts
	links   *proxies // nil without user-space links
	watcher *logtail.Tailer
}

func newEnsemble(opts cluster.Options, label, root string, addrs map[int]hostPorts) *ensemble {
	// Each JVM runs in its own directory and reads its zoo.cfg by path: a relative
	// results directory (the default, ./results) must not leave it looking elsewhere.
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	e := &ensemble{log: opts.Logger, label: label, topo: opts.Topology, fsync: opts.Fsync, root: root,
		addrs: addrs, names: map[int]map[int]hostPorts{}}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	for i := range addrs {
		e.names[i] = map[int]hostPorts{}
		for j, a := range addrs {
			e.names[i][j] = a
		}
	}
	e.watcher = newWatcher(e)
	return e
}

func (e *ensemble) ids() []int { return e.topo.Servers() }

func (e *ensemble) dir(id int) string     { return filepath.Join(e.root, "p"+strconv.Itoa(id)) }
func (e *ensemble) logFile(id int) string { return e.dir(id) + ".log" }

// writeConfigs writes every server's zoo.cfg and myid.
func (e *ensemble) writeConfigs() error {
	for _, id := range e.ids() {
		if err := e.writeConfig(id); err != nil {
			return err
		}
	}
	return nil
}

func (e *ensemble) writeConfig(id int) error {
	dir := e.dir(id)
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	sync := "no"
	if e.fsync {
		sync = "yes"
	}
	self := e.addrs[id]
	var b strings.Builder
	fmt.Fprintf(&b, "# written by polebench for p%d\ntickTime=%d\ninitLimit=10\nsyncLimit=5\n", id, tickTime.Milliseconds())
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%d\nclientPortAddress=%s\n", data, self.Client, self.Host)
	fmt.Fprintf(&b, "forceSync=%s\nadmin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\n", sync)
	// No dynamic reconfiguration: a server must keep naming its peers through its
	// own links, whatever configuration a leader sends it.
	fmt.Fprintf(&b, "reconfigEnabled=false\nstandaloneEnabled=false\n")
	for _, j := range e.ids() {
		a := e.names[id][j]
		fmt.Fprintf(&b, "server.%d=%s:%d:%d\n", j, a.Host, a.Quorum, a.Election)
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(id)+"\n"), 0o644); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	return nil
}

// command is server id's JVM, as zkServer.sh starts it (its heap), logging through
// slf4j-simple with millisecond wall-clock timestamps (what the timelines read). Each
// JVM sizes its GC and compiler threads for its share of the host's cores (as poled
// gets GOMAXPROCS on the docker backend): with every JVM sizing for all of them, two-dc
// landed further above the model before the crash than with a share.
func (e *ensemble) command(id int) *exec.Cmd {
	cmd := exec.Command("java",
		fmt.Sprintf("-Xmx%dm", heapMB), "-Djava.net.preferIPv4Stack=true",
		fmt.Sprintf("-XX:ActiveProcessorCount=%d", max(1, runtime.NumCPU()/len(e.ids()))),
		"-Dzookeeper.admin.enableServer=false",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat="+logTimeJava,
		labelProp+e.label,
		"-cp", Jar+":"+logJar,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(e.dir(id), "zoo.cfg"))
	cmd.Dir = e.dir(id)
	return cmd
}

// openLog opens server id's log for appending and marks a new start in it.
func (e *ensemble) openLog(id, start int) (*os.File, error) {
	f, err := os.OpenFile(e.logFile(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err // procs.Set.Spawn names the backend and the server
	}
	logtail.MarkStart(f, start, id)
	return f, nil
}

// startOrder is the order to start the servers in: ZooKeeper's first election picks
// the highest id among servers with equal zxids only if that server takes part from
// the start, so it starts first and the others once it listens for elections.
func (e *ensemble) startOrder() []int {
	ids := slices.Clone(e.ids())
	slices.Reverse(ids)
	return ids
}

// close stops the links and the watcher.
func (e *ensemble) close() {
	e.watcher.Stop()
	if e.links != nil {
		e.links.close()
	}
}

// electionRewrite returns a Rewrite for an election-port proxy: ZooKeeper's first
// message on an election connection (QuorumCnxManager's InitialMessage: protocol
// version, sid, then the sender's own election address) makes a receiver with the
// higher id drop the connection and dial back that address, past the links. The proxy
// puts the address of the back link (the receiver's proxy to the sender) in its place.
func electionRewrite(back string) func(r io.Reader) ([]byte, error) {
	return func(r io.Reader) ([]byte, error) {
		var hdr [8]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, err
		}
		if int64(binary.BigEndian.Uint64(hdr[:])) >= 0 {
			return hdr[:], nil // before 3.5: the sid alone
		}
		var rest [12]byte // sid, then the address's length
		if _, err := io.ReadFull(r, rest[:]); err != nil {
			return nil, err
		}
		n := binary.BigEndian.Uint32(rest[8:])
		if n == 0 || n > 2048 { // ZooKeeper's own bound (QuorumCnxManager.maxBuffer)
			return nil, fmt.Errorf("election handshake: address of %d bytes", n)
		}
		if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
			return nil, err
		}
		out := append(hdr[:], rest[:8]...)
		out = binary.BigEndian.AppendUint32(out, uint32(len(back)))
		return append(out, back...), nil
	}
}
