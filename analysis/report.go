package analysis

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Files names what Report wrote into a run directory.
type Files struct {
	Summary    string   // summary.json
	Series     string   // timeseries.csv
	Plot       string   // latency.png
	Anatomy    string   // anatomy.png, when the run has an anatomy beside a model
	Histograms []string // hdr-<window>-<dc>.hlog
}

func hasModelledAnatomy(a map[string]map[string]AnatomyStats) bool {
	for _, byDC := range a {
		for dc, st := range byDC {
			if dc != All && st.ModelMS != nil {
				return true
			}
		}
	}
	return false
}

// Report analyses one run into dir: summary.json, timeseries.csv (bucket wide buckets;
// 0 means 250 ms), one HDR histogram log per window and DC, and latency.png (Fig. 4b
// style; the crash, the election and in.Model are taken from in unless set in plot).
func Report(dir string, in Input, bucket time.Duration, plot PlotOptions) (*Summary, *Files, error) {
	if bucket <= 0 {
		bucket = 250 * time.Millisecond
	}
	s, err := Summarize(in)
	if err != nil {
		return nil, nil, err
	}
	f := &Files{Summary: filepath.Join(dir, "summary.json"), Series: filepath.Join(dir, "timeseries.csv"),
		Plot: filepath.Join(dir, "latency.png")}
	if err := s.WriteFile(f.Summary); err != nil {
		return nil, nil, err
	}
	settle := in.Settle
	if settle <= 0 {
		settle = DefaultSettle
	}
	windows, err := in.Events.Windows(settle, lastIntended(in.Records))
	if err != nil {
		return nil, nil, err
	}
	if f.Histograms, err = WriteHistograms(dir, in.Records, windows); err != nil {
		return nil, nil, err
	}
	series, err := TimeSeries(in.Records, bucket)
	if err != nil {
		return nil, nil, err
	}
	out, err := os.Create(f.Series)
	if err != nil {
		return nil, nil, fmt.Errorf("analysis: %w", err)
	}
	if err := series.WriteCSV(out); err != nil {
		out.Close()
		return nil, nil, fmt.Errorf("analysis: writing %s: %w", f.Series, err)
	}
	if err := out.Close(); err != nil {
		return nil, nil, fmt.Errorf("analysis: %w", err)
	}
	if plot.Crash == 0 {
		plot.Crash = in.Events.Crash
	}
	if plot.Elected == 0 {
		plot.Elected = in.Events.Elected
	}
	if plot.Model == nil {
		plot.Model = in.Model
	}
	if plot.Moved == 0 {
		plot.Moved, plot.PlacedLeader = in.Events.Placed.Moved, in.Events.Placed.Leader
	}
	if plot.Windows == nil {
		plot.Windows = windows
	}
	if plot.Stalls == nil && in.Host != nil {
		plot.Stalls = in.Host.Stalls
	}
	if err := PlotTimeSeries(series, plot, f.Plot); err != nil {
		return nil, nil, err
	}
	if hasModelledAnatomy(s.Anatomy) {
		f.Anatomy = filepath.Join(dir, "anatomy.png")
		if err := PlotAnatomy(s.Anatomy, plot.Title+": where the latency goes", f.Anatomy); err != nil {
			return nil, nil, err
		}
	}
	return s, f, nil
}
