package pole

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/*.txt")

// A script is a list of cases, etcd-raft style:
//
//	# comment
//	command arg key=value key=(a,b)
//	----
//	expected output
//	<blank line>
//
// Each command's output is compared with the expected lines; -update rewrites them.
type scriptCase struct {
	pre  []string // comment and blank lines before the command
	cmd  string
	line int
	want string
}

func parseScript(path string) ([]scriptCase, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var cases []scriptCase
	var pre []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			pre = append(pre, l)
			continue
		}
		c := scriptCase{pre: pre, cmd: l, line: i + 1}
		pre = nil
		if i+1 >= len(lines) || lines[i+1] != "----" {
			return nil, nil, fmt.Errorf("%s:%d: command %q is not followed by ----", path, i+1, l)
		}
		i += 2
		var out []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			out = append(out, lines[i])
		}
		c.want = strings.Join(out, "\n")
		cases = append(cases, c)
	}
	return cases, pre, nil
}

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cases, tail, err := parseScript(path)
			if err != nil {
				t.Fatal(err)
			}
			env := &interactionEnv{}
			var b strings.Builder
			for _, c := range cases {
				got, err := env.run(c.cmd)
				if err != nil {
					got = "error: " + err.Error()
				}
				if got == "" {
					got = "ok"
				}
				if !*update && got != c.want {
					t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, c.line, c.cmd, got, c.want)
				}
				for _, p := range c.pre {
					b.WriteString(p + "\n")
				}
				fmt.Fprintf(&b, "%s\n----\n%s\n\n", c.cmd, got)
			}
			for _, p := range tail {
				b.WriteString(p + "\n")
			}
			if *update {
				text := strings.TrimRight(b.String(), "\n") + "\n"
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestParseScriptRejectsMissingSeparator(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(path, []byte("# x\nstatus\nnot a separator\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := parseScript(path); err == nil || !strings.Contains(err.Error(), "bad.txt:2") {
		t.Fatalf("want an error naming bad.txt:2, got %v", err)
	}
}
