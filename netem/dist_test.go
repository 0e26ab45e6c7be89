package netem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tcLibDir is where Debian's iproute2 package installs the .dist files.
const tcLibDir = "/usr/lib/x86_64-linux-gnu/tc"

// needFile returns path, failing under CI and skipping locally when it is missing.
func needFile(t *testing.T, path, pkg string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing under CI (install Debian package %s): %v", path, pkg, err)
		}
		t.Skipf("%s missing (install Debian package %s): %v", path, pkg, err)
	}
	return path
}

// parseDist reads iproute2's .dist text format the way tc does: lines starting with
// '#' and empty lines are skipped, the rest are whitespace-separated integers.
func parseDist(data []byte) ([]int16, error) {
	var out []int16
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		for _, f := range strings.Fields(text) {
			v, err := strconv.ParseInt(f, 0, 16)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			out = append(out, int16(v))
		}
	}
	return out, sc.Err()
}

func TestTablesMatchDebian(t *testing.T) {
	for _, name := range []string{DistPareto, DistNormal, DistParetoNormal} {
		t.Run(name, func(t *testing.T) {
			path := needFile(t, filepath.Join(tcLibDir, name+".dist"), "iproute2")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := parseDist(data)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			got, err := Table(name)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != TableSize || len(want) != TableSize {
				t.Fatalf("sizes: generated %d, %s %d, want %d", len(got), path, len(want), TableSize)
			}
			diffs := 0
			for i := range got {
				if got[i] != want[i] {
					if diffs < 10 {
						t.Errorf("entry %d: generated %d, %s has %d", i, got[i], path, want[i])
					}
					diffs++
				}
			}
			if diffs > 0 {
				t.Errorf("%d of %d entries differ", diffs, TableSize)
			}
		})
	}
}

func TestTableNames(t *testing.T) {
	if tab, err := Table(DistUniform); err != nil || tab != nil {
		t.Errorf("Table(uniform) = %v, %v; want nil, nil", tab, err)
	}
	if _, err := Table("gamma"); err == nil || !strings.Contains(err.Error(), "gamma") {
		t.Errorf("Table(gamma) error = %v; want one naming the distribution", err)
	}
	a, _ := Table(DistPareto)
	a[0] = 1
	if b, _ := Table(DistPareto); b[0] == 1 {
		t.Error("Table returns shared storage")
	}
}
