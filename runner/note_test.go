package runner

import "testing"

func TestAheadNote(t *testing.T) {
	got := aheadNote(map[int]uint64{4: 0x19, 3: 0x1b, 1: 0x19, 2: 0x19}, 3)
	want := "p3 was ahead at the crash (p1 0x19, p2 0x19, p3 0x1b, p4 0x19), so history picks it"
	if got != want {
		t.Errorf("aheadNote = %q, want %q", got, want)
	}
}
