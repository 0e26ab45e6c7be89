// Package csvfile opens and creates the harness's CSV files (requests.csv.gz,
// phases.csv.gz), gzip-compressed when the name ends in .gz.
package csvfile

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
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
	f  *os.File
	gz *gzip.Writer
	bw *bufio.Writer
	cw *csv.Writer
}

// Create creates path, compressed if its name ends in .gz: at gzip's fastest level,
// since these files are written while a run waits (a simulated run's in a fraction
// of a second), and CSV of numbers still compresses about 4x.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := &Writer{f: f}
	var out io.Writer = f
	if strings.HasSuffix(path, ".gz") {
		w.gz, _ = gzip.NewWriterLevel(f, gzip.BestSpeed)
		out = w.gz
	}
	w.bw = bufio.NewWriterSize(out, 64<<10)
	w.cw = csv.NewWriter(w.bw)
	return w, nil
}

// Name is the file's path.
func (w *Writer) Name() string { return w.f.Name() }

// Write adds a row (buffered until Flush or Close).
func (w *Writer) Write(row []string) error { return w.cw.Write(row) }

// Flush pushes every row written so far to the operating system, so a crash of the
// harness loses none of them.
func (w *Writer) Flush() error {
	w.cw.Flush()
	err := w.cw.Error()
	if err == nil {
		err = w.bw.Flush()
	}
	if err == nil && w.gz != nil {
		err = w.gz.Flush()
	}
	return err
}

// Close flushes, ends the compressed stream, syncs and closes the file.
func (w *Writer) Close() error {
	err := w.Flush()
	if w.gz != nil {
		err = errors.Join(err, w.gz.Close())
	}
	return errors.Join(err, w.f.Sync(), w.f.Close())
}
