package trace

import (
	"reflect"
	"testing"

	"github.com/polebench/polebench/zxid"
)

func TestLogPages(t *testing.T) {
	l := NewLog(4, 7)
	for i := range 6 {
		l.Add(Mark{Zxid: zxid.Zxid(i), At: int64(100 + i), Kind: Recv})
	}
	for _, tc := range []struct {
		name             string
		from             uint64
		max              int
		wantZxids        []uint64
		wantNext, wantLo uint64
	}{
		{"overwritten marks are counted lost", 0, 0, []uint64{2, 3, 4, 5}, 6, 2},
		{"a page of at most max", 3, 2, []uint64{3, 4}, 5, 0},
		{"caught up", 6, 0, []uint64{}, 6, 0},
		{"a cursor of an earlier life", 9, 0, []uint64{}, 6, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := l.Since(tc.from, tc.max)
			var got []uint64
			for _, m := range p.Marks {
				got = append(got, uint64(m.Zxid))
			}
			if got == nil {
				got = []uint64{}
			}
			if !reflect.DeepEqual(got, tc.wantZxids) || p.Next != tc.wantNext || p.Lost != tc.wantLo || p.Boot != 7 {
				t.Fatalf("Since(%d, %d) = zxids %v next %d lost %d boot %d; want %v next %d lost %d boot 7",
					tc.from, tc.max, got, p.Next, p.Lost, p.Boot, tc.wantZxids, tc.wantNext, tc.wantLo)
			}
		})
	}
}

func TestPageRoundTrip(t *testing.T) {
	in := Page{Boot: -5, From: 3, Next: 5, Lost: 1, Marks: []Mark{
		{Zxid: 1<<32 | 9, At: 123456789, Kind: Quorum, Peer: 4},
		{Zxid: 1<<32 | 10, At: -1, Kind: Reply},
	}}
	var out Page
	if err := out.UnmarshalBinary(in.AppendBinary(nil)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %+v, want %+v", out, in)
	}
	b := in.AppendBinary(nil)
	for name, bad := range map[string][]byte{
		"truncated":    b[:len(b)-1],
		"not a page":   append([]byte("XXXX"), b[4:]...),
		"unknown kind": append(append([]byte(nil), b[:len(b)-2]...), 99, 0),
	} {
		if err := new(Page).UnmarshalBinary(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
