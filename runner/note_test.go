package runner

import "testing"

func TestOutOfSync(t *testing.T) {
	for _, c := range []struct {
		zxids map[int]uint64
		model int
		want  string
	}{
		{nil, 4, ""},
		{map[int]uint64{1: 0x10, 2: 0x10, 3: 0x10, 4: 0x10}, 4, ""},
		// D1 behind (its in-flight proposals died queued at the leader): no surprise.
		{map[int]uint64{1: 0x14, 2: 0x1b, 3: 0x1b, 4: 0x1b}, 4, ""},
		{map[int]uint64{4: 0x19, 3: 0x1b, 1: 0x19, 2: 0x19}, 4,
			"p3 was ahead at the crash (p1 0x19, p2 0x19, p3 0x1b, p4 0x19), so history picks it"},
	} {
		if got := outOfSync(c.zxids, c.model); got != c.want {
			t.Errorf("outOfSync(%v, %d) = %q, want %q", c.zxids, c.model, got, c.want)
		}
	}
	for _, c := range []struct{ a, b, want string }{
		{"model elects p4 with history", "", "model elects p4 with history"},
		{"", "b", "b"},
		{"a", "b", "a; b"},
	} {
		if got := joinNote(c.a, c.b); got != c.want {
			t.Errorf("joinNote(%q, %q) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}
