package csvfile

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// Reader reads a file of rows under a header that says which of the file's layouts
// it is in (a file whose layout changed keeps being read in each): rows as
// encoding/csv reads them, numbers parsed with errors that name the file, the line and
// the field.
type Reader struct {
	Layout int // which of the layouts the header is
	name   string
	header []string
	cr     *csv.Reader
	close  func() error
	row    []string
	err    error
}

// OpenLayouts opens path (decompressing it as Open does) and reads its header, which
// must be one of layouts; they are told apart by their first column.
func OpenLayouts(path string, layouts ...[]string) (*Reader, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	r := &Reader{name: path, cr: csv.NewReader(f), close: f.Close, header: layouts[0]}
	r.cr.ReuseRecord = true
	if err := r.readHeader(layouts); err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

func (r *Reader) readHeader(layouts [][]string) error {
	head, err := r.cr.Read()
	if err != nil {
		return fmt.Errorf("%s: header: %w", r.name, err)
	}
	for i, l := range layouts {
		if head[0] == l[0] {
			r.Layout, r.header = i, l
		}
	}
	if len(head) != len(r.header) {
		return fmt.Errorf("%s:1: %d columns, want %d", r.name, len(head), len(r.header))
	}
	for i, h := range r.header {
		if head[i] != h {
			return fmt.Errorf("%s:1: column %d is %q, want %q", r.name, i+1, head[i], h)
		}
	}
	return nil
}

// Next reads the next row; false at the end, after an error reading it, or after a
// bad field in the row before (Err says which).
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	row, err := r.cr.Read()
	if err != nil {
		if err != io.EOF {
			r.err = fmt.Errorf("%s: %w", r.name, err)
		}
		return false
	}
	r.row = row
	return true
}

// Err is the first error of reading the file; nil at its clean end.
func (r *Reader) Err() error { return r.err }

// Field is the row's field col.
func (r *Reader) Field(col int) string { return r.row[col] }

// Int is the row's field col as an integer of bits bits; a bad one stops the reading,
// Err naming the file, line and field.
func (r *Reader) Int(col, bits int) int64 {
	v, err := strconv.ParseInt(r.row[col], 10, bits)
	r.Bad(col, err)
	return v
}

// Uint is Int for an unsigned field.
func (r *Reader) Uint(col int) uint64 {
	v, err := strconv.ParseUint(r.row[col], 10, 64)
	r.Bad(col, err)
	return v
}

// Bad takes err (if not nil) as the error of the row's field col, unless the row
// already has one.
func (r *Reader) Bad(col int, err error) {
	if err == nil || r.err != nil {
		return
	}
	line, _ := r.cr.FieldPos(col)
	r.err = fmt.Errorf("%s:%d: field %s: %w", r.name, line, r.header[col], err)
}

// Close closes the file.
func (r *Reader) Close() error { return r.close() }
