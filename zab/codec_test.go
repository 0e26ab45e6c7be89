package zab

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// sampleMessages covers every type and field.
func sampleMessages() []Message {
	e := []Entry{{Txn: Txn{Zxid: MakeZxid(2, 1), Data: []byte("set /a 1")}, Origin: 3, ReqID: 77},
		{Txn: Txn{Zxid: MakeZxid(2, 2), Data: []byte{}}, Origin: 0, ReqID: 0}}
	sum := Summary{Last: MakeZxid(2, 9), Base: MakeZxid(1, 4), EpochEnds: []Zxid{MakeZxid(1, 8), MakeZxid(2, 9)}}
	return []Message{
		{Type: MsgFollowerInfo, From: 2, To: 1, Epoch: 3},
		{Type: MsgLeaderInfo, From: 1, To: 2, Epoch: 4},
		{Type: MsgAckEpoch, From: 2, To: 1, Epoch: 4, CurrentEpoch: 2, Fresh: true, Summary: sum},
		{Type: MsgFetch, From: 1, To: 2, Epoch: 4, Summary: sum},
		{Type: MsgTrunc, From: 1, To: 2, Epoch: 4, Zxid: MakeZxid(1, 7)},
		{Type: MsgSnap, From: 1, To: 2, Epoch: 4, Zxid: MakeZxid(2, 9)},
		{Type: MsgSnapChunk, From: 1, To: 2, Epoch: 4, Zxid: MakeZxid(2, 9), Seq: 5, Last: true, Data: []byte("chunk")},
		{Type: MsgDiff, From: 1, To: 2, Epoch: 4, Zxid: MakeZxid(1, 9), Entries: e},
		{Type: MsgFetchDone, From: 2, To: 1, Epoch: 4, Zxid: MakeZxid(2, 9)},
		{Type: MsgNewLeader, From: 1, To: 2, Epoch: 4, Zxid: MakeZxid(2, 9)},
		{Type: MsgAck, From: 2, To: 1, Epoch: 4, Zxid: MakeZxid(4, 1<<31)},
		{Type: MsgUpToDate, From: 1, To: 2, Epoch: 4, Zxid: MakeZxid(2, 9)},
		{Type: MsgProposal, From: 1, To: 2, Epoch: 4, Zxid: MakeZxid(4, 0), Entries: e[:1]},
		{Type: MsgCommit, From: 1, To: 2, Epoch: 4, Zxid: MakeZxid(4, 1)},
		{Type: MsgRequest, From: 2, To: 1, Epoch: 4, ReqID: 1<<63 + 5, Data: bytes.Repeat([]byte{0xab}, 300)},
		{Type: MsgPing, From: 1, To: 2, Epoch: 4, Zxid: MakeZxid(4, 1)},
		{Type: MsgPong, From: 2, To: 1, Epoch: 4},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, m := range sampleMessages() {
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		if len(b) != m.EncodedSize() {
			t.Fatalf("%v: EncodedSize %d, encoding %d bytes", m, m.EncodedSize(), len(b))
		}
		var got Message
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		b2, _ := got.MarshalBinary()
		if !bytes.Equal(b, b2) || got.Type != m.Type || got.Zxid != m.Zxid || len(got.Entries) != len(m.Entries) ||
			!reflect.DeepEqual(got.Summary, m.Summary) || !bytes.Equal(got.Data, m.Data) {
			t.Fatalf("round trip of %v gave %v", m, got)
		}
		for i := range m.Entries {
			if got.Entries[i].Zxid != m.Entries[i].Zxid || got.Entries[i].Origin != m.Entries[i].Origin ||
				got.Entries[i].ReqID != m.Entries[i].ReqID || !bytes.Equal(got.Entries[i].Data, m.Entries[i].Data) {
				t.Fatalf("entry %d of %v", i, m)
			}
		}
		// UnmarshalShared decodes the same message, its data aliasing b.
		var shared Message
		if err := shared.UnmarshalShared(b); err != nil || !reflect.DeepEqual(shared, got) {
			t.Fatalf("%v: shared decoding gave %v, %v", m, shared, err)
		}
		if len(m.Data) > 0 {
			b[len(b)-1]++
			if shared.Data[len(shared.Data)-1] != b[len(b)-1] || got.Data[len(got.Data)-1] == b[len(b)-1] {
				t.Fatalf("%v: shared data does not alias its input, or copied data does", m)
			}
		}
	}
}

// The wire format is pinned by a golden file so an accidental change shows.
func TestCodecGolden(t *testing.T) {
	var b strings.Builder
	for _, m := range sampleMessages() {
		enc, _ := m.MarshalBinary()
		b.WriteString(m.Type.String() + " " + hex.EncodeToString(enc) + "\n")
	}
	const path = "testdata/wire.golden"
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Fatalf("wire format changed (run with -update if intended):\n%s", b.String())
	}
}

