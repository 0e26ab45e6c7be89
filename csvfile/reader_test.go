package csvfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReaderLayoutsAndErrors: the header picks the layout by its first column, and
// every error names the file, and the line and field where there is one.
func TestReaderLayoutsAndErrors(t *testing.T) {
	layouts := [][]string{{"a_delta", "n"}, {"a", "n"}}
	for _, tc := range []struct {
		name, in string
		layout   int
		sum      int64 // of every row's fields, read as numbers
		err      string
	}{
		{"new layout", "a_delta,n\n1,2\n-3,4\n", 0, 4, ""},
		{"old layout", "a,n\n5,6\n", 1, 11, ""},
		{"no rows", "a,n\n", 1, 0, ""},
		{"empty", "", 0, 0, ": header: EOF"},
		{"unknown column", "a,m\n", 0, 0, `:1: column 2 is "m", want "n"`},
		{"unknown first column", "b,n\n", 0, 0, `:1: column 1 is "b", want "a_delta"`},
		{"columns", "a,n,x\n", 0, 0, ":1: 3 columns, want 2"},
		{"bad number", "a,n\n1,2\n3,x\n", 1, 0, `:3: field n: strconv.ParseUint: parsing "x"`},
		{"first bad field wins", "a,n\n1,2\ny,x\n", 1, 0, ":3: field a: "},
		{"short row", "a,n\n1,2\n3\n", 1, 0, "record on line 3: wrong number of fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.csv")
			if err := os.WriteFile(path, []byte(tc.in), 0o644); err != nil {
				t.Fatal(err)
			}
			sum, err := readSum(path, layouts)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want it to name %s and contain %q", err, path, tc.err)
			case tc.err == "" && sum != tc.sum+100*int64(tc.layout):
				t.Errorf("layout and sum %d, want layout %d and sum %d", sum, tc.layout, tc.sum)
			}
		})
	}
}

// readSum reads path and returns its layout times 100 plus the sum of its fields.
func readSum(path string, layouts [][]string) (int64, error) {
	in, err := OpenLayouts(path, layouts...)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	sum := 100 * int64(in.Layout)
	for in.Next() {
		sum += in.Int(0, 64) + int64(in.Uint(1))
	}
	return sum, in.Err()
}
