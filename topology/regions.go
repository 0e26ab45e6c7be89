package topology

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The regions preset: published inter-region round-trip times (regions/azure.csv, its
// source and date in its header), so that a data center can say where it is
// (region: westeurope) instead of giving RTTs.

//go:embed regions/azure.csv
var azureCSV []byte

type regionTable struct {
	names []string
	rtt   map[[2]string][]float64 // sorted pair -> the published directions
}

var regions = sync.OnceValue(func() regionTable {
	t, err := parseRegions(azureCSV)
	if err != nil {
		panic(fmt.Sprintf("topology: regions/azure.csv: %v", err)) // tested
	}
	return t
})

func parseRegions(data []byte) (regionTable, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.FieldsPerRecord = 3
	recs, err := r.ReadAll()
	if err != nil {
		return regionTable{}, err
	}
	t := regionTable{rtt: map[[2]string][]float64{}}
	for i, rec := range recs {
		if i == 0 {
			continue // header
		}
		a, b := rec[0], rec[1]
		v, err := strconv.ParseFloat(rec[2], 64)
		if err != nil || v <= 0 || a == b {
			return regionTable{}, fmt.Errorf("row %d: %q", i+1, strings.Join(rec, ","))
		}
		k := [2]string{min(a, b), max(a, b)}
		t.rtt[k] = append(t.rtt[k], v)
		t.names = append(t.names, a, b)
	}
	slices.Sort(t.names)
	t.names = slices.Compact(t.names)
	for _, a := range t.names {
		for _, b := range t.names {
			if a < b && len(t.rtt[[2]string{a, b}]) != 2 {
				return regionTable{}, fmt.Errorf("%s-%s: %d directions, want 2", a, b, len(t.rtt[[2]string{a, b}]))
			}
		}
	}
	return t, nil
}

// Regions lists the preset's region names, sorted.
func Regions() []string { return slices.Clone(regions().names) }

// KnownRegion says whether the preset has the region.
func KnownRegion(name string) bool { return slices.Contains(regions().names, name) }

// RegionRTT is the preset's RTT between two regions in ms: the mean of the two
// published directions.
func RegionRTT(a, b string) (float64, bool) {
	v := regions().rtt[[2]string{min(a, b), max(a, b)}]
	if len(v) == 0 {
		return 0, false
	}
	var sum float64
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v)), true
}
