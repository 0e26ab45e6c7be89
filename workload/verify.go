package workload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/polebench/polebench/workload/client"
)

// VerifyConfig says where and what to read back after a run.
type VerifyConfig struct {
	Servers []Server // live servers; each one is read
	// Down are the servers marked down: etcd's protocol reads them too where they
	// answer, ZooKeeper's does not.
	Down           []Server
	Prefix         string // default /polebench
	Keys           int    // default 1000
	RunID          string // the run whose values are expected (Result.RunID)
	SessionTimeout time.Duration
	// Linearizability is porcupine's time budget for the per-key check of the recorded
	// history; default 10 s, negative skips the check.
	Linearizability time.Duration
	Log             *slog.Logger
}

// VerifyConfig returns the read-back settings of this workload's run, reading from every
// server not marked down.
func (w *Workload) VerifyConfig() VerifyConfig {
	var live, down []Server
	for _, s := range w.cfg.Servers {
		if w.servers[s.ID].killed.Load() {
			down = append(down, s)
		} else {
			live = append(live, s)
		}
	}
	return VerifyConfig{Servers: live, Down: down, Prefix: w.cfg.Prefix, Keys: w.cfg.Keys,
		RunID: w.cfg.RunID, SessionTimeout: w.cfg.SessionTimeout, Log: w.cfg.Log}
}

// Anomaly is one final value that the recorded history does not explain.
type Anomaly struct {
	Server  int    `json:"server"`
	Key     string `json:"key"`
	GotID   uint64 `json:"got_id"`   // request id in the value read (0: the initial value)
	GotZxid int64  `json:"got_zxid"` // its Mzxid
	Lost    int    `json:"lost"`     // acknowledged writes with a higher zxid than the value read
	Msg     string `json:"msg"`
}

// Verification is the read-back verdict.
type Verification struct {
	Servers      []int `json:"servers"`
	Keys         int   `json:"keys"`
	Reads        int   `json:"reads"`
	Acknowledged int   `json:"acknowledged"`
	// LostAcknowledgedWrites counts distinct acknowledged writes that some live server
	// does not reflect: its final value of the key is older than the write.
	LostAcknowledgedWrites int       `json:"lost_acknowledged_writes"`
	Anomalies              []Anomaly `json:"anomalies,omitempty"`
	// CommittedUnknown counts writes with outcome unknown whose value a server holds.
	CommittedUnknown int `json:"committed_unknown"`
	// Linearizability is porcupine's verdict on the per-key histories (acknowledged and
	// unknown writes, plus the final reads): ok, illegal, unknown (out of time) or skipped.
	Linearizability string   `json:"linearizability"`
	IllegalKeys     []string `json:"illegal_keys,omitempty"`
}

// Err is nil when no acknowledged write was lost, every value is explained and the
// history is not known to be non-linearizable.
func (v *Verification) Err() error {
	var errs []error
	if v.LostAcknowledgedWrites > 0 {
		errs = append(errs, fmt.Errorf("%d acknowledged writes lost", v.LostAcknowledgedWrites))
	}
	if n := len(v.Anomalies); n > 0 {
		a := v.Anomalies[0]
		errs = append(errs, fmt.Errorf("%d unexplained final values (first: server %d key %s: %s)", n, a.Server, a.Key, a.Msg))
	}
	if v.Linearizability == "illegal" {
		errs = append(errs, fmt.Errorf("history not linearizable on keys %v", v.IllegalKeys))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("workload: verification: %w", errors.Join(errs...))
}

// read is one final value of a key on a server.
type read struct {
	server int
	key    string
	data   []byte
	mzxid  int64
	ver    int32
	err    error
}

// Verify reads every key from every server in cfg and checks it against recs. For each
// key, the final value must be the acknowledged write with the highest zxid, or a later
// write whose outcome was unknown; anything else is an anomaly. The error is about
// reading; the verdict is in the Verification (see Err).
func Verify(ctx context.Context, cfg VerifyConfig, recs []Record) (*Verification, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = client.DefaultPrefix
	}
	if cfg.Keys <= 0 {
		cfg.Keys = defaultKeys
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = defaultSessionTimeout
	}
	if cfg.Linearizability == 0 {
		cfg.Linearizability = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Servers) == 0 || cfg.RunID == "" {
		return nil, errors.New("workload: verify: need servers and the run id")
	}
	var reads []read
	var ids []int
	for _, s := range cfg.Servers {
		rs, err := readAll(ctx, cfg, s)
		if err != nil {
			return nil, err
		}
		ids = append(ids, s.ID)
		reads = append(reads, rs...)
	}
	v := judge(recs, reads, cfg.RunID, cfg.Linearizability)
	v.Servers, v.Keys = ids, cfg.Keys
	cfg.Log.Info("verification", "reads", v.Reads, "acknowledged", v.Acknowledged,
		"lost", v.LostAcknowledgedWrites, "anomalies", len(v.Anomalies),
		"committed_unknown", v.CommittedUnknown, "linearizability", v.Linearizability)
	return v, nil
}

