// Package csvfile opens and creates the harness's CSV files (requests.csv.gz,
// phases.csv.gz), gzip-compressed when the name ends in .gz.
package csvfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"
)

// Open opens path for reading, decompressing it if its name ends in .gz.
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(path, ".gz") {
		return readCloser{bufio.NewReader(f), f.Close}, nil
	}
	gz, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return readCloser{gz, func() error { return errors.Join(gz.Close(), f.Close()) }}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// Writer writes CSV rows to a file.
type Writer struct {
	f   *os.File
	gz  *gzip.Writer
	fw  *bufio.Writer // the compressed stream, to f (gzip writes its blocks in pieces of a few hundred bytes)
	out io.Writer     // gz or f
	// row holds the rows not yet handed to out, and builds the next one: a caller
	// filling Row() writes in place, without a copy.
	row Row
}

// bufSize is how much Writer gathers before handing it on.
const bufSize = 64 << 10

// level is klauspost's level 2: as fast as its level 1 and a little smaller.
const level = 2

// Create creates path, compressed if its name ends in .gz: at a fast level of
// klauspost's gzip, since these files are written while a run waits (a simulated run's
// in a fraction of a second): faster than the standard library's fastest level, and
// smaller (BenchmarkGzip compares the two on rows like it; docs/performance.md).
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := &Writer{f: f, out: f, row: Row{b: make([]byte, 0, bufSize+4<<10)}}
	if strings.HasSuffix(path, ".gz") {
		w.fw = bufio.NewWriterSize(f, 256<<10)
		w.gz, _ = gzip.NewWriterLevel(w.fw, level)
		w.out = w.gz
	}
	return w, nil
}

// Name is the file's path.
func (w *Writer) Name() string { return w.f.Name() }

// Write adds a row of strings (buffered until Flush or Close).
func (w *Writer) Write(row []string) error {
	for _, f := range row {
		w.row.String(f)
	}
	return w.WriteRow(&w.row)
}

// Row is the writer's own row to fill in: WriteRow(Row()) adds it without copying it.
func (w *Writer) Row() *Row { return &w.row }

// WriteRow adds r's fields as a row (buffered until Flush or Close) and empties r.
func (w *Writer) WriteRow(r *Row) error {
	if r != &w.row {
		w.row.b = append(w.row.b, r.b...)
		r.b, r.n = r.b[:0], 0
	}
	w.row.b = append(w.row.b, '\n')
	w.row.n = 0
	if len(w.row.b) >= bufSize {
		return w.push()
	}
	return nil
}

// push hands the rows gathered on.
func (w *Writer) push() error {
	_, err := w.out.Write(w.row.b)
	w.row.b = w.row.b[:0]
	return err
}

// Row is one CSV row built in place: a number goes in without a string of its own,
// which a simulated run's millions of fields made the most of writing its files.
// Strings are quoted as encoding/csv quotes them.
type Row struct {
	b []byte
	n int // fields so far
}

func (r *Row) sep() {
	if r.n > 0 {
		r.b = append(r.b, ',')
	}
	r.n++
}

// Int adds an integer field.
func (r *Row) Int(v int64) { r.sep(); r.b = strconv.AppendInt(r.b, v, 10) }

// Uint adds an unsigned integer field.
func (r *Row) Uint(v uint64) { r.sep(); r.b = strconv.AppendUint(r.b, v, 10) }

// String adds a text field, quoted if it holds a comma, quote or line break, or
// starts with a space.
func (r *Row) String(s string) {
	r.sep()
	if !needsQuotes(s) {
		r.b = append(r.b, s...)
		return
	}
	r.b = append(r.b, '"')
	for i := range len(s) {
		if s[i] == '"' {
			r.b = append(r.b, '"')
		}
		r.b = append(r.b, s[i])
	}
	r.b = append(r.b, '"')
}

// needsQuotes is encoding/csv's rule for a comma-separated field.
func needsQuotes(s string) bool {
	if s == "" {
		return false
	}
	if s == `\.` || strings.ContainsAny(s, ",\"\r\n") {
		return true
	}
	c, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(c)
}

// Flush pushes every row written so far to the operating system, so a crash of the
// harness loses none of them.
func (w *Writer) Flush() error {
	err := w.push()
	if err == nil && w.gz != nil {
		err = w.gz.Flush()
		if err == nil {
			err = w.fw.Flush()
		}
	}
	return err
}

// Close flushes, ends the compressed stream, syncs and closes the file.
func (w *Writer) Close() error {
	err := w.Flush()
	if w.gz != nil {
		err = errors.Join(err, w.gz.Close(), w.fw.Flush())
	}
	return errors.Join(err, w.f.Sync(), w.f.Close())
}
