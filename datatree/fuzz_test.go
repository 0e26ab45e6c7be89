package datatree

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzUnmarshalTxn: any input decodes or fails with ErrTxnCorrupt, never
// panics; what decodes re-encodes to something that decodes the same.
func FuzzUnmarshalTxn(f *testing.F) {
	for _, txn := range sampleTxns() {
		f.Add(txn.Marshal())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		txn, err := UnmarshalTxn(b)
		if err != nil {
			if !errors.Is(err, ErrTxnCorrupt) {
				t.Fatalf("error does not wrap ErrTxnCorrupt: %v", err)
			}
			return
		}
		again, err := UnmarshalTxn(txn.Marshal())
		if err != nil {
			t.Fatalf("re-encoded txn does not decode: %v", err)
		}
		txn.Op, again.Op = normal(txn.Op), normal(again.Op)
		if !reflect.DeepEqual(txn, again) {
			t.Fatalf("re-encoding changed the txn\n%+v\n%+v", txn, again)
		}
		New().Apply(1, txn) // whatever decodes must apply without panicking
	})
}

// FuzzReadSnapshot: any input loads or fails with ErrSnapshotCorrupt, never
// panics, and the same whether loaded whole or in pieces; what loads writes back to
// the same bytes. The input is the stream
// without its checksum, which the target appends, so that mutations reach the
// structural checks instead of all dying at the checksum.
func FuzzReadSnapshot(f *testing.F) {
	for _, tr := range []*Tree{New(), smallTree(f)} {
		b := snapshotBytes(f, tr)
		f.Add(b[:len(b)-4])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c := crc32c(body)
		b := append(body[:len(body):len(body)], byte(c), byte(c>>8), byte(c>>16), byte(c>>24))
		tr := New()
		err := tr.ReadSnapshot(bytes.NewReader(b))
		if split, serr := loadSplit(b, 1, 2, 5); (err == nil) != (serr == nil) ||
			err == nil && !bytes.Equal(snapshotBytes(t, split), snapshotBytes(t, tr)) {
			t.Fatalf("loaded whole: %v; loaded in pieces: %v, or another tree", err, serr)
		}
		if err != nil {
			if !errors.Is(err, ErrSnapshotCorrupt) {
				t.Fatalf("error does not wrap ErrSnapshotCorrupt: %v", err)
			}
			return
		}
		out := snapshotBytes(t, tr)
		if bytes.Equal(out, b) {
			return
		}
		// Varints may be non-minimal in the input; the rewrite must be stable.
		tr2 := New()
		if err := tr2.ReadSnapshot(bytes.NewReader(out)); err != nil {
			t.Fatalf("rewritten snapshot does not load: %v", err)
		}
		if !bytes.Equal(snapshotBytes(t, tr2), out) {
			t.Fatalf("snapshot rewrite is not stable")
		}
	})
}