// judge checks final reads against the recorded history.
func judge(recs []Record, reads []read, runID string, budget time.Duration) *Verification {
	v := &Verification{Reads: len(reads)}
	vals := decodeReads(reads)
	// Only the writes some read names are looked up by id: a map of those few, not
	// of every record.
	byID := map[uint64]*Record{}
	for _, d := range vals {
		if d.err == nil && d.run == runID && d.id != 0 {
			byID[d.id] = nil
		}
	}
	for i := range recs {
		r := &recs[i]
		if _, ok := byID[r.ID]; ok {
			byID[r.ID] = r
		}
		if r.Outcome == OK {
			v.Acknowledged++
		}
	}
	hist := historiesOf(recs, reads, vals)
	newer := func(key string, z int64) (n int) { // acknowledged writes to key above z
		if h := hist[key]; h != nil {
			for _, w := range h.writes {
				if w.acked && w.zxid > z {
					n++
				}
			}
		}
		return n
	}
	lost := map[string]int64{} // key -> oldest final zxid seen; acked writes above it are lost
	unknownSeen := map[uint64]bool{}
	for i, rd := range reads {
		bad := func(id uint64, msg string) {
			v.Anomalies = append(v.Anomalies, Anomaly{Server: rd.server, Key: rd.key, GotID: id, GotZxid: rd.mzxid, Msg: msg})
		}
		if rd.err != nil {
			bad(0, "read failed: "+rd.err.Error())
			continue
		}
		run, id, err := vals[i].run, vals[i].id, vals[i].err
		switch {
		case err != nil:
			bad(0, err.Error())
			continue
		case run != runID:
			bad(id, fmt.Sprintf("value of run %q, want %q", run, runID))
			continue
		case id != 0:
			w := byID[id]
			switch {
			case w == nil:
				bad(id, "value of a write that was never recorded")
				continue
			case w.Key != rd.key:
				bad(id, fmt.Sprintf("value of a write to %s", w.Key))
				continue
			case w.Outcome == Failed:
				bad(id, "value of a write that failed definitely: "+w.Err)
				continue
			case w.Outcome == OK && w.Zxid != rd.mzxid:
				bad(id, fmt.Sprintf("acknowledged with zxid %#x, stored with %#x", w.Zxid, rd.mzxid))
				continue
			case w.Outcome == Unknown:
				unknownSeen[id] = true
			}
		}
		if n := newer(rd.key, rd.mzxid); n > 0 {
			v.Anomalies = append(v.Anomalies, Anomaly{Server: rd.server, Key: rd.key, GotID: id, GotZxid: rd.mzxid, Lost: n,
				Msg: fmt.Sprintf("%d acknowledged writes newer than the value read", n)})
			if old, ok := lost[rd.key]; !ok || rd.mzxid < old {
				lost[rd.key] = rd.mzxid
			}
		}
	}
	for k, z := range lost {
		v.LostAcknowledgedWrites += newer(k, z)
	}
	v.CommittedUnknown = len(unknownSeen)
	v.Linearizability, v.IllegalKeys = hist.checkLinearizable(recs, reads, vals, runID, budget)
	return v
}

// decoded is a read's value, decoded.
type decoded struct {
	run string
	id  uint64
	err error
}

func decodeReads(reads []read) []decoded {
	out := make([]decoded, len(reads))
	for i, rd := range reads {
		if rd.err == nil {
			out[i].run, out[i].id, out[i].err = decodeValue(rd.data)
		}
	}
	return out
}

// histories are the history of each key: its acknowledged and unknown writes, in
// the records' order, and the reads of it that decoded (indexes into the reads). A key
// has one if it has any of those.
type histories map[string]*keyHistory

type keyHistory struct {
	writes []write
	reads  []int
}

// write is what the checks need of a record, kept together per key.
type write struct {
	id         uint64
	sent, done int64
	zxid       int64
	ver        int32
	acked      bool // OK; else Unknown
}

