package runner

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polebench/polebench/trial"
)

// analysisFiles are what the analysis writes into a run directory, as opposed to the
// test and history the store keeps.
func analysisFile(name string) bool {
	return name == "summary.json" || name == "aggregate.json" || name == "timeseries.csv" || strings.HasPrefix(name, "hdr-") || strings.HasSuffix(name, ".png")
}

// checkAnalyze: a copy of the run directory dir (a run or a repetition set) without
// its analysis files, analysed again (polebench analyze), gives every analysis file back:
// the data byte for byte, the plots as pictures of the same size.
func checkAnalyze(t *testing.T, dir string) {
	t.Helper()
	cp := t.TempDir()
	var want []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if d.Name() == "logs" || d.Name() == "data" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(cp, rel), 0o755)
		}
		if analysisFile(d.Name()) {
			want = append(want, rel)
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(cp, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatalf("%s: no analysis files to compare", dir)
	}
	if _, err := trial.AnalyzeDir(cp, nil); err != nil {
		t.Fatalf("analyze: %v", err)
	}
	for _, name := range want {
		a, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(cp, name))
		if err != nil {
			t.Errorf("analyze did not write %s: %v", name, err)
			continue
		}
		if strings.HasSuffix(name, ".png") {
			// A plot is compared as a picture of the same size: its data are the files
			// above, compared byte for byte.
			if sa, sb := pngSize(t, a), pngSize(t, b); sa != sb {
				t.Errorf("analyze drew %s at %v, the run at %v", name, sb, sa)
			}
			continue
		}
		if !bytes.Equal(a, b) {
			t.Errorf("analyze wrote another %s than the run did (%d bytes, the run's %d)%s", name, len(b), len(a), firstDiff(a, b))
		}
	}
}

// firstDiff shows the first line where two text files differ.
func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf(": line %d is %q, the run's %q", i+1, lb[i], la[i])
		}
	}
	return ""
}

// pngSize is a PNG's width and height.
func pngSize(t *testing.T, b []byte) image.Point {
	t.Helper()
	c, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Errorf("not a PNG: %v", err)
	}
	return image.Point{X: c.Width, Y: c.Height}
}
