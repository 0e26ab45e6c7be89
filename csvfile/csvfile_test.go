package csvfile

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"testing"
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
