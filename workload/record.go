package workload

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/polebench/polebench/csvfile"
	"github.com/polebench/polebench/workload/client"
)

// Outcome is what the client learned about a request (package client decides it).
type Outcome = client.Outcome

// The outcomes.
const (
	OK      = client.OK
	Failed  = client.Failed
	Unknown = client.Unknown
)

// Record is one request of a run. Times are offsets from the run's start.
type Record struct {
	ID       uint64        // unique in the run; also written into the value
	DC       string        // data center whose pacer issued it
	Server   int           // server it was (last) sent to; 0 if never sent
	Key      string        // znode path
	Intended time.Duration // when the schedule said to send it
	Sent     time.Duration // first handed to the client; -1 if never sent
	Done     time.Duration // outcome known
	Outcome  Outcome
	Zxid     int64 // Mzxid of the reply's stat (OK only, else 0)
	Version  int32 // data version after the write (OK only, else -1)
	Attempts int   // sends tried (more than 1 when a server could not take it)
	Err      string
}

// RecordOf is the record of a request the client core took to its end: dc and key are
// the request's, server the id of the server it was last sent to (0: never sent). The
// driver adds what its protocol's acknowledgement said (Zxid, Version).
func RecordOf(c *client.Request, dc, key string, server int) Record {
	return Record{ID: c.ID, DC: dc, Server: server, Key: key, Intended: c.Intended, Sent: c.Sent,
		Done: c.Done, Outcome: c.Outcome, Version: -1, Attempts: c.Attempts, Err: c.Err}
}

// Latency is the latency seen by the client, measured from the intended send time.
func (r Record) Latency() time.Duration { return r.Done - r.Intended }

// WasSent reports whether the request ever reached a client session.
func (r Record) WasSent() bool { return r.Sent >= 0 }

var recordHeader = []string{"id", "dc", "server", "key", "intended_ns", "sent_ns", "done_ns",
	"outcome", "zxid", "version", "attempts", "err"}

// RecordWriter streams records as CSV (gzip-compressed when the path ends in .gz).
// Each Write is flushed to the file, so a crash of the harness loses nothing measured.
type RecordWriter struct {
	w *csvfile.Writer
}

// CreateRecords creates path and writes the CSV header.
func CreateRecords(path string) (*RecordWriter, error) {
	w, err := csvfile.Create(path)
	if err != nil {
		return nil, fmt.Errorf("workload: records: %w", err)
	}
	if err := w.Write(recordHeader); err != nil {
		w.Close()
		return nil, fmt.Errorf("workload: records %s: %w", path, err)
	}
	return &RecordWriter{w: w}, nil
}

// Write appends records and pushes them to the operating system.
func (w *RecordWriter) Write(recs ...Record) error {
	row := w.w.Row()
	for _, r := range recs {
		row.Uint(r.ID)
		row.String(r.DC)
		row.Int(int64(r.Server))
		row.String(r.Key)
		row.Int(int64(r.Intended))
		row.Int(int64(r.Sent))
		row.Int(int64(r.Done))
		row.String(r.Outcome.String())
		row.Int(r.Zxid)
		row.Int(int64(r.Version))
		row.Int(int64(r.Attempts))
		row.String(r.Err)
		if err := w.w.WriteRow(row); err != nil {
			return fmt.Errorf("workload: records %s: %w", w.w.Name(), err)
		}
	}
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("workload: records %s: %w", w.w.Name(), err)
	}
	return nil
}

// Close flushes, syncs and closes the file.
func (w *RecordWriter) Close() error {
	if err := w.w.Close(); err != nil {
		return fmt.Errorf("workload: closing records %s: %w", w.w.Name(), err)
	}
	return nil
}

// LoadRecords reads a records file written by RecordWriter (.gz or plain).
func LoadRecords(path string) ([]Record, error) {
	r, err := csvfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer r.Close()
	recs, err := ReadRecords(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

// ReadRecords parses records CSV. Errors name the line and the field.
func ReadRecords(r io.Reader) ([]Record, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(recordHeader)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("records header: %w", err)
	}
	for i, h := range recordHeader {
		if head[i] != h {
			return nil, fmt.Errorf("records header: column %d is %q, want %q", i+1, head[i], h)
		}
	}
	var out []Record
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("records: %w", err)
		}
		line, _ := cr.FieldPos(0)
		rec, err := parseRecord(row)
		if err != nil {
			return nil, fmt.Errorf("records line %d: %w", line, err)
		}
		out = append(out, rec)
	}
}

func parseRecord(row []string) (Record, error) {
	var r Record
	var err error
	num := func(col int, bits int) int64 {
		if err != nil {
			return 0
		}
		var v int64
		v, err = strconv.ParseInt(row[col], 10, bits)
		if err != nil {
			err = fmt.Errorf("field %s: %w", recordHeader[col], err)
		}
		return v
	}
	if r.ID, err = strconv.ParseUint(row[0], 10, 64); err != nil {
		return r, fmt.Errorf("field id: %w", err)
	}
	r.DC = row[1]
	r.Server = int(num(2, 32))
	r.Key = row[3]
	r.Intended = time.Duration(num(4, 64))
	r.Sent = time.Duration(num(5, 64))
	r.Done = time.Duration(num(6, 64))
	r.Zxid = num(8, 64)
	r.Version = int32(num(9, 32))
	r.Attempts = int(num(10, 32))
	if err != nil {
		return r, err
	}
	if r.Outcome, err = client.ParseOutcome(row[7]); err != nil {
		return r, fmt.Errorf("field outcome: %w", err)
	}
	r.Err = row[11]
	return r, nil
}
