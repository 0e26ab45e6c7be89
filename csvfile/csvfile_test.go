package csvfile

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestRoundTrip writes rows to a plain and a compressed file, reads them back, and
// checks the .gz one really is gzip (its magic bytes) and the plain one is not.
func TestRoundTrip(t *testing.T) {
	rows := [][]string{{"id", "note"}, {"1", "a, quoted \"b\""}, {"2", ""}}
	for _, name := range []string{"rows.csv", "rows.csv.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			w, err := Create(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if err := w.Write(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if gz := len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b; gz != (filepath.Ext(name) == ".gz") {
				t.Errorf("%s: gzip magic %v", name, gz)
			}
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := csv.NewReader(r).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, rows, slices.Equal) {
				t.Errorf("read back %q, want %q", got, rows)
			}
		})
	}
}

// TestFlushReachesTheFile: rows flushed are in the file before Close, compressed too
// (a harness that crashes after Flush keeps them).
func TestFlushReachesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.csv.gz")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Write([]string{"x", "1"})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cr := csv.NewReader(r)
	row, err := cr.Read()
	if err != nil || !slices.Equal(row, []string{"x", "1"}) {
		t.Fatalf("before Close, read %q, %v", row, err)
	}
}

func TestOpenMissing(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "none.csv.gz")); !os.IsNotExist(err) {
		t.Errorf("err %v, want not-exist", err)
	}
}

// BenchmarkGzip compresses phases.csv-like rows (an id and 14 timestamps a few hundred
// µs apart) with the standard library's fastest level and with the level Create uses:
// compare their ns/op and ratio in one run (go test ./csvfile -bench Gzip).
func BenchmarkGzip(b *testing.B) {
	var raw bytes.Buffer
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 50_000 {
		at := int64(i) * 1_000_000
		fmt.Fprintf(&raw, "%d,D%d,%d,5,%d", 1<<40+i, 1+i%2, 1+i%4, 1+rng.IntN(4))
		for range 14 {
			at += rng.Int64N(500_000)
			fmt.Fprintf(&raw, ",%d", at)
		}
		raw.WriteByte('\n')
	}
	for _, c := range []struct {
		name string
		make func(io.Writer) io.WriteCloser
	}{
		{"stdlib-1", func(w io.Writer) io.WriteCloser { z, _ := stdgzip.NewWriterLevel(w, stdgzip.BestSpeed); return z }},
		{"create", func(w io.Writer) io.WriteCloser { z, _ := gzip.NewWriterLevel(w, level); return z }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(raw.Len()))
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				z := c.make(&out)
				z.Write(raw.Bytes())
				z.Close()
			}
			b.ReportMetric(float64(raw.Len())/float64(out.Len()), "ratio")
		})
	}
}

// TestWriteMatchesEncodingCSV: Write and Row's fields give encoding/csv's bytes, tricky
// fields included, so readers of the files need nothing of their own.
func TestWriteMatchesEncodingCSV(t *testing.T) {
	rows := [][]string{
		{"1", "", "plain"},
		{"", ""},
		{"a,b", `say "hi"`, "two\nlines", "cr\rhere", " lead", "\tlead", `\.`, "trail ", "ünï"},
		{"\vlead", "\flead", "\u00a0lead", "\u0085lead", "\u2003lead", "ü,", "x\u00a0", `\.x`, "/polebench/k00042"},
		{"-9223372036854775808", "18446744073709551615"},
	}
	var want bytes.Buffer
	cw := csv.NewWriter(&want)
	cw.WriteAll(rows)
	path := filepath.Join(t.TempDir(), "rows.csv")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows[:len(rows)-1] {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	var row Row
	row.Int(math.MinInt64)
	row.Uint(math.MaxUint64)
	if err := w.WriteRow(&row); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("wrote\n%q\nencoding/csv writes\n%q", got, want.Bytes())
	}
}
