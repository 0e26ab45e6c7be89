package benchdata

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/analysis"
)

// TestHistoryPage: twelve nights, a latency that steps from 21 to 25 ms at the seventh
// (commit c7) and a count that never moves, one night with a run the host disturbed:
// the page names the one change with its night, date, commit and levels, draws both
// metrics inline, and counts the trusted runs.
func TestHistoryPage(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	day := time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC)
	var nights []Night
	for i := range 12 {
		mean := 21.0
		if i >= 6 {
			mean = 25
		}
		lat := latency("two-dc/latency.mean.before.D1", normal(r, 5, mean, 0.3))
		lat.Host = []string{analysis.Trusted, analysis.Trusted, analysis.Trusted, analysis.Trusted, analysis.Trusted}
		if i == 3 {
			lat.Host[2] = analysis.Untrusted
		}
		f := fileOf(lat, latency("two-dc/"+LostWritesKey, []float64{0, 0, 0, 0, 0}))
		f.Env = Env{Date: day.AddDate(0, 0, i), Commit: "c" + string(rune('0'+i%10)) + "0000000000"}
		nights = append(nights, NightOf(f))
	}
	dir := t.TempDir()
	page, err := WriteHistoryPage(nights, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Figures) != 2 {
		t.Fatalf("figures %v", page.Figures)
	}
	b, err := os.ReadFile(page.HTML)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	if n := strings.Count(html, `src="data:image/png;base64,`); n != 2 {
		t.Errorf("%d inline figures, want 2", n)
	}
	if n := strings.Count(html, `<tr class="metric">`); n != 2 {
		t.Errorf("%d metric rows, want 2", n)
	}
	change := regexp.MustCompile(`night 7 \(2026-11-07, c6000000\): (2[01]\.\d*) → (2[45]\.\d*) ms \((?:\+|&#43;)1[89]\.\d %\)`)
	if m := change.FindAllString(html, -1); len(m) != 2 { // in the table and under the figure
		t.Errorf("the change at night 7 is named %d times, want 2:\n%s", len(m), html)
	}
	if !strings.Contains(html, "1 changed") || !strings.Contains(html, "59 of 60 trusted") {
		t.Errorf("overview: want 1 changed metric and 59 of 60 trusted runs")
	}
	svg, err := os.ReadFile(strings.TrimSuffix(page.Figures[0], ".png") + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"11-07 c6000000", "change point", "the host did not leave quiet", "ms, lower is better"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("%s does not say %q", filepath.Base(page.Figures[0]), want)
		}
	}
}