func historiesOf(recs []Record, reads []read, vals []decoded) histories {
	h := histories{}
	key := func(key string) *keyHistory {
		k := h[key]
		if k == nil {
			k = &keyHistory{}
			h[key] = k
		}
		return k
	}
	// Counted first, so each key's writes take their share of one allocation.
	of := make([]*keyHistory, len(recs))
	counts := map[*keyHistory]int{}
	for i := range recs {
		if r := &recs[i]; r.Outcome == OK || r.Outcome == Unknown {
			of[i] = key(r.Key)
			counts[of[i]]++
		}
	}
	slab := make([]write, 0, len(recs))
	for k, n := range counts {
		k.writes, slab = slab[len(slab):len(slab):len(slab)+n], slab[:len(slab)+n]
	}
	for i, k := range of {
		if k != nil {
			r := &recs[i]
			k.writes = append(k.writes, write{id: r.ID, sent: int64(r.Sent), done: int64(r.Done), zxid: r.Zxid, ver: r.Version, acked: r.Outcome == OK})
		}
	}
	for i, rd := range reads {
		if rd.err == nil && vals[i].err == nil {
			k := key(rd.key)
			k.reads = append(k.reads, i)
		}
	}
	return h
}

// readAll syncs server s with the leader and reads every key.
func readAll(ctx context.Context, cfg VerifyConfig, s Server) ([]read, error) {
	conn, _, err := zk.Connect([]string{s.Addr}, cfg.SessionTimeout,
		// Gone once ctx ends: a server that never serves again fails the requests
		// waiting for it (ErrNoServer) instead of holding them forever.
		zk.WithHostProvider(&pinnedHost{addr: s.Addr, gone: func() bool { return ctx.Err() != nil }}), zk.WithLogger(zkLogger{cfg.Log}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("workload: verify: server %d: %w", s.ID, err)
	}
	defer conn.Close()
	// Sync first: a follower answers reads from its own state, which may lag the leader.
	for {
		_, err := conn.Sync(cfg.Prefix)
		if err == nil {
			break
		}
		if !errors.Is(err, zk.ErrNoServer) && !errors.Is(err, zk.ErrConnectionClosed) {
			return nil, fmt.Errorf("workload: verify: sync on server %d: %w", s.ID, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("workload: verify: server %d: %w (last: %v)", s.ID, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	out := make([]read, cfg.Keys)
	idx := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				k := KeyPath(cfg.Prefix, i)
				data, st, err := conn.Get(k)
				out[i] = read{server: s.ID, key: k, data: data, err: err}
				if err == nil {
					out[i].mzxid, out[i].ver = st.Mzxid, st.Version
				}
			}
		}()
	}
	var cerr error
	for i := range cfg.Keys {
		select {
		case idx <- i:
		case <-ctx.Done():
			cerr = ctx.Err()
		}
		if cerr != nil {
			break
		}
	}
	close(idx)
	wg.Wait()
	if cerr != nil {
		return nil, fmt.Errorf("workload: verify: server %d: %w", s.ID, cerr)
	}
	return out, nil
}

// The porcupine model is one znode under setData: its value (a request id) and data
// version. The version is unknown (-1) until an acknowledged write pins it, because
// the keyspace may have been written before the run.
type regState struct {
	id  uint64
	ver int64
}

type regInput struct {
	write bool
	id    uint64 // write: the id written
}

type regOutput struct {
	known bool   // false: a write whose outcome is unknown
	id    uint64 // read: the id read
	ver   int64  // the data version after the write, or read
}

var registerModel = porcupine.Model{
	Init: func() interface{} { return regState{ver: -1} },
	Step: func(st, in, out interface{}) (bool, interface{}) {
		return stepRegister(st.(regState), in.(regInput), out.(regOutput))
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(regInput), out.(regOutput)
		if i.write {
			return fmt.Sprintf("set(%d) -> v%d known=%v", i.id, o.ver, o.known)
		}
		return fmt.Sprintf("get() -> %d v%d", o.id, o.ver)
	},
}

// stepRegister is the model's step: whether output o of input i is legal in state s,
// and the state after it.
func stepRegister(s regState, i regInput, o regOutput) (bool, regState) {
	next := func(v int64) int64 {
		if v < 0 {
			return -1
		}
		return v + 1
	}
	switch {
	case i.write && !o.known:
		return true, regState{id: i.id, ver: next(s.ver)}
	case i.write:
		return s.ver < 0 || o.ver == s.ver+1, regState{id: i.id, ver: o.ver}
	default:
		return s.id == o.id && (s.ver < 0 || s.ver == o.ver), regState{id: o.id, ver: o.ver}
	}
}

// checkLinearizable runs porcupine on each key's history: acknowledged writes over
// [sent, done], unknown writes from sent to after the end (they may take effect at any
// later time, or never), and the final reads at the end.
func checkLinearizable(recs []Record, reads []read, runID string, budget time.Duration) (string, []string) {
	vals := decodeReads(reads)
	return historiesOf(recs, reads, vals).checkLinearizable(recs, reads, vals, runID, budget)
}

func (h histories) checkLinearizable(recs []Record, reads []read, vals []decoded, runID string, budget time.Duration) (string, []string) {
	if budget < 0 {
		return "skipped", nil
	}
	var end int64
	for _, r := range recs {
		end = max(end, int64(r.Done))
	}
	end++
	readOut := func(i int) regOutput {
		id := vals[i].id
		if vals[i].run != runID {
			id = math.MaxUint64 // no write of this run explains it
		}
		return regOutput{known: true, id: id, ver: int64(reads[i].ver)}
	}
	keys := slices.Sorted(maps.Keys(h))
	deadline := time.Now().Add(budget)
	verdict := "ok"
	var illegal []string
	var scratch []write
	for _, key := range keys {
		left := time.Until(deadline)
		if left <= 0 {
			return "unknown", illegal
		}
		k := h[key]
		if k.sequential(readOut, end, &scratch) {
			continue // linearizable: porcupine would find it so too, searching
		}
		switch porcupine.CheckOperationsTimeout(registerModel, k.operations(readOut, end), left) {
		case porcupine.Illegal:
			illegal = append(illegal, key)
			verdict = "illegal"
		case porcupine.Unknown:
			if verdict == "ok" {
				verdict = "unknown"
			}
		}
	}
	return verdict, illegal
}

// operations is the key's history as porcupine takes it.
func (k *keyHistory) operations(readOut func(int) regOutput, end int64) []porcupine.Operation {
	never := end + int64(time.Hour)
	ops := make([]porcupine.Operation, 0, len(k.writes)+len(k.reads))
	for _, w := range k.writes {
		if w.acked {
			ops = append(ops, porcupine.Operation{Input: regInput{write: true, id: w.id},
				Call: w.sent, Output: regOutput{known: true, ver: int64(w.ver)}, Return: w.done})
		} else {
			ops = append(ops, porcupine.Operation{Input: regInput{write: true, id: w.id},
				Call: w.sent, Output: regOutput{}, Return: never})
		}
	}
	for _, i := range k.reads {
		ops = append(ops, porcupine.Operation{Input: regInput{}, Call: end, Output: readOut(i), Return: end})
	}
	return ops
}

// sequential tells whether the linearization a correct history has is one: the
// acknowledged writes in version order, the final reads, then the unknown writes
// (which may take effect whenever, and which nothing read). If not, only porcupine's
// search can tell. An order is a linearization when the model accepts each step and
// no operation comes after one that returned before it was called (porcupine's
// order: at one instant, calls before returns). scratch is reused.
func (k *keyHistory) sequential(readOut func(int) regOutput, end int64, scratch *[]write) bool {
	order := (*scratch)[:0]
	for _, w := range k.writes {
		if w.acked {
			order = append(order, w)
		}
	}
	*scratch = order
	byVersion := func(a, b write) int { return cmp.Compare(a.ver, b.ver) }
	if !slices.IsSortedFunc(order, byVersion) {
		slices.SortStableFunc(order, byVersion)
	}
	st, ok := regState{ver: -1}, false
	latest := int64(math.MinInt64) // the latest call so far
	for _, w := range order {
		if ok, st = stepRegister(st, regInput{write: true, id: w.id}, regOutput{known: true, ver: int64(w.ver)}); !ok || latest > w.done {
			return false
		}
		latest = max(latest, w.sent)
	}
	for _, i := range k.reads {
		if ok, st = stepRegister(st, regInput{}, readOut(i)); !ok || latest > end {
			return false
		}
		latest = end
	}
	never := end + int64(time.Hour)
	for _, w := range k.writes {
		if !w.acked {
			if latest > never {
				return false
			}
			latest = max(latest, w.sent)
		}
	}
	return true
}
