package callgrind

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunSplits builds testdata/spin (with its symbols, as go build keeps them: a
// test binary has none), runs it under callgrind and checks that the parts' shares
// are self costs: the loop's in spin, none of it in its callers.
func TestRunSplits(t *testing.T) {
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	exe := filepath.Join(dir, "spin")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", exe, "./testdata/spin").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	p, err := Run(ctx, dir, exe)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, OutFile)); err != nil {
		t.Fatal(err)
	}
	shares := p.Split([]Part{
		{Name: "glue", Prefixes: []string{"main.work", "main.spinA", "main.spinB"}},
		{Name: "loop", Prefixes: []string{"main.spin"}}, // the first part that matches owns a function
	})
	got := map[string]uint64{}
	var sum uint64
	for _, s := range shares {
		got[s.Name] = s.Instructions
		sum += s.Instructions
	}
	// spin's loop runs 9 M rounds of a multiply, an add, an increment, a compare and
	// a branch: at least 5 instructions each, all in spin's own code.
	if got["loop"] < 45e6 || got["loop"] > 90e6 {
		t.Errorf("spin: %d instructions, want 5 to 10 a round of 9 M (shares %v, total %d)", got["loop"], got, p.Total)
	}
	// work, spinA and spinB only call: a few instructions each, whatever their callees cost.
	if got["glue"] > 1000 {
		t.Errorf("main's callers: %d instructions of their own, want a few (shares %v)", got["glue"], got)
	}
	if sum != p.Total {
		t.Errorf("shares sum to %d, total %d", sum, p.Total)
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"cost before events", "fn=(1) f\n0 5\n", "line 2: a cost before the events: line names Ir"},
		{"bad number", "events: Ir\nfn=(1) f\n0 x\n", `line 3: "0 x"`},
		{"not callgrind", "events: Ir\nhello world\n", `line 2: "hello world": not callgrind's format`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestReadCompressed reads names given once by id, a call's inclusive cost, and the
// subposition shorthand (+N, -N, *).
func TestReadCompressed(t *testing.T) {
	in := `# callgrind format
version: 1
positions: line
events: Ir
fl=(1) a.go
fn=(1) main
10 4
+1 6
cfl=(1)
cfn=(2) helper
calls=2 20
* 100
fn=(2)
20 100
summary: 110
`
	p, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if p.Total != 110 || p.Self["main"] != 10 || p.Self["helper"] != 100 || p.Calls[[2]string{"main", "helper"}] != 100 {
		t.Errorf("profile %+v", p)
	}
	sh := p.Split([]Part{{Name: "h", Prefixes: []string{"helper"}}})
	if sh[0].Instructions != 100 || sh[1].Name != "other" || sh[1].Instructions != 10 {
		t.Errorf("split %+v", sh)
	}
}

// TestJudged leaves the runtime's part out of the judged total, and only it.
func TestJudged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []Share
		want  uint64
	}{
		{"runtime out", []Share{{"simulation", 60}, {"runtime", 30}, {"other", 10}}, 70},
		{"no runtime part", []Share{{"simulation", 90}, {"other", 10}}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &RunResult{Writes: 10, Total: 100, Parts: tc.parts}
			if got := r.Judged(); got != tc.want {
				t.Errorf("judged %d, want %d", got, tc.want)
			}
			if !strings.Contains(r.Table(), "judged") {
				t.Errorf("table without its judged line:\n%s", r.Table())
			}
		})
	}
}
