package workload

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// sampleRecords has what the delta layout treats apart: two DCs, a request never sent,
// rows out of intended order (a real backend writes them as they end), a key written
// again, and absent zxids and versions.
func sampleRecords() []Record {
	return []Record{
		{ID: 1<<40 | 1, DC: "D1", Server: 2, Key: "/polebench/k00007", Intended: 1500 * time.Microsecond,
			Sent: 1600 * time.Microsecond, Done: 12 * time.Millisecond, Outcome: OK, Zxid: 0x100000005, Version: 3, Attempts: 1},
		{ID: 2<<40 | 1, DC: "D2", Server: 0, Key: "/polebench/k00001", Intended: 2 * time.Millisecond,
			Sent: -1, Done: 3 * time.Millisecond, Outcome: Failed, Version: -1, Err: "no live server in DC D2"},
		{ID: 2<<40 | 3, DC: "D2", Server: 5, Key: "/polebench/k00001", Intended: 4 * time.Millisecond,
			Sent: 4 * time.Millisecond, Done: 9 * time.Millisecond, Outcome: Unknown, Version: -1, Attempts: 2,
			Err: "zk: connection closed, \"quoted\""},
		{ID: 2<<40 | 2, DC: "D2", Server: 4, Key: "/polebench/k00007", Intended: 3 * time.Millisecond,
			Sent: 3 * time.Millisecond, Done: 10 * time.Millisecond, Outcome: OK, Zxid: 0x100000004, Version: 2, Attempts: 1},
		{ID: 1<<40 | 2, DC: "D1", Server: 1, Key: "/polebench/k00007", Intended: 5 * time.Millisecond,
			Sent: 5 * time.Millisecond, Done: 25 * time.Millisecond, Outcome: OK, Zxid: 0x200000001, Version: 4, Attempts: 1},
	}
}

// TestRecordsRoundTrip writes records in two Writes and reads them back, and pins the
// delta layout to a golden file (testdata/requests-delta.csv): a change of it is a new
// layout, which needs a header of its own.
func TestRecordsRoundTrip(t *testing.T) {
	for _, name := range []string{"records.csv", "records.csv.gz"} {
		path := filepath.Join(t.TempDir(), name)
		w, err := CreateRecords(path)
		if err != nil {
			t.Fatal(err)
		}
		recs := sampleRecords()
		if err := w.Write(recs[:2]...); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(recs[2:]...); err != nil {
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
		if name == "records.csv" {
			golden(t, path, filepath.Join("testdata", "requests-delta.csv"))
		}
	}
}

func golden(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(want, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(w) {
		t.Errorf("%s differs from %s (go test -update rewrites it):\n%s", path, want, got)
	}
}

// TestLoadRecordsOldLayout reads a stored requests.csv.gz of the layout before the
// delta one (rows of a simulated two-dc run as 1c3dfab wrote them: its first 30, and
// 50 around the crash, with re-sent and unknown requests), and reads back the same
// records from the delta layout CreateRecords writes now.
func TestLoadRecordsOldLayout(t *testing.T) {
	old, err := LoadRecords(filepath.Join("testdata", "requests-before-2026-12-03.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	first := Record{ID: 1099511627777, DC: "D1", Server: 2, Key: "/polebench/k00989", Intended: 131779,
		Sent: 131779, Done: 21732062, Outcome: OK, Zxid: 4294968303, Version: 1, Attempts: 1}
	unknown := Record{ID: 1099511657727, DC: "D1", Server: 2, Key: "/polebench/k00688", Intended: 59991592690,
		Sent: 59991592690, Done: 60010375000, Outcome: Unknown, Version: -1, Attempts: 1, Err: "zab: leader changed, outcome unknown"}
	if len(old) != 80 || old[0] != first || !slices.Contains(old, unknown) {
		t.Fatalf("%d records, the first %+v", len(old), old[0])
	}
	path := filepath.Join(t.TempDir(), "requests.csv.gz")
	w, err := CreateRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(old...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	back, err := LoadRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, old) {
		t.Fatalf("delta layout round trip:\n%+v\nwant\n%+v", back, old)
	}
}

func TestLoadRecordsErrorsNameFileLineAndField(t *testing.T) {
	abs := strings.Join(recordHeader, ",") + "\n1,D1,1,/k,0,1,2,ok,5,1,1,\n"
	delta := strings.Join(recordDeltaHeader, ",") + "\nD1,1,1,ok,1,0,,1,5,0,2,/k\n"
	for _, tc := range []struct{ in, want string }{
		{"id,dc\n", ":1: 2 columns, want 12"},
		{strings.Replace(abs, "zxid", "zx", 1), `:1: column 9 is "zx"`},
		{abs + "2,D1,1,/k,x,1,2,ok,5,1,1,\n", ":3: field intended_ns"},
		{abs + "3,D1,1,/k,0,1,2,maybe,5,1,1,\n", ":3: field outcome"},
		{abs + "-4,D1,1,/k,0,1,2,ok,5,1,1,\n", ":3: field id"},
		{abs + "5,D1\n", "record on line 3: wrong number of fields"},
		{delta + "D1,1,1,ok,1,0,,1,5,x,2,/k\n", ":3: field intended_delta_ns"},
		{delta + "D1,1,1,ok,1,0,,99999999999,5,0,2,/k\n", ":3: field version_delta"},
		{delta + "D1,1,1,ok,1,0,,1,5,0,,/k\n", ":3: field latency_delta_ns"},
		{delta + "D1,1,1,ok,1,0,,1,5,0,2\n", "record on line 3: wrong number of fields"},
	} {
		path := filepath.Join(t.TempDir(), "requests.csv")
		if err := os.WriteFile(path, []byte(tc.in), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadRecords(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadRecords(%q) error %v, want it to name the file and contain %q", tc.in, err, tc.want)
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
