package storage

import (
	"errors"
	"testing"

	"github.com/polebench/polebench/zab"
)

// FuzzDecodeSegment: any segment image decodes into complete records plus a
// torn or corrupt error, never a panic; records come out in zxid order and
// re-encode to a prefix of the input.
func FuzzDecodeSegment(f *testing.F) {
	seg := []byte(segMagic)
	for i, n := range []int{0, 3, 100} {
		seg = appendRecord(seg, txn(zab.MakeZxid(1, uint32(i+1)), n))
	}
	f.Add(seg)
	f.Add(seg[:len(seg)-4])
	f.Add([]byte(segMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		txns, err := DecodeSegment(b)
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, errTorn) {
			t.Fatalf("unclassified error: %v", err)
		}
		out := []byte(segMagic)
		for i, tx := range txns {
			if i > 0 && tx.Zxid <= txns[i-1].Zxid {
				t.Fatalf("zxids out of order")
			}
			out = appendRecord(out, tx)
		}
		if len(txns) > 0 && string(out) != string(b[:len(out)]) {
			t.Fatalf("decoded records do not re-encode to the input")
		}
	})
}
