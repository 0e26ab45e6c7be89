package main

import (
	"flag"
	"go/scanner"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/polebench/polebench/spec"
)

// The README and docs/ are checked against the code and against each other, so that
// what they say cannot drift from what the binary does.

const repoRoot = "../.."

// TestDocsReadmeLength: the README is a front door, not a manual.
func TestDocsReadmeLength(t *testing.T) {
	b := readDoc(t, "README.md")
	if n := strings.Count(string(b), "\n"); n > 200 {
		t.Errorf("README.md has %d lines; at most 200 (the rest belongs in docs/)", n)
	}
}

// TestDocsCommands: the README's command list is the one `polebench help` prints, in
// the same order, each with the same arguments and summary, and the README names every
// shipped spec.
func TestDocsCommands(t *testing.T) {
	code, out, errs := runCLI("help")
	if code != 0 {
		t.Fatalf("polebench help: exit %d: %s", code, errs)
	}
	var helped []string
	for _, m := range regexp.MustCompile(`(?m)^  polebench (\S+)`).FindAllStringSubmatch(out, -1) {
		helped = append(helped, m[1])
	}
	if len(helped) < 5 {
		t.Fatalf("parsed only %v from polebench help:\n%s", helped, out)
	}

	type entry struct{ name, args, rest string }
	readme := string(readDoc(t, "README.md"))
	_, section, ok := strings.Cut(readme, "\n## Commands\n")
	if !ok {
		t.Fatal("README.md has no ## Commands section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var listed []entry
	item := regexp.MustCompile("(?m)^- `polebench (\\S+)(?: ([^`]*))?`: (.*)$")
	for _, m := range item.FindAllStringSubmatch(section, -1) {
		listed = append(listed, entry{m[1], m[2], m[3]})
	}
	var names []string
	for _, e := range listed {
		names = append(names, e.name)
	}
	if !slices.Equal(names, helped) {
		t.Errorf("README.md's commands %v, polebench help's %v", names, helped)
	}

	byName := map[string]command{}
	for _, c := range commands() {
		byName[c.name] = c
	}
	for _, e := range listed {
		c, ok := byName[e.name]
		if !ok {
			continue // reported above
		}
		if e.args != c.args {
			t.Errorf("README.md: polebench %s %q; polebench help says %q", e.name, e.args, c.args)
		}
		if !strings.HasPrefix(e.rest, c.summary) {
			t.Errorf("README.md: polebench %s: %q; polebench help says %q", e.name, e.rest, c.summary)
		}
	}
	for _, s := range spec.ShippedNames() {
		if !strings.Contains(section, "`"+s+"`") {
			t.Errorf("README.md's commands section does not name the shipped spec %s", s)
		}
	}
}

// TestDocsOverrides: every override flag the CLI registers is a row of docs/spec.md's
// override table, and every row there is a flag the CLI registers.
func TestDocsOverrides(t *testing.T) {
	fs := flag.NewFlagSet("docs", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	overrideFlags(fs)
	var flags []string
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f.Name) })
	for _, o := range spec.Overrides() {
		if !slices.Contains(flags, o.Name) {
			t.Errorf("override %s has no flag", o.Name)
		}
	}
	if len(flags) < 10 {
		t.Fatalf("only %d override flags: %v", len(flags), flags)
	}

	doc := string(readDoc(t, "docs/spec.md"))
	_, table, ok := strings.Cut(doc, "\n## Overrides\n")
	if !ok {
		t.Fatal("docs/spec.md has no ## Overrides section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\|").FindAllStringSubmatch(table, -1) {
		rows = append(rows, m[1])
	}
	for _, f := range flags {
		if !slices.Contains(rows, f) {
			t.Errorf("docs/spec.md's override table lacks --%s", f)
		}
	}
	for _, r := range rows {
		if !slices.Contains(flags, r) {
			t.Errorf("docs/spec.md's override table lists --%s, which is no override flag", r)
		}
	}
}

// TestDocsLinks: every relative link (and image) of README.md and docs/*.md names a
// file of the repository, and an anchor names a heading of its page.
func TestDocsLinks(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(repoRoot, "README.md")}, docs...)
	link := regexp.MustCompile(`\]\(([^)\s]*)\)`)
	n := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, doc)
		for _, m := range link.FindAllStringSubmatch(prose(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			path, anchor, _ := strings.Cut(target, "#")
			file := doc
			if path != "" {
				file = filepath.Join(filepath.Dir(doc), path)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s links to %s, which is not in the repository", rel, target)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			tb, err := os.ReadFile(file)
			if err != nil {
				t.Errorf("%s links to %s: %v", rel, target, err)
				continue
			}
			if !slices.Contains(anchors(string(tb)), anchor) {
				t.Errorf("%s links to %s: no heading of %s has the anchor #%s", rel, target, filepath.Base(file), anchor)
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d relative links in README.md and docs/: the check checked next to nothing", n)
	}
}

// prose is markdown without its fenced code blocks and code spans, where a "](" is
// not a link.
func prose(md string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return regexp.MustCompile("`[^`\n]*`").ReplaceAllString(b.String(), "")
}

// anchors are the anchors GitHub gives md's headings: lower case, punctuation but
// hyphens and underscores dropped, spaces as hyphens, a repeated one numbered.
func anchors(md string) []string {
	var out []string
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var slug strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				slug.WriteRune(r)
			case r == ' ':
				slug.WriteByte('-')
			}
		}
		s := slug.String()
		if k := seen[s]; k > 0 {
			out = append(out, s+"-"+strconv.Itoa(k))
		} else {
			out = append(out, s)
		}
		seen[s]++
	}
	return out
}

