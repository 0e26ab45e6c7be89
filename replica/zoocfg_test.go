package replica

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// kazooCfg is the zoo.cfg kazoo's test harness writes for member 2 of 3.
const kazooCfg = `
tickTime=2000
dataDir=%DATA%
clientPort=20010
maxClientCnxns=0
admin.serverPort=20013
authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
4lw.commands.whitelist=*
reconfigEnabled=true

initLimit=4
syncLimit=2
server.2=localhost:20012:20011:participant
server.1=localhost:20002:20001:participant
server.3=localhost:20022:20021:participant
peerType=participant
`

func writeZoo(t *testing.T, cfg, myid string) string {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	if myid != "" {
		os.WriteFile(filepath.Join(data, "myid"), []byte(myid), 0o644)
	}
	p := filepath.Join(dir, "zoo.cfg")
	os.WriteFile(p, []byte(strings.ReplaceAll(cfg, "%DATA%", data)), 0o644)
	return p
}

func TestLoadZooConfig(t *testing.T) {
	p := writeZoo(t, kazooCfg, "2\n")
	c, notes, err := LoadZooConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	self := c.Self()
	switch {
	case c.ID != 2 || len(c.Servers) != 3:
		t.Errorf("id %d, %d servers", c.ID, len(c.Servers))
	case self.ClientPort != 20010 || self.PeerPort != 20012 || self.ElectionPort != 20011 || self.AdminPort != 20013 || self.Host != "127.0.0.1":
		t.Errorf("self %+v", self)
	case time.Duration(c.MinSessionTimeout) != 4*time.Second || time.Duration(c.MaxSessionTimeout) != 40*time.Second:
		t.Errorf("session timeouts %v..%v, want ZooKeeper's 2..20 ticks", c.MinSessionTimeout, c.MaxSessionTimeout)
	case !slices.Equal(c.FourLetterWords, []string{"*"}):
		t.Errorf("4lw whitelist %v", c.FourLetterWords)
	case !c.SASLProvider:
		t.Errorf("authProvider.1 names the SASL provider: sasl ACLs should be valid")
	}
	for _, key := range []string{"maxClientCnxns", "reconfigEnabled", "peerType", "initLimit"} {
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, ": "+key+" ignored") }) {
			t.Errorf("no note for %s in %q", key, notes)
		}
	}
	if !strings.HasPrefix(notes[0], p+":5: maxClientCnxns ignored") {
		t.Errorf("first note %q does not name the file and line", notes[0])
	}
	// poled --config takes it as it takes its JSON, and a flag still overrides.
	fc, err := ParseFlags("poled", []string{"--config", p, "--super-digest", "super:x"}, io.Discard)
	if err != nil || fc.SuperDigest != "super:x" || fc.ID != 2 {
		t.Errorf("ParseFlags: %+v, %v", fc, err)
	}
}

func TestLoadZooConfigErrors(t *testing.T) {
	base := "dataDir=%DATA%\nclientPort=2181\nserver.1=localhost:2888:3888\nserver.2=localhost:2889:3889\n"
	for _, c := range []struct {
		name, cfg, myid, err string
	}{
		{"bad client port", strings.Replace(base, "2181", "21x81", 1), "1", ":2: clientPort: \"21x81\" is not a positive integer"},
		{"client port too big", strings.Replace(base, "2181", "70000", 1), "1", ":2: clientPort: 70000 is not a port"},
		{"bad tick", base + "tickTime=-3\n", "1", ":5: tickTime: \"-3\" is not a positive integer"},
		{"bad initLimit", base + "initLimit=soon\n", "1", ":5: initLimit:"},
		{"bad server line", base + "server.3=localhost:2890\n", "1", ":5: server.3: \"localhost:2890\" is not host:peerPort:electionPort"},
		{"server id 255", base + "server.255=h:1:2\n", "1", ":5: server.255: server id \"255\" is not 1..254"},
		{"observer", base + "server.3=h:1:2:observer\n", "1", ":5: server.3: role \"observer\": poled runs participants only"},
		{"bad extended types", base + "extendedTypesEnabled=yes please\n", "1", ":5: extendedTypesEnabled: \"yes please\" is not true or false"},
		{"no myid", base, "", "myid must name this one"},
		{"myid not listed", base, "7", "myid:1: server 7 is not among"},
		{"bad myid", base, "one", "myid:1: \"one\" is not a server id"},
		{"no data dir", "clientPort=2181\n", "", "dataDir is missing"},
		{"not key=value", base + "=oops\n", "1", ":5: \"=oops\" is not key=value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := LoadZooConfig(writeZoo(t, c.cfg, c.myid))
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %v, want one containing %q", err, c.err)
			}
		})
	}
}

// A zoo.cfg without servers is a standalone server, as QuorumPeerMain runs it.
func TestLoadZooConfigStandalone(t *testing.T) {
	c, _, err := LoadZooConfig(writeZoo(t, "dataDir=%DATA%\nclientPort=2181\n", ""))
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != 1 || len(c.Servers) != 1 || c.Self().ClientPort != 2181 || c.Self().AdminPort != 8080 || !slices.Equal(c.FourLetterWords, []string{"srvr"}) {
		t.Errorf("%+v", c)
	}
}
