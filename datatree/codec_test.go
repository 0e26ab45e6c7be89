package datatree

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/polebench/polebench/zab"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (format change? run with -update if intended)\n got:\n%s\nwant:\n%s", p, got, want)
	}
}

// sampleTxns covers every op type and field.
func sampleTxns() []Txn {
	return []Txn{
		{Session: 0x1000000000000abc, Time: 1700000000123, Op: CreateSession(30000)},
		{Session: 0x1000000000000abc, Time: 1700000000124, Op: Create("/a", []byte("hello"), Persistent)},
		{Session: 0x1000000000000abc, Time: 1700000000125, Op: Create("/a/e-", nil, EphemeralSequential)},
		{Session: 7, Time: -1, Op: Create("/ü", []byte{0, 1, 2}, Ephemeral)},
		{Time: 1, Op: Create("/s", nil, PersistentSequential)},
		{Time: 2, Op: Delete("/a/b", -1)},
		{Time: 3, Op: Delete("/a/b", 2147483647)},
		{Time: 4, Op: SetData("/a", []byte("x"), 5)},
		{Time: 5, Op: Check("/a", -1)},
		{Session: 9, Time: 6, Op: Multi(Create("/m", []byte("1"), Persistent), SetData("/m", nil, 0), Check("/m", 1), Delete("/m", -1))},
		{Time: 7, Op: Multi()},
		{Session: 0x1000000000000abc, Time: 8, Op: CloseSession()},
		{Time: 9, Op: Noop()},
		{Session: 5, Time: 10, Auth: []ID{{"ip", "127.0.0.1"}, {"digest", "u:h="}},
			Op: CreateACL("/p", nil, Persistent, []ACL{{PermRead, Anyone}, {PermAll, ID{"digest", "u:h="}}})},
		{Session: 5, Time: 11, Op: SetACL("/p", []ACL{{PermAll, ID{"auth", ""}}}, 3)},
	}
}

// A txn keeps null data apart from empty data.
func TestTxnNullData(t *testing.T) {
	for _, data := range [][]byte{nil, {}} {
		for _, shared := range []bool{false, true} {
			var got Txn
			b := Txn{Op: SetData("/a", data, -1)}.Marshal()
			var err error
			if shared {
				err = got.UnmarshalShared(b)
			} else {
				err = got.Unmarshal(b)
			}
			if err != nil || (got.Data == nil) != (data == nil) || len(got.Data) != 0 {
				t.Errorf("data %#v (shared %v) decodes as %#v, %v", data, shared, got.Data, err)
			}
		}
	}
}

// Logs written before ACLs (txn version 1) still decode, as the same txns.
func TestTxnVersion1(t *testing.T) {
	b, err := os.ReadFile("testdata/txn.v1.golden")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	samples := sampleTxns()
	for i, line := range lines {
		raw, err := hex.DecodeString(strings.Fields(line)[1])
		if err != nil {
			t.Fatal(err)
		}
		got, err := UnmarshalTxn(raw)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		want := samples[i]
		want.Op, got.Op = normal(want.Op), normal(got.Op)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("line %d\n got %+v\nwant %+v", i+1, got, want)
		}
	}
}

// normal makes empty and nil slices compare equal.
func normal(o Op) Op {
	if len(o.Data) == 0 {
		o.Data = nil
	}
	if len(o.Ops) == 0 {
		o.Ops = nil
	}
	for i := range o.Ops {
		o.Ops[i] = normal(o.Ops[i])
	}
	return o
}

func TestTxnRoundTripAndGolden(t *testing.T) {
	var out strings.Builder
	for _, txn := range sampleTxns() {
		b := txn.Marshal()
		got, err := UnmarshalTxn(b)
		if err != nil {
			t.Fatalf("%v: %v", txn.Type, err)
		}
		txn.Op = normal(txn.Op)
		got.Op = normal(got.Op)
		if !reflect.DeepEqual(got, txn) {
			t.Errorf("round trip\n got %+v\nwant %+v", got, txn)
		}
		fmt.Fprintf(&out, "%-13v %s\n", txn.Type, hex.EncodeToString(b))
	}
	golden(t, "txn.golden", []byte(out.String()))
}