func readDoc(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDocsNightlySample: the fidelity table docs/nightly.md shows is a real night's,
// line for line: the one testdata/nightly-quick.out keeps (what `polebench nightly
// --quick` printed).
func TestDocsNightlySample(t *testing.T) {
	doc := string(readDoc(t, "docs/nightly.md"))
	_, after, ok := strings.Cut(doc, "At the end of a night `polebench nightly` prints")
	_, after, ok2 := strings.Cut(after, "```\n")
	sample, _, ok3 := strings.Cut(after, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/nightly.md: no sample table after \"At the end of a night `polebench nightly` prints\"")
	}
	night, err := os.ReadFile(filepath.Join("testdata", "nightly-quick.out"))
	if err != nil {
		t.Fatal(err)
	}
	trim := func(s string) string {
		var b strings.Builder
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			b.WriteString(strings.TrimRight(l, " ") + "\n")
		}
		return b.String()
	}
	if n := strings.Count(sample, "\n"); n < 2 { // a header and a row at least
		t.Fatalf("docs/nightly.md's sample has %d lines:\n%s", n, sample)
	}
	if !strings.Contains(trim(string(night)), trim(sample)) {
		t.Errorf("docs/nightly.md's sample is not lines of testdata/nightly-quick.out:\n%s", sample)
	}
}

// TestDocsNoTrackerNumbers: no Go comment, in a test file or not, names an issue of the
// project's tracker by its number (the word issue and a number, or a hash and a
// number): a reader of the code has no tracker, so a comment says what the issue was
// about. Another project's issue (OWNER/NAME, a hash, a number) is a public reference
// and may stay.
func TestDocsNoTrackerNumbers(t *testing.T) {
	tracker := regexp.MustCompile(`(?i)\b(?:issues?|bugs?|tickets?|PRs?) #?\d+|(?:^|[^\w/.-])#\d+\b`)
	files := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		var s scanner.Scanner
		s.Init(fset.AddFile(path, -1, len(src)), src, nil, scanner.ScanComments)
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok == token.COMMENT && tracker.MatchString(lit) {
				rel, _ := filepath.Rel(repoRoot, fset.Position(pos).Filename)
				t.Errorf("%s:%d: a tracker number in a comment: %q", rel, fset.Position(pos).Line, tracker.FindString(lit))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Errorf("only %d Go files under %s: the check checked next to nothing", files, repoRoot)
	}
}
