package zkproto

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// frame is one line of testdata/real-zk-3.8.frames: bytes a real client sent to, or
// real ZooKeeper 3.8 sent back.
type frame struct {
	line   int
	client bool
	label  string
	data   []byte
}

func loadFrames(t testing.TB) [][]frame {
	t.Helper()
	f, err := os.Open("testdata/real-zk-3.8.frames")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var conns [][]frame
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if line == "conn" {
			conns = append(conns, nil)
			continue
		}
		parts := strings.Fields(line)
		if len(parts) != 3 || len(conns) == 0 {
			t.Fatalf("frames line %d: malformed %q", n, line)
		}
		b, err := hex.DecodeString(parts[2])
		if err != nil {
			t.Fatalf("frames line %d: %v", n, err)
		}
		conns[len(conns)-1] = append(conns[len(conns)-1], frame{n, parts[0] == "C", parts[1], b})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return conns
}

func opByName(t *testing.T, name string) Op {
	for op, n := range opNames {
		if n == name {
			return op
		}
	}
	if name == "unknown" {
		return 999
	}
	t.Fatalf("no op named %q", name)
	return 0
}

// TestRealFrames decodes every frame real ZooKeeper 3.8 and its clients exchanged and
// re-encodes it: the bytes must come back identical, so our encoding is ZooKeeper's.
func TestRealFrames(t *testing.T) {
	conns := loadFrames(t)
	seen := map[string]bool{}
	for _, conn := range conns {
		for _, f := range conn {
			seen[f.label] = true
			var got []byte
			switch {
			case f.label == "malformed-connect":
				if _, err := DecodeConnectRequest(f.data); err == nil {
					t.Errorf("line %d: malformed connect decoded", f.line)
				}
				continue
			case f.label == "malformed":
				if _, _, err := DecodeRequest(f.data); err == nil {
					t.Errorf("line %d: malformed request decoded", f.line)
				}
				continue
			case f.label == "connect" && f.client:
				r, err := DecodeConnectRequest(f.data)
				if err != nil {
					t.Fatalf("line %d: %v", f.line, err)
				}
				got = Marshal(&r)
			case f.label == "connect":
				var r ConnectResponse
				if err := Unmarshal(f.data, &r); err != nil {
					t.Fatalf("line %d: %v", f.line, err)
				}
				got = Marshal(&r)
			case f.client:
				h, body, err := DecodeRequest(f.data)
				if err != nil {
					t.Fatalf("line %d: %v", f.line, err)
				}
				if want := opByName(t, f.label); h.Type != want {
					t.Errorf("line %d: type %v, want %v", f.line, h.Type, want)
				}
				got = EncodeRequest(h, body)
			default:
				op := OpNotify
				if f.label != "event" {
					op = opByName(t, f.label)
				}
				h, body, err := DecodeReply(op, f.data)
				if err != nil {
					t.Fatalf("line %d: %v", f.line, err)
				}
				if (f.label == "event") != (h.Xid == XidWatchEvent) {
					t.Errorf("line %d: xid %d for a %s", f.line, h.Xid, f.label)
				}
				got = AppendReply(nil, h, body)[4:]
			}
			if !bytes.Equal(got, f.data) {
				t.Errorf("line %d (%s): re-encoded\n got %x\nwant %x", f.line, f.label, got, f.data)
			}
		}
	}
	// The capture must cover what poled serves; a thinner capture would weaken the test.
	for _, l := range []string{"connect", "create", "create2", "delete", "exists", "getData", "setData",
		"getChildren", "getChildren2", "multi", "sync", "ping", "setWatches", "auth", "closeSession",
		"event", "getACL", "malformed", "malformed-connect"} {
		if !seen[l] {
			t.Errorf("capture has no %q frame", l)
		}
	}
}

// TestRealMultiFailure checks the decoded content of a failed multi from the capture:
// the per-op error layout ZooKeeper uses, which FailedMulti must reproduce.
func TestRealMultiFailure(t *testing.T) {
	for _, conn := range loadFrames(t) {
		for _, f := range conn {
			if f.client || f.label != "multi" {
				continue
			}
			_, body, err := DecodeReply(OpMulti, f.data)
			if err != nil {
				t.Fatal(err)
			}
			res := body.(*MultiResponse).Results
			if len(res) != 3 || res[0].Type != OpError {
				continue
			}
			want := FailedMulti(3, 1, CodeBadVersion)
			for i := range want {
				if res[i].Type != want[i].Type || res[i].Err != want[i].Err {
					t.Errorf("result %d: %+v, want %+v", i, res[i], want[i])
				}
			}
			e := NewEncoder(nil)
			(&MultiResponse{Results: want}).Encode(e)
			if !bytes.Equal(e.Bytes(), f.data[ReplyHeaderSize:]) {
				t.Errorf("FailedMulti encodes\n %x\nwant %x", e.Bytes(), f.data[ReplyHeaderSize:])
			}
			return
		}
	}
	t.Fatal("capture has no failed multi of 3 ops")
}
