package workload

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleRecords() []Record {
	return []Record{
		{ID: 1<<40 | 1, DC: "D1", Server: 2, Key: "/polebench/k00007", Intended: 1500 * time.Microsecond,
			Sent: 1600 * time.Microsecond, Done: 12 * time.Millisecond, Outcome: OK, Zxid: 0x100000005, Version: 3, Attempts: 1},
		{ID: 2<<40 | 1, DC: "D2", Server: 0, Key: "/polebench/k00001", Intended: 2 * time.Millisecond,
			Sent: -1, Done: 3 * time.Millisecond, Outcome: Failed, Version: -1, Err: "no live server in DC D2"},
		{ID: 2<<40 | 2, DC: "D2", Server: 5, Key: "/polebench/k00001", Intended: 3 * time.Millisecond,
			Sent: 3 * time.Millisecond, Done: 9 * time.Millisecond, Outcome: Unknown, Version: -1, Attempts: 2,
			Err: "zk: connection closed, \"quoted\""},
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	for _, name := range []string{"records.csv", "records.csv.gz"} {
		path := filepath.Join(t.TempDir(), name)
		w, err := CreateRecords(path)
		if err != nil {
			t.Fatal(err)
		}
		recs := sampleRecords()
		if err := w.Write(recs[:1]...); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(recs[1:]...); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := LoadRecords(path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, recs) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v", name, got, recs)
		}
	}
}

func TestReadRecordsErrorsNameLineAndField(t *testing.T) {
	head := strings.Join(recordHeader, ",") + "\n"
	good := "1,D1,1,/k,0,1,2,ok,5,1,1,\n"
	for _, tc := range []struct{ in, want string }{
		{"id,dc\n", "records"},
		{strings.Replace(head, "zxid", "zx", 1), `column 9 is "zx"`},
		{head + good + "2,D1,1,/k,x,1,2,ok,5,1,1,\n", "line 3: field intended_ns"},
		{head + good + "3,D1,1,/k,0,1,2,maybe,5,1,1,\n", "line 3: field outcome"},
		{head + "-4,D1,1,/k,0,1,2,ok,5,1,1,\n", "line 2: field id"},
	} {
		_, err := ReadRecords(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadRecords(%q) error %v, want it to contain %q", tc.in, err, tc.want)
		}
	}
}

func TestValueRoundTrip(t *testing.T) {
	v := encodeValue("run7", 1<<40|3, 1024)
	if len(v) != 1024 {
		t.Errorf("value size %d, want 1024", len(v))
	}
	run, id, err := decodeValue(v)
	if err != nil || run != "run7" || id != 1<<40|3 {
		t.Errorf("decode = %q %d %v", run, id, err)
	}
	for _, size := range []int{9, 1024, 10000} { // the padding is dots, also beyond its 4 kB
		if v := encodeValue("r", 12, size); len(v) != size || string(v[:8]) != "pb r 12\n" || strings.Trim(string(v[8:]), ".") != "" {
			t.Errorf("value of %d bytes: %d bytes, %.20q...", size, len(v), v)
		}
	}
	if small := encodeValue("r", 12, 4); string(small) != "pb r 12\n" {
		t.Errorf("payload smaller than the header: %q", small)
	}
	for _, bad := range []string{"", "hello", "pb r\n", "pb r x\n", "xx r 1\n"} {
		if _, _, err := decodeValue([]byte(bad)); err == nil {
			t.Errorf("decodeValue(%q) succeeded", bad)
		}
	}
}

func TestComputeStats(t *testing.T) {
	var recs []Record
	for i := range 100 { // lags 0..99 µs, sent within 1 s
		at := time.Duration(i) * 10 * time.Millisecond
		recs = append(recs, Record{Intended: at, Sent: at + time.Duration(i)*time.Microsecond, Done: at + time.Millisecond, Outcome: OK})
	}
	recs = append(recs, Record{Sent: -1, Outcome: Failed}, Record{Sent: 0, Outcome: Unknown})
	st := ComputeStats(recs, time.Second, 100)
	if st.Requests != 102 || st.Sent != 101 || st.OK != 100 || st.Failed != 1 || st.Unknown != 1 {
		t.Errorf("counts %+v", st)
	}
	if st.SendLag.P50 != 49*time.Microsecond || st.SendLag.P99 != 98*time.Microsecond || st.SendLag.Max != 99*time.Microsecond {
		t.Errorf("send lag %+v, want p50 49µs p99 98µs max 99µs", st.SendLag)
	}
	if st.AchievedRate != 101 || st.ScheduledRate != 102 {
		t.Errorf("achieved rate %v, scheduled %v; want 101/s and 102/s", st.AchievedRate, st.ScheduledRate)
	}
	// A pacer that fell 1 s behind stretches the span.
	recs = append(recs, Record{Intended: 900 * time.Millisecond, Sent: 2 * time.Second, Outcome: OK})
	if st := ComputeStats(recs, time.Second, 100); st.AchievedRate != 51 {
		t.Errorf("late run: achieved rate %v, want 102/2s = 51", st.AchievedRate)
	}
}

// TestSendLagKeep: SendLag counts the sent records keep accepts, as the steady
// windows' lag does.
func TestSendLagKeep(t *testing.T) {
	var recs []Record
	for i := range 100 { // lags 0..99 µs
		at := time.Duration(i) * 10 * time.Millisecond
		recs = append(recs, Record{Intended: at, Sent: at + time.Duration(i)*time.Microsecond})
	}
	recs = append(recs, Record{Intended: 5 * time.Millisecond, Sent: -1})      // never sent
	early := func(r *Record) bool { return r.Intended < 500*time.Millisecond } // lags 0..49 µs
	if got, want := SendLag(recs, early), (Lag{P50: 24 * time.Microsecond, P99: 49 * time.Microsecond, Max: 49 * time.Microsecond}); got != want {
		t.Errorf("early half: %+v, want %+v", got, want)
	}
	if got := SendLag(recs, func(*Record) bool { return false }); got != (Lag{}) {
		t.Errorf("none kept: %+v", got)
	}
}
