package analysis

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/polebench/polebench/workload"
)

// Point is one bucket of a DC's latency time series.
type Point struct {
	T       float64 // bucket middle, s from the run's start
	MeanMS  float64 // mean latency of the acknowledged requests intended in the bucket
	Count   int     // acknowledged requests
	Failed  int
	Unknown int
}

// Series is latency per DC over time (Fig. 4b), bucketed by intended send time.
type Series struct {
	Bucket time.Duration
	DCs    []string           // sorted
	Points map[string][]Point // per DC, in time order; buckets without requests are absent
}

// TimeSeries buckets recs by intended time into buckets of the given width
// (e.g. 250 ms).
func TimeSeries(recs []workload.Record, bucket time.Duration) (*Series, error) {
	if bucket <= 0 {
		return nil, fmt.Errorf("analysis: time series bucket %v must be positive", bucket)
	}
	type acc struct {
		sum                float64
		ok, failed, unknwn int
	}
	buckets := map[string]map[int64]*acc{}
	for _, r := range recs {
		m := buckets[r.DC]
		if m == nil {
			m = map[int64]*acc{}
			buckets[r.DC] = m
		}
		i := int64(r.Intended / bucket)
		a := m[i]
		if a == nil {
			a = &acc{}
			m[i] = a
		}
		switch r.Outcome {
		case workload.OK:
			a.ok++
			a.sum += ms(r.Latency())
		case workload.Failed:
			a.failed++
		default:
			a.unknwn++
		}
	}
	s := &Series{Bucket: bucket, Points: map[string][]Point{}}
	for dc, m := range buckets {
		s.DCs = append(s.DCs, dc)
		idx := make([]int64, 0, len(m))
		for i := range m {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		for _, i := range idx {
			a := m[i]
			p := Point{T: (float64(i) + 0.5) * bucket.Seconds(), Count: a.ok, Failed: a.failed, Unknown: a.unknwn}
			if a.ok > 0 {
				p.MeanMS = a.sum / float64(a.ok)
			}
			s.Points[dc] = append(s.Points[dc], p)
		}
	}
	slices.Sort(s.DCs)
	return s, nil
}

// WriteCSV writes the series as dc,t_s,mean_ms,ok,failed,unknown rows.
func (s *Series) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"dc", "t_s", "mean_ms", "ok", "failed", "unknown"})
	for _, dc := range s.DCs {
		for _, p := range s.Points[dc] {
			cw.Write([]string{dc, strconv.FormatFloat(p.T, 'f', 3, 64), strconv.FormatFloat(p.MeanMS, 'f', 3, 64),
				strconv.Itoa(p.Count), strconv.Itoa(p.Failed), strconv.Itoa(p.Unknown)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// HDR histograms record latency in ns from 1 µs to 10 min with 3 significant digits.
const (
	hdrLowest  = int64(time.Microsecond)
	hdrHighest = int64(10 * time.Minute)
	hdrDigits  = 3
)

// Histograms returns an HDR histogram of acknowledged latencies per DC (and All) in w.
func Histograms(recs []workload.Record, w Window) (map[string]*hdrhistogram.Histogram, error) {
	out := map[string]*hdrhistogram.Histogram{}
	for _, r := range recs {
		if r.Outcome != workload.OK || !w.contains(r.Intended) {
			continue
		}
		for _, k := range []string{r.DC, All} {
			h := out[k]
			if h == nil {
				h = hdrhistogram.New(hdrLowest, hdrHighest, hdrDigits)
				h.SetStartTimeMs(w.From.Milliseconds())
				h.SetEndTimeMs(w.To.Milliseconds())
				h.SetTag(w.Name + "/" + k)
				out[k] = h
			}
			if err := h.RecordValue(int64(max(r.Latency(), time.Duration(hdrLowest)))); err != nil {
				return nil, fmt.Errorf("analysis: request %d: latency %v: %w", r.ID, r.Latency(), err)
			}
		}
	}
	return out, nil
}

// WriteHistograms writes one HdrHistogram log (values in ns, times relative to the run's
// start) per window and DC into dir, named hdr-<window>-<dc>.hlog, and returns the paths.
func WriteHistograms(dir string, recs []workload.Record, windows []Window) ([]string, error) {
	var paths []string
	for _, w := range windows {
		hs, err := Histograms(recs, w)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(hs))
		for k := range hs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := filepath.Join(dir, fmt.Sprintf("hdr-%s-%s.hlog", w.Name, k))
			if err := writeHistogram(p, hs[k], w, k); err != nil {
				return nil, err
			}
			paths = append(paths, p)
		}
	}
	return paths, nil
}

func writeHistogram(path string, h *hdrhistogram.Histogram, w Window, dc string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("analysis: %w", err)
	}
	lw := hdrhistogram.NewHistogramLogWriter(f)
	err = errors.Join(
		lw.OutputLogFormatVersion(),
		lw.OutputComment(fmt.Sprintf("[polebench latency, ns; window %s [%v, %v); dc %s]", w.Name, w.From, w.To, dc)),
		lw.OutputLegend(),
		lw.OutputIntervalHistogram(h),
		f.Close())
	if err != nil {
		return fmt.Errorf("analysis: writing %s: %w", path, err)
	}
	return nil
}