func TestUnmarshalRejects(t *testing.T) {
	for _, txn := range sampleTxns() {
		b := txn.Marshal()
		for n := range len(b) { // every truncation
			if _, err := UnmarshalTxn(b[:n]); !errors.Is(err, ErrTxnCorrupt) {
				t.Errorf("%v truncated to %d: %v", txn.Type, n, err)
			}
		}
		if _, err := UnmarshalTxn(append(b, 0)); !errors.Is(err, ErrTxnCorrupt) {
			t.Errorf("%v with a trailing byte: %v", txn.Type, err)
		}
	}
	hdr := (&Txn{}).Marshal()[:10] // version, session, time
	cases := map[string][]byte{
		"version":      {2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"op type":      append(hdr[:len(hdr):len(hdr)], 99),
		"create mode":  append(hdr[:len(hdr):len(hdr)], byte(OpCreate), 2, '/', 'a', 9, 0),
		"nested multi": append(hdr[:len(hdr):len(hdr)], byte(OpMulti), 1, byte(OpMulti), 0),
		"session op":   append(hdr[:len(hdr):len(hdr)], byte(OpMulti), 1, 0xf5),
		"huge count":   append(hdr[:len(hdr):len(hdr)], byte(OpMulti), 0xff, 0xff, 0xff, 0xff, 0x0f),
		"huge data":    append(hdr[:len(hdr):len(hdr)], byte(OpCreate), 2, '/', 'a', 0, 0xff, 0xff, 0xff, 0xff, 0x0f),
		"version size": append(hdr[:len(hdr):len(hdr)], byte(OpDelete), 2, '/', 'a', 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
	}
	for name, b := range cases {
		if _, err := UnmarshalTxn(b); !errors.Is(err, ErrTxnCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestUnmarshalCopiesData(t *testing.T) {
	b := Txn{Op: Create("/a", []byte("abc"), Persistent)}.Marshal()
	txn, err := UnmarshalTxn(b)
	if err != nil {
		t.Fatal(err)
	}
	clear(b)
	if string(txn.Data) != "abc" || txn.Path != "/a" {
		t.Errorf("decoded txn aliases its input: %+v", txn)
	}
}

// TestUnmarshalShared: the same transactions as Unmarshal, with data that is the
// input's own bytes (no copy), capped so that appending to it cannot reach them.
func TestUnmarshalShared(t *testing.T) {
	for _, txn := range sampleTxns() {
		b := txn.Marshal()
		want, err := UnmarshalTxn(b)
		if err != nil {
			t.Fatal(err)
		}
		var got Txn
		if err := got.UnmarshalShared(b); err != nil {
			t.Fatalf("%v: %v", txn.Type, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v: shared\n got %+v\nwant %+v", txn.Type, got, want)
		}
	}
	b := Txn{Op: Create("/a", []byte("abc"), Persistent)}.Marshal()
	var txn Txn
	if err := txn.UnmarshalShared(b); err != nil {
		t.Fatal(err)
	}
	b[bytes.Index(b, []byte("abc"))] = 'x'
	if string(txn.Data) != "xbc" || cap(txn.Data) != 3 {
		t.Errorf("data %q (cap %d): want the input's own 3 bytes", txn.Data, cap(txn.Data))
	}
}

// randomTxns makes a reproducible mix of every op over a small namespace, so
// that successes and each kind of failure all occur.
func randomTxns(seed uint64, n int) []Txn {
	r := rand.New(rand.NewPCG(seed, 1))
	paths := []string{"/a", "/b", "/a/x", "/a/y", "/b/z", "/a/x/q", "/zookeeper", "/", "/a/", "//bad"}
	sessions := []int64{0, 11, 22, 33}
	path := func() string { return paths[r.IntN(len(paths))] }
	version := func() int32 { return int32(r.IntN(4)) - 1 }
	data := func() []byte {
		d := make([]byte, r.IntN(40))
		for i := range d {
			d[i] = byte(r.Uint32())
		}
		return d
	}
	simple := func() Op {
		switch r.IntN(5) {
		case 0, 1:
			return Create(path(), data(), CreateMode(r.IntN(4)))
		case 2:
			return Delete(path(), version())
		case 3:
			return SetData(path(), data(), version())
		default:
			return Check(path(), version())
		}
	}
	out := make([]Txn, n)
	for i := range out {
		txn := Txn{Session: sessions[r.IntN(len(sessions))], Time: int64(1000 + i)}
		switch k := r.IntN(20); {
		case k == 0:
			txn.Op = CreateSession(int32(1000 + r.IntN(5000)))
		case k == 1:
			txn.Op = CloseSession()
		case k == 2:
			txn.Op = Noop()
		case k < 6:
			ops := make([]Op, r.IntN(4))
			for j := range ops {
				ops[j] = simple()
			}
			txn.Op = Multi(ops...)
		default:
			txn.Op = simple()
		}
		out[i] = txn
	}
	return out
}

// Two trees fed the same txns agree on every result and on every snapshot
// byte, whether the txns arrive as values or encoded; a tree loaded from a
// snapshot midway carries on exactly like the original.
func TestDeterminism(t *testing.T) {
	txns := randomTxns(42, 3000)
	a, b := New(), New()
	var loaded *Tree
	codes := map[Code]int{}
	for i, txn := range txns {
		z := zab.Zxid(i + 1)
		ra := a.Apply(z, txn)
		rb, err := b.ApplyEncoded(zab.Txn{Zxid: z, Data: txn.Marshal()})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ra, rb) {
			t.Fatalf("txn %d: results differ\n%+v\n%+v", i, ra, rb)
		}
		if loaded != nil {
			if rl := loaded.Apply(z, txn); !reflect.DeepEqual(ra, rl) {
				t.Fatalf("txn %d: loaded tree differs\n%+v\n%+v", i, ra, rl)
			}
		}
		codes[ra.Err]++
		if i == len(txns)/2 {
			loaded = New()
			if err := loaded.ReadSnapshot(bytes.NewReader(snapshotBytes(t, a))); err != nil {
				t.Fatal(err)
			}
		}
	}
	sa, sb, sl := snapshotBytes(t, a), snapshotBytes(t, b), snapshotBytes(t, loaded)
	if !bytes.Equal(sa, sb) || !bytes.Equal(sa, sl) {
		t.Fatalf("snapshots differ")
	}
	if a.ApproximateSize() != loaded.ApproximateSize() || a.EphemeralCount() != loaded.EphemeralCount() || a.NodeCount() != loaded.NodeCount() {
		t.Errorf("accounting differs: %d/%d %d/%d %d/%d", a.ApproximateSize(), loaded.ApproximateSize(),
			a.EphemeralCount(), loaded.EphemeralCount(), a.NodeCount(), loaded.NodeCount())
	}
	// The workload must have exercised the interesting paths.
	for _, c := range []Code{Ok, NoNode, NodeExists, BadVersion, NotEmpty, BadArguments, SessionExpired, NoChildrenForEphemerals} {
		if codes[c] == 0 {
			t.Errorf("random workload never produced %v: %v", c, codes)
		}
	}
}
