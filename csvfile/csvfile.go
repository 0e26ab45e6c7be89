// Package csvfile opens and creates the harness's CSV files (requests.csv.gz,
// phases.csv.gz), gzip-compressed when the name ends in .gz.
package csvfile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"slices"
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
// in a fraction of a second). A simulated two-dc run's 23 MB phases.csv took 108 ms
// against the standard library's 214 ms at its fastest level, and came to 5.7 MB
// against 7.1 (BenchmarkGzip compares the two on rows like it).
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
func (r *Row) Int(v int64) {
	r.sep()
	u := uint64(v)
	if v < 0 {
		r.b = append(r.b, '-')
		u = -u
	}
	r.b = appendUint(r.b, u)
}

// Uint adds an unsigned integer field.
func (r *Row) Uint(v uint64) { r.sep(); r.b = appendUint(r.b, v) }

// appendUint is strconv.AppendUint(b, u, 10) written straight into b, eight digits at
// a time: a simulated run's files hold millions of numbers, which strconv formats one
// pair of digits at a time, each number in a buffer of its own first.
func appendUint(b []byte, u uint64) []byte {
	if u < 10 {
		return append(b, byte('0'+u))
	}
	n := decimalLen(u)
	var chunks [2]uint32 // the last eight digits, and the eight before them
	k := 0
	for ; u >= 1e8; k++ {
		q := u / 1e8
		chunks[k], u = uint32(u-q*1e8), q
	}
	// Each chunk is stored as eight bytes: the leading one shifted to its digits, the
	// zeros after them overwritten by the next (b has room to spare).
	b = slices.Grow(b, n+8)
	out := b[len(b) : len(b)+n+8]
	lead := n - 8*k
	binary.LittleEndian.PutUint64(out, eightDigits(uint32(u))>>(8*(8-lead)))
	for i, at := k-1, lead; i >= 0; i, at = i-1, at+8 {
		binary.LittleEndian.PutUint64(out[at:], eightDigits(chunks[i]))
	}
	return b[:len(b)+n]
}

// eightDigits is the eight decimal digits of x < 1e8 in ASCII, the first in the lowest
// byte: each step splits every lane of the word in two by a multiplication (x/100 is
// x*5243>>19 below 43699, x/10 is x*103>>10 below 179), so no lane carries into the
// next.
func eightDigits(x uint32) uint64 {
	v := uint64(x/10000) | uint64(x%10000)<<32 // two lanes of four digits
	q := (v * 5243 >> 19) & 0x0000007f_0000007f
	v = q | (v-q*100)<<16 // four lanes of two
	q = (v * 103 >> 10) & 0x000f000f_000f000f
	v = q | (v-q*10)<<8 // eight lanes of one
	return v | 0x30303030_30303030
}

var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// decimalLen is how many digits u has (u > 0).
func decimalLen(u uint64) int {
	t := bits.Len64(u) * 1233 >> 12 // log10(2) ≈ 1233/4096: floor(log10(u)) or one more
	if u < pow10[t] {
		return t
	}
	return t + 1
}

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
	if s == `\.` {
		return true
	}
	for i := range len(s) {
		switch s[i] {
		case ',', '"', '\r', '\n':
			return true
		}
	}
	if c := s[0]; c < utf8.RuneSelf {
		// unicode.IsSpace's ASCII spaces, without decoding the rune
		return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
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
