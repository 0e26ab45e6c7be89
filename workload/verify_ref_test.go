package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// porcupineReference is checkLinearizable as it was before the sequential shortcut:
// porcupine on every key. It is kept to check that the shortcut changes no verdict.
func porcupineReference(recs []Record, reads []read, runID string) (string, []string) {
	var end int64
	for _, r := range recs {
		end = max(end, int64(r.Done))
	}
	end++
	never := end + int64(time.Hour)
	hist := map[string][]porcupine.Operation{}
	for _, r := range recs {
		switch r.Outcome {
		case OK:
			hist[r.Key] = append(hist[r.Key], porcupine.Operation{Input: regInput{write: true, id: r.ID},
				Call: int64(r.Sent), Output: regOutput{known: true, ver: int64(r.Version)}, Return: int64(r.Done)})
		case Unknown:
			hist[r.Key] = append(hist[r.Key], porcupine.Operation{Input: regInput{write: true, id: r.ID},
				Call: int64(r.Sent), Output: regOutput{}, Return: never})
		}
	}
	for _, rd := range reads {
		if rd.err != nil {
			continue
		}
		run, id, err := decodeValue(rd.data)
		if err != nil {
			continue
		}
		if run != runID {
			id = math.MaxUint64
		}
		hist[rd.key] = append(hist[rd.key], porcupine.Operation{Input: regInput{},
			Call: end, Output: regOutput{known: true, id: id, ver: int64(rd.ver)}, Return: end})
	}
	var keys []string
	for k := range hist {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	verdict := "ok"
	var illegal []string
	for _, k := range keys {
		if !porcupine.CheckOperations(registerModel, hist[k]) {
			illegal = append(illegal, k)
			verdict = "illegal"
		}
	}
	return verdict, illegal
}

// randomHistory is a few keys' writes, some overlapping, some racing at one instant,
// with versions in order or now and then not, a few unknown or failed, and final
// reads of the last value or now and then of another.
func randomHistory(rng *rand.Rand) ([]Record, []read) {
	var recs []Record
	var reads []read
	id := uint64(1)
	for k := range 4 {
		key := fmt.Sprintf("/p/k%05d", k)
		t := time.Duration(rng.IntN(3)) * time.Millisecond
		ver := int32(rng.IntN(3))
		last := uint64(0)
		for range rng.IntN(6) {
			r := Record{ID: id, Key: key, Sent: t, Done: t + time.Duration(rng.IntN(4))*time.Millisecond, Outcome: OK, Zxid: int64(id), Version: ver + 1}
			id++
			switch rng.IntN(10) {
			case 0:
				r.Outcome, r.Version, r.Zxid = Unknown, -1, 0
			case 1:
				r.Outcome, r.Version, r.Zxid = Failed, -1, 0
			case 2:
				r.Version += int32(rng.IntN(3)) - 1 // a version out of line
			}
			if r.Outcome == OK {
				ver, last = r.Version, r.ID
			}
			recs = append(recs, r)
			t += time.Duration(rng.IntN(3)) * time.Millisecond // 0: the next one starts at once
		}
		for s := range 1 + rng.IntN(2) {
			got, v := last, ver
			switch rng.IntN(8) {
			case 0:
				got = uint64(rng.IntN(int(id))) // whatever was written, or the initial value
			case 1:
				v += int32(rng.IntN(3)) - 1
			}
			run := "r"
			if rng.IntN(30) == 0 {
				run = "old"
			}
			reads = append(reads, read{server: s + 1, key: key, data: encodeValue(run, got, 64), mzxid: int64(got), ver: v})
		}
	}
	rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	return recs, reads
}

// TestLinearizabilityShortcut: on random small histories, legal and not, the verdict
// with the sequential shortcut is porcupine's on every key.
func TestLinearizabilityShortcut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	verdicts := map[string]int{}
	shortcuts := 0
	for i := range 3000 {
		recs, reads := randomHistory(rng)
		vals := decodeReads(reads)
		var scratch []write
		for _, k := range historiesOf(recs, reads, vals) {
			if k.sequential(func(i int) regOutput { return regOutput{known: true, id: vals[i].id, ver: int64(reads[i].ver)} }, 1<<40, &scratch) {
				shortcuts++
			}
		}
		want, wantKeys := porcupineReference(recs, reads, "r")
		got, gotKeys := checkLinearizable(recs, reads, "r", time.Minute)
		if got != want || !slices.Equal(gotKeys, wantKeys) {
			t.Fatalf("history %d: verdict %q %v, porcupine alone %q %v\nrecords %+v\nreads %+v", i, got, gotKeys, want, wantKeys, recs, reads)
		}
		verdicts[got]++
	}
	if verdicts["ok"] < 300 || verdicts["illegal"] < 300 || shortcuts < 3000 {
		t.Errorf("verdicts %v, %d keys by the shortcut: want plenty of each", verdicts, shortcuts)
	}
	t.Logf("verdicts %v, %d keys by the shortcut", verdicts, shortcuts)
}
