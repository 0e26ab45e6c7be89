package workload

import (
	"math"
	"strings"
	"testing"
	"time"
)

// A history on one key: w1 then w2 acknowledged (versions 1, 2), w3 unknown.
func history() []Record {
	ms := time.Millisecond
	return []Record{
		{ID: 11, Key: "/p/k00000", Sent: 1 * ms, Done: 2 * ms, Outcome: OK, Zxid: 100, Version: 1},
		{ID: 12, Key: "/p/k00000", Sent: 3 * ms, Done: 4 * ms, Outcome: OK, Zxid: 101, Version: 2},
		{ID: 13, Key: "/p/k00000", Sent: 5 * ms, Done: 6 * ms, Outcome: Unknown, Version: -1},
		{ID: 14, Key: "/p/k00000", Sent: 5 * ms, Done: 6 * ms, Outcome: Failed, Version: -1},
		{ID: 21, Key: "/p/k00001", Sent: 1 * ms, Done: 9 * ms, Outcome: OK, Zxid: 102, Version: 8},
	}
}

func rd(server int, key, run string, id uint64, zxid int64, ver int32) read {
	return read{server: server, key: key, data: encodeValue(run, id, 64), mzxid: zxid, ver: ver}
}

func TestJudge(t *testing.T) {
	k0, k1 := "/p/k00000", "/p/k00001"
	for _, tc := range []struct {
		name      string
		reads     []read
		lost      int
		anomaly   string // substring of the first anomaly; "" for none
		unknownOK int
		lin       string
	}{
		{name: "last acknowledged", lin: "ok",
			reads: []read{rd(1, k0, "r", 12, 101, 2), rd(1, k1, "r", 21, 102, 8), rd(2, k0, "r", 12, 101, 2), rd(2, k1, "r", 21, 102, 8)}},
		{name: "unknown write committed later", lin: "ok", unknownOK: 1,
			reads: []read{rd(1, k0, "r", 13, 105, 3), rd(1, k1, "r", 21, 102, 8)}},
		{name: "stale value loses an acknowledged write", lost: 1, anomaly: "1 acknowledged writes newer", lin: "illegal",
			reads: []read{rd(1, k0, "r", 11, 100, 1), rd(1, k1, "r", 21, 102, 8)}},
		{name: "initial value loses both", lost: 2, anomaly: "2 acknowledged writes newer", lin: "illegal",
			reads: []read{rd(1, k0, "r", 0, 7, 0), rd(1, k1, "r", 21, 102, 8)}},
		{name: "failed write visible", anomaly: "failed definitely", lin: "illegal",
			reads: []read{rd(1, k0, "r", 14, 106, 3), rd(1, k1, "r", 21, 102, 8)}},
		{name: "foreign run", anomaly: `value of run "old"`, lin: "illegal",
			reads: []read{rd(1, k0, "old", 12, 101, 2), rd(1, k1, "r", 21, 102, 8)}},
		{name: "zxid mismatch", anomaly: "acknowledged with zxid", lin: "ok",
			reads: []read{rd(1, k0, "r", 12, 99, 2), rd(1, k1, "r", 21, 102, 8)}},
		{name: "servers disagree", lost: 1, anomaly: "newer than the value read", lin: "illegal",
			reads: []read{rd(1, k0, "r", 12, 101, 2), rd(2, k0, "r", 11, 100, 1), rd(1, k1, "r", 21, 102, 8)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judge(history(), tc.reads, "r", 5*time.Second)
			if v.LostAcknowledgedWrites != tc.lost {
				t.Errorf("lost = %d, want %d", v.LostAcknowledgedWrites, tc.lost)
			}
			switch {
			case tc.anomaly == "" && len(v.Anomalies) > 0:
				t.Errorf("unexpected anomalies %+v", v.Anomalies)
			case tc.anomaly != "" && (len(v.Anomalies) == 0 || !strings.Contains(v.Anomalies[0].Msg, tc.anomaly)):
				t.Errorf("anomalies %+v, want first to contain %q", v.Anomalies, tc.anomaly)
			}
			if v.CommittedUnknown != tc.unknownOK {
				t.Errorf("committed unknown = %d, want %d", v.CommittedUnknown, tc.unknownOK)
			}
			if v.Linearizability != tc.lin {
				t.Errorf("linearizability %q (illegal keys %v), want %q", v.Linearizability, v.IllegalKeys, tc.lin)
			}
			if (v.Err() == nil) != (tc.lost == 0 && tc.anomaly == "" && tc.lin != "illegal") {
				t.Errorf("Err() = %v", v.Err())
			}
		})
	}
}

func TestLinearizabilityCatchesVersionOrderAgainstRealTime(t *testing.T) {
	// w2 started after w1 returned yet got the lower version: not linearizable, though the
	// final value is that of the highest zxid.
	ms := time.Millisecond
	recs := []Record{
		{ID: 1, Key: "/k", Sent: 1 * ms, Done: 2 * ms, Outcome: OK, Zxid: 10, Version: 2},
		{ID: 2, Key: "/k", Sent: 3 * ms, Done: 4 * ms, Outcome: OK, Zxid: 9, Version: 1},
	}
	got, keys := checkLinearizable(recs, []read{rd(1, "/k", "r", 1, 10, 2)}, "r", time.Second)
	if got != "illegal" || len(keys) != 1 {
		t.Errorf("verdict %q %v, want illegal on /k", got, keys)
	}
	// Overlapping, the same history is fine.
	recs[1].Sent = 1500 * time.Microsecond
	if got, _ := checkLinearizable(recs, []read{rd(1, "/k", "r", 1, 10, 2)}, "r", time.Second); got != "ok" {
		t.Errorf("concurrent writes: verdict %q, want ok", got)
	}
	if got, _ := checkLinearizable(recs, nil, "r", -1); got != "skipped" {
		t.Errorf("negative budget: %q, want skipped", got)
	}
}

func TestConfigValidation(t *testing.T) {
	srv := []Server{{ID: 1, DC: "D1", Addr: "127.0.0.1:1"}}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no servers", Config{}, "no servers"},
		{"duplicate id", Config{Servers: append(srv, srv[0])}, "repeated"},
		{"missing addr", Config{Servers: []Server{{ID: 1, DC: "D1"}}}, "addr"},
		{"rate for unknown DC", Config{Servers: srv, Rates: map[string]float64{"D9": 1}}, `"D9" has no servers`},
		{"negative rate", Config{Servers: srv, Rates: map[string]float64{"D1": -1}}, "positive"},
		{"NaN rate", Config{Servers: srv, Rates: map[string]float64{"D1": math.NaN()}}, "positive"},
		{"arrival", Config{Servers: srv, Arrival: "burst"}, "arrival"},
		{"prefix", Config{Servers: srv, Prefix: "x/"}, "prefix"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New error %v, want %q", tc.name, err, tc.want)
		}
	}
	w, err := New(Config{Servers: srv})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Run(t.Context()); err == nil {
		t.Error("Run before Prepare succeeded")
	}
}
