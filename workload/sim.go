package workload

import "time"

// What a simulated client needs to issue exactly the requests a real run issues and
// to judge its history the same way (package sim).

// Value is the value request id of run writes: a header naming both, padded to size.
func Value(run string, id uint64, size int) []byte { return encodeValue(run, id, size) }

// AppendValue is Value appended to b: a simulator that marshals the write at once
// can build every value in one buffer.
func AppendValue(b []byte, run string, id uint64, size int) []byte {
	return appendValue(b, run, id, size)
}

// Seeds are the random sources of one DC's pacer, derived from the run's seed and the
// DC's name as a real run derives them: arrivals, keys, and the first server pick.
func Seeds(seed uint64, dc string) (arrival, key, pick uint64) {
	return dcSeed(seed, dc, streamArrival), dcSeed(seed, dc, streamKey), dcSeed(seed, dc, streamPick)
}

// RequestID is the id of a DC's seq-th request (from 1), dcIndex its position among
// the DCs sorted by name.
func RequestID(dcIndex int, seq uint64) uint64 { return uint64(dcIndex+1)<<40 | seq }

// Final is one key's final value on one server, as a read-back finds it.
type Final struct {
	Server  int
	Key     string
	Data    []byte
	Mzxid   int64
	Version int32
	Err     error
}

// Judge checks final values against a recorded history exactly as Verify does after
// its read-back: servers and keys are what was read, budget porcupine's time.
func Judge(recs []Record, finals []Final, runID string, budget time.Duration, servers []int, keys int) *Verification {
	reads := make([]read, len(finals))
	for i, f := range finals {
		reads[i] = read{server: f.Server, key: f.Key, data: f.Data, mzxid: f.Mzxid, ver: f.Version, err: f.Err}
	}
	v := judge(recs, reads, runID, budget)
	v.Servers, v.Keys = servers, keys
	return v
}
