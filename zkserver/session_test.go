package zkserver

import (
	"bytes"
	"slices"
	"testing"
	"time"
)

func TestSessionTracker(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := NewSessionTracker()
	tr.Add(1, time.Second, t0)
	tr.Add(2, 3*time.Second, t0)

	steps := []struct {
		do   func() any
		want any
	}{
		{func() any { return tr.Expire(at(999)) }, []int64(nil)},
		{func() any { return tr.Touch(1, at(500)) }, true}, // 1 now lives until 1500
		{func() any { return tr.Touch(1, at(100)) }, true}, // an older touch never shortens a life
		{func() any { return tr.Expire(at(1499)) }, []int64(nil)},
		{func() any { return tr.Expire(at(1500)) }, []int64{1}},
		{func() any { return tr.Expire(at(1600)) }, []int64(nil)}, // already being expired
		{func() any { return tr.Touch(1, at(1600)) }, false},      // too late to touch
		{func() any { tr.Retry(1); return tr.Expire(at(1700)) }, []int64{1}},
		{func() any { tr.Add(3, time.Second, at(2000)); return tr.Expire(at(5000)) }, []int64{2, 3}},
		{func() any { tr.Remove(1); tr.Remove(2); return tr.Len() }, 1},
		{func() any { return tr.Touch(9, at(0)) }, false},
	}
	for i, s := range steps {
		got := s.do()
		if g, ok := got.([]int64); ok {
			if !slices.Equal(g, s.want.([]int64)) {
				t.Fatalf("step %d: %v, want %v", i, g, s.want)
			}
			continue
		}
		if got != s.want {
			t.Fatalf("step %d: %v, want %v", i, got, s.want)
		}
	}
}

func TestSessionIDsAndPasswords(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	a, b := newSessionIDs(3, now), newSessionIDs(4, now)
	x, y := a.nextID(), a.nextID()
	if x>>56 != 3 || y != x+1 || b.nextID()>>56 != 4 {
		t.Fatalf("ids %x %x", x, y)
	}
	later := newSessionIDs(3, now.Add(time.Second)).nextID()
	if later <= y+1000 {
		t.Fatalf("a restart a second later reuses the id space: %x after %x", later, y)
	}
	p := sessionPassword([]byte("k"), x)
	if len(p) != 16 || !checkPassword([]byte("k"), x, p) {
		t.Fatal("password does not check")
	}
	if checkPassword([]byte("k"), y, p) || checkPassword([]byte("other"), x, p) || bytes.Equal(p, sessionPassword([]byte("k"), y)) {
		t.Fatal("password not tied to id and secret")
	}
}
