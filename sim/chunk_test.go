package sim

import (
	"bytes"
	"testing"
	"weak"
)

// TestChunkShared: a snapshot streamed again reuses the chunks of the last one whose
// bytes are equal (and only those), so followers sent the same state hold one copy.
func TestChunkShared(t *testing.T) {
	held := [][]byte{bytes.Repeat([]byte{1}, 8), bytes.Repeat([]byte{2}, 8), []byte{3, 3}}
	prev := make([]sentChunk, len(held))
	for i, b := range held {
		prev[i] = sentChunk{weak.Make(&b[0]), len(b)}
	}
	prev = append(prev, sentChunk{}) // an empty last chunk
	for _, c := range []struct {
		name string
		seq  int
		data []byte
		same []byte // the held chunk it must be, or nil for a copy
	}{
		{"equal", 0, bytes.Repeat([]byte{1}, 8), held[0]},
		{"equal, another seq", 1, bytes.Repeat([]byte{2}, 8), held[1]},
		{"different bytes", 1, bytes.Repeat([]byte{1}, 8), nil},
		{"shorter", 0, bytes.Repeat([]byte{1}, 4), nil},
		{"longer than the held last chunk", 2, []byte{3, 3, 3}, nil},
		{"past the last", 4, []byte{3, 3}, nil},
		{"empty", 3, nil, nil},
	} {
		got := sharedChunk(prev, c.seq, c.data)
		if !bytes.Equal(got, c.data) {
			t.Errorf("%s: chunk is %v, want %v", c.name, got, c.data)
		}
		shared := len(got) > 0 && len(c.data) > 0 && &got[0] == &held[min(c.seq, len(held)-1)][0]
		if want := c.same != nil; shared != want {
			t.Errorf("%s: shared %v, want %v", c.name, shared, want)
		}
		if len(got) > 0 && &got[0] == &c.data[0] {
			t.Errorf("%s: the writer's buffer was kept, not copied", c.name)
		}
	}
}
