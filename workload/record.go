package workload

import (
	"fmt"
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

// requests.csv.gz has had two layouts, told apart by the header. recordHeader's
// (before 2026-12-03) gave every field as it is, times in ns since the run's start.
// recordDeltaHeader's, written now, gives each number as the difference from one it
// is close to (recordDeltas says which), the fields that hardly change first: gzip
// makes it 56 % of the bytes. Both are read.
var (
	recordHeader = []string{"id", "dc", "server", "key", "intended_ns", "sent_ns", "done_ns",
		"outcome", "zxid", "version", "attempts", "err"}
	recordDeltaHeader = []string{"dc", "server", "id_delta", "outcome", "attempts", "sent_delta_ns", "err",
		"version_delta", "zxid_delta", "intended_delta_ns", "latency_delta_ns", "key"}
)

// recordDeltas is what the delta layout's differences are from: the id and the latency
// of the DC's row before (a DC's ids count up, its latencies stay near its distance
// from the leader), the intended time of the row before, the last zxid and the key's
// last version. The sent time is from the row's intended. Where a field is absent (a
// zxid of 0, a version of -1, a sent time of -1: never sent) it is empty.
type recordDeltas struct {
	intended time.Duration
	zxid     int64
	dcs      []dcDeltas // a few: a slice is quicker than a map
	versions map[string]int32
}

type dcDeltas struct {
	dc      string
	id      uint64
	latency time.Duration
}

func (d *recordDeltas) of(dc string) *dcDeltas {
	for i := range d.dcs {
		if d.dcs[i].dc == dc {
			return &d.dcs[i]
		}
	}
	d.dcs = append(d.dcs, dcDeltas{dc: dc})
	return &d.dcs[len(d.dcs)-1]
}

// write adds r's fields to row and remembers what the next rows' differences are from.
// Differences wrap, and wrap back when read.
func (d *recordDeltas) write(row *csvfile.Row, r *Record) {
	dc := d.of(r.DC)
	row.String(r.DC)
	row.Int(int64(r.Server))
	row.Int(int64(r.ID - dc.id))
	row.String(r.Outcome.String())
	row.Int(int64(r.Attempts))
	if r.Sent == -1 {
		row.String("")
	} else {
		row.Int(int64(r.Sent - r.Intended))
	}
	row.String(r.Err)
	if r.Version == -1 {
		row.String("")
	} else {
		row.Int(int64(r.Version - d.versions[r.Key]))
		d.versions[r.Key] = r.Version
	}
	if r.Zxid == 0 {
		row.String("")
	} else {
		row.Int(r.Zxid - d.zxid)
		d.zxid = r.Zxid
	}
	row.Int(int64(r.Intended - d.intended))
	row.Int(int64(r.Latency() - dc.latency))
	row.String(r.Key)
	d.intended, dc.id, dc.latency = r.Intended, r.ID, r.Latency()
}

// read is write's inverse: the record of the reader's row.
func (d *recordDeltas) read(in *csvfile.Reader) Record {
	r := Record{DC: in.Field(0), Err: in.Field(6), Key: in.Field(11), Sent: -1, Version: -1}
	dc := d.of(r.DC)
	r.Server = int(in.Int(1, 32))
	r.ID = dc.id + uint64(in.Int(2, 64))
	r.Outcome = outcome(in, 3)
	r.Attempts = int(in.Int(4, 32))
	r.Intended = d.intended + time.Duration(in.Int(9, 64))
	if in.Field(5) != "" {
		r.Sent = r.Intended + time.Duration(in.Int(5, 64))
	}
	if in.Field(7) != "" {
		r.Version = d.versions[r.Key] + int32(in.Int(7, 32))
		d.versions[r.Key] = r.Version
	}
	if in.Field(8) != "" {
		r.Zxid = d.zxid + in.Int(8, 64)
		d.zxid = r.Zxid
	}
	r.Done = r.Intended + dc.latency + time.Duration(in.Int(10, 64))
	d.intended, dc.id, dc.latency = r.Intended, r.ID, r.Latency()
	return r
}

// readAbsolute reads a row of the layout before the delta one.
func readAbsolute(in *csvfile.Reader) Record {
	return Record{ID: in.Uint(0), DC: in.Field(1), Server: int(in.Int(2, 32)), Key: in.Field(3),
		Intended: time.Duration(in.Int(4, 64)), Sent: time.Duration(in.Int(5, 64)), Done: time.Duration(in.Int(6, 64)),
		Outcome: outcome(in, 7), Zxid: in.Int(8, 64), Version: int32(in.Int(9, 32)), Attempts: int(in.Int(10, 32)),
		Err: in.Field(11)}
}

func outcome(in *csvfile.Reader, col int) Outcome {
	o, err := client.ParseOutcome(in.Field(col))
	in.Bad(col, err)
	return o
}

// RecordWriter streams records as CSV in the delta layout (gzip-compressed when the
// path ends in .gz). Each Write is flushed to the file, so a crash of the harness loses
// nothing measured.
type RecordWriter struct {
	w    *csvfile.Writer
	last recordDeltas
}

// CreateRecords creates path and writes the CSV header.
func CreateRecords(path string) (*RecordWriter, error) {
	w, err := csvfile.Create(path)
	if err != nil {
		return nil, fmt.Errorf("workload: records: %w", err)
	}
	if err := w.Write(recordDeltaHeader); err != nil {
		w.Close()
		return nil, fmt.Errorf("workload: records %s: %w", path, err)
	}
	return &RecordWriter{w: w, last: recordDeltas{versions: map[string]int32{}}}, nil
}

// Write appends records and pushes them to the operating system.
func (w *RecordWriter) Write(recs ...Record) error {
	row := w.w.Row()
	for i := range recs {
		w.last.write(row, &recs[i])
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

// LoadRecords reads a records file written by RecordWriter (.gz or plain), in either
// layout. Errors name the file, the line and the field.
func LoadRecords(path string) ([]Record, error) {
	in, err := csvfile.OpenLayouts(path, recordDeltaHeader, recordHeader)
	if err != nil {
		return nil, fmt.Errorf("workload: records: %w", err)
	}
	defer in.Close()
	read := readAbsolute
	if in.Layout == 0 {
		read = (&recordDeltas{versions: map[string]int32{}}).read
	}
	var out []Record
	for in.Next() {
		out = append(out, read(in))
	}
	if err := in.Err(); err != nil {
		return nil, fmt.Errorf("workload: records: %w", err)
	}
	return out, nil
}
