package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/polebench/polebench/zab"
)

// LoseUnsynced does to a stopped server's log what a power loss does with a page
// cache (Jepsen's lazyfs, lose-unfsynced-writes): every byte after what the last
// Sync made durable is gone (LogOptions.TrackSynced says how much that was; without
// its file nothing is cut). With tear, the first record after it comes back with one
// byte of its data flipped, a torn write that a restart must find by its checksum and
// cut off. dir is the log's directory (a data directory's "log"). It reports how many
// bytes it cut.
func LoseUnsynced(dir string, tear bool) (int64, error) {
	b, err := os.ReadFile(filepath.Join(dir, SyncedFile))
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, nil // cut short by the kill: unknown, so nothing is cut
	}
	keep, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, nil
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var cut int64
	for _, e := range names {
		name := e.Name()
		if !strings.HasSuffix(name, ".log") || name < f[0] {
			continue
		}
		path := filepath.Join(dir, name)
		st, err := os.Stat(path)
		if err != nil {
			return cut, err
		}
		if name > f[0] || keep < int64(len(segMagic)) { // begun after the last sync
			cut += st.Size()
			if err := os.Remove(path); err != nil {
				return cut, err
			}
			continue
		}
		if st.Size() <= keep && !tear {
			continue
		}
		keep := min(keep, st.Size()) // a record cannot tear past the end of the file
		b, err := readTail(path, 0, st.Size())
		if err != nil {
			return cut, err
		}
		tail := b[keep:]
		if len(tail) == 0 {
			// Nothing was being written: the torn record is the next write's, made
			// from the last one (its zxid's successor, its data), as a write cut
			// short by the crash would leave it.
			tail = nextRecord(b[:keep])
		}
		cut += st.Size() - keep
		if err := os.Truncate(path, keep); err != nil {
			return cut, err
		}
		if tear {
			if rec := firstRecord(tail); len(rec) > recordHeader+8 {
				// A byte amid the data (a write's value): its checksum no longer matches.
				rec[recordHeader+8+(len(rec)-recordHeader-8)/2] ^= 0x01
				if err := appendFile(path, rec); err != nil {
					return cut, err
				}
				cut -= int64(len(rec))
			}
		}
	}
	return cut, nil
}

func readTail(path string, from, to int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, to-from)
	_, err = f.ReadAt(b, from)
	return b, err
}

// nextRecord makes a record after the last one of a segment image: the next zxid, the
// same data. Nil if the segment holds none.
func nextRecord(seg []byte) []byte {
	var last []byte
	for off := len(segMagic); off+recordHeader <= len(seg); {
		rec := firstRecord(seg[off:])
		if rec == nil {
			break
		}
		last, off = rec, off+len(rec)
	}
	if last == nil {
		return nil
	}
	z := zab.Zxid(binary.LittleEndian.Uint64(last[recordHeader:]))
	return appendRecord(nil, zab.Txn{Zxid: z + 1, Data: last[recordHeader+8:]})
}

// firstRecord is the whole first record of b, or nil.
func firstRecord(b []byte) []byte {
	if len(b) < recordHeader {
		return nil
	}
	n := int(binary.LittleEndian.Uint32(b[:4]))
	if n < 8 || recordHeader+n > len(b) {
		return nil
	}
	return b[:recordHeader+n]
}

func appendFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("storage: tear the log's tail: %w", err)
	}
	return nil
}
