package storage

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/zab"
)

func ltxn(z int) zab.Txn {
	return zab.Txn{Zxid: zab.Zxid(z), Data: []byte(fmt.Sprintf("value-%04d", z))}
}

// syncedLog writes 1..synced and syncs, then synced+1..written without a sync, and
// leaves the log as a killed process does (its buffer written, nothing more synced).
func syncedLog(t *testing.T, dir string, synced, written int, seg int64) {
	t.Helper()
	l, err := OpenLog(dir, LogOptions{Fsync: true, TrackSynced: true, SegmentSize: seg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for z := 1; z <= written; z++ {
		if err := l.Append(ltxn(z)); err != nil {
			t.Fatal(err)
		}
		if z == synced {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	l.w.Flush() // in the page cache, not synced
	l.f.Close()
}

func TestLoseUnsynced(t *testing.T) {
	for _, seg := range []int64{0, 100} { // one segment; a roll every few records
		for _, tear := range []bool{false, true} {
			t.Run(fmt.Sprintf("seg=%d,tear=%v", seg, tear), func(t *testing.T) {
				dir := t.TempDir()
				syncedLog(t, dir, 7, 12, seg)
				cut, err := LoseUnsynced(dir, tear)
				if err != nil || cut <= 0 {
					t.Fatalf("cut %d bytes, err %v", cut, err)
				}
				var warn strings.Builder
				l, err := OpenLog(dir, LogOptions{Fsync: true, TrackSynced: true, SegmentSize: seg}, slog.New(slog.NewTextHandler(&warn, nil)))
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				// A roll syncs the segment it closes: with rolls, more survives.
				if last := l.LastZxid(); last != 7 && seg == 0 || last < 7 || last >= 12 {
					t.Errorf("last zxid %v after losing what was not synced, want 7 (or up to a roll's sync)", last)
				}
				if tear && seg == 0 && !strings.Contains(warn.String(), "cutting torn log tail") {
					t.Errorf("a torn tail was not cut by its checksum: %q", warn.String())
				}
				// The log goes on from there.
				if err := l.Append(ltxn(int(l.LastZxid()) + 1)); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// A log without the synced file (fsync off) loses nothing.
func TestLoseUnsyncedUntracked(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenLog(dir, LogOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Append(ltxn(1))
	l.Sync()
	l.Close()
	if cut, err := LoseUnsynced(dir, true); cut != 0 || err != nil {
		t.Fatalf("cut %d, %v", cut, err)
	}
	if _, err := os.Stat(filepath.Join(dir, SyncedFile)); !os.IsNotExist(err) {
		t.Errorf("fsync off wrote %s: %v", SyncedFile, err)
	}
}

// LogOptions.TrustTail, the test-only broken log, reads the corrupted record: what the checks
// must catch.
func TestTrustTailServesCorruption(t *testing.T) {
	dir := t.TempDir()
	syncedLog(t, dir, 7, 12, 0)
	if _, err := LoseUnsynced(dir, true); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLog(dir, LogOptions{Fsync: true, TrustTail: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LastZxid() != 8 {
		t.Fatalf("last zxid %v, want the corrupted 8", l.LastZxid())
	}
}

func TestSyncDelay(t *testing.T) {
	l, err := OpenLog(t.TempDir(), LogOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.SetSyncDelay(30 * time.Millisecond)
	t0 := time.Now()
	l.Append(ltxn(1))
	l.Sync()
	if el := time.Since(t0); el < 30*time.Millisecond {
		t.Errorf("a sync with a 30ms delay took %v", el)
	}
}

// With nothing unsynced, a tear still leaves a torn record: the next write's, cut
// off by its checksum at the restart (and read by the broken TrustTail log).
func TestTearWithNothingUnsynced(t *testing.T) {
	dir := t.TempDir()
	syncedLog(t, dir, 7, 7, 0)
	if _, err := LoseUnsynced(dir, true); err != nil {
		t.Fatal(err)
	}
	var warn strings.Builder
	l, err := OpenLog(dir, LogOptions{Fsync: true}, slog.New(slog.NewTextHandler(&warn, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if l.LastZxid() != 7 || !strings.Contains(warn.String(), "cutting torn log tail") {
		t.Errorf("last zxid %v, log %q: want 7 and the torn tail cut", l.LastZxid(), warn.String())
	}
	l.Close()
	dir = t.TempDir()
	syncedLog(t, dir, 7, 7, 0)
	LoseUnsynced(dir, true)
	if l, err = OpenLog(dir, LogOptions{Fsync: true, TrustTail: true}, nil); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LastZxid() != 8 {
		t.Errorf("the broken log's last zxid %v, want the torn 8", l.LastZxid())
	}
}

// A synced file that claims more than the segment holds (it was cut since) tears
// the last record's successor, as with nothing unsynced, and never extends the file.
func TestTearPastTheEnd(t *testing.T) {
	dir := t.TempDir()
	syncedLog(t, dir, 7, 7, 0)
	b, err := os.ReadFile(filepath.Join(dir, SyncedFile))
	if err != nil {
		t.Fatal(err)
	}
	var name string
	var size int64
	if _, err := fmt.Sscanf(string(b), "%s %d", &name, &size); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, SyncedFile), fmt.Appendf(nil, "%s %d\n", name, size+100), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoseUnsynced(dir, true); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLog(dir, LogOptions{Fsync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LastZxid() != 7 {
		t.Errorf("last zxid %v, want 7", l.LastZxid())
	}
}