func TestCodecRejects(t *testing.T) {
	good, _ := (&Message{Type: MsgDiff, From: 1, To: 2, Entries: []Entry{{Txn: Txn{Zxid: 5, Data: []byte("x")}}}}).MarshalBinary()
	for name, b := range map[string][]byte{
		"empty":         nil,
		"version":       append([]byte{9}, good[1:]...),
		"type":          append([]byte{good[0], 0}, good[2:]...),
		"flags":         append([]byte{good[0], good[1], 0x80}, good[3:]...),
		"truncated":     good[:len(good)-2],
		"trailing":      append(append([]byte{}, good...), 0),
		"huge count":    {1, byte(MsgDiff), 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"epoch too big": {1, byte(MsgPing), 0, 1, 2, 0xff, 0xff, 0xff, 0xff, 0x7f},
	} {
		var m Message
		if err := m.UnmarshalBinary(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	if _, err := (&Message{}).MarshalBinary(); err == nil {
		t.Error("type 0 encoded")
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, m := range sampleMessages() {
		b, _ := m.MarshalBinary()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Message
		if err := m.UnmarshalBinary(b); err != nil {
			return
		}
		enc, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded %v does not encode: %v", m, err)
		}
		var m2 Message
		if err := m2.UnmarshalBinary(enc); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		enc2, _ := m2.MarshalBinary()
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable")
		}
	})
}

func TestChunkWriter(t *testing.T) {
	snap := Message{Type: MsgSnap, From: 1, To: 2, Epoch: 3, Zxid: 42}
	for _, tc := range []struct{ size, chunk, want int }{{0, 4, 1}, {3, 4, 1}, {4, 4, 1}, {5, 4, 2}, {8, 4, 2}, {9, 4, 3}} {
		state := bytes.Repeat([]byte{7}, tc.size)
		for _, piece := range []int{1, 3, 100} { // written a byte at a time, in odd pieces, at once
			var got []Message
			var all []byte
			w, err := NewChunkWriter(snap, tc.chunk, func(m Message) error {
				m.Data = bytes.Clone(m.Data) // the writer reuses it
				got = append(got, m)
				all = append(all, m.Data...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for b := state; len(b) > 0; b = b[min(piece, len(b)):] {
				if _, err := w.Write(b[:min(piece, len(b))]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want || !bytes.Equal(all, state) {
				t.Fatalf("size %d chunk %d pieces %d: %d chunks, %d bytes", tc.size, tc.chunk, piece, len(got), len(all))
			}
			for i, m := range got {
				if m.Type != MsgSnapChunk || m.Seq != uint32(i) || m.Last != (i == len(got)-1) || m.Zxid != 42 || m.To != 2 || m.Epoch != 3 {
					t.Fatalf("chunk %d: %v", i, m)
				}
			}
			if _, err := w.Write([]byte{1}); err == nil {
				t.Fatal("write after close accepted")
			}
		}
	}
	w, _ := NewChunkWriter(snap, 4, func(Message) error { return errors.New("link down") })
	if _, err := w.Write(make([]byte, 9)); err == nil {
		t.Fatal("send error swallowed")
	}
	if _, err := NewChunkWriter(Message{Type: MsgDiff}, 4, nil); err == nil {
		t.Fatal("chunks of a DIFF accepted")
	}
}

func TestUvarintLen(t *testing.T) {
	var buf [binary.MaxVarintLen64]byte
	for s := 0; s < 64; s++ {
		for _, v := range []uint64{1<<s - 1, 1 << s, 1<<s + 1} {
			if got, want := uvarintLen(v), binary.PutUvarint(buf[:], v); got != want {
				t.Errorf("uvarintLen(%d) = %d, want %d", v, got, want)
			}
		}
	}
	if got := uvarintLen(^uint64(0)); got != binary.MaxVarintLen64 {
		t.Errorf("uvarintLen(max) = %d", got)
	}
}
