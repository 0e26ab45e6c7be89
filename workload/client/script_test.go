package client

// Data-driven traces (testdata/*.txt): one DC's client driven by hand, every step it
// takes written out. A case is a command line, "----", and the expected output up to
// a blank line; "#" lines are comments. Run with -update to rewrite the expected output.
//
// Commands (times like 5ms, 10s):
//   dc name=D1 servers=STATES [seed=N] [pick=N] [retry=DUR]
//   servers STATES            one letter per server: u usable, i idle (live, no session), d down
//   issue id=N at=DUR         the request's first pick is drawn now
//   next id=N at=DUR | sending id=N at=DUR | stop id=N at=DUR
//   reply id=N at=DUR KIND [err=TEXT]    KIND: acked, refused, not-sent, lost, unavailable;
//                                        TEXT is the rest of the line
// Every command but dc, servers and sending prints the step; a step that ends the
// request prints its outcome and record.

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata expected output")

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runScript(t, f) })
	}
}

type scriptCase struct {
	comment, cmd, want string
	line               int
}

func parseScript(path string) ([]scriptCase, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cases []scriptCase
	var comment []string
	sc := bufio.NewScanner(f)
	ln := 0
	for sc.Scan() {
		ln++
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			continue
		case strings.HasPrefix(line, "#"):
			comment = append(comment, line)
			continue
		}
		c := scriptCase{comment: strings.Join(comment, "\n"), cmd: line, line: ln}
		comment = nil
		if !sc.Scan() || sc.Text() != "----" {
			return nil, fmt.Errorf("%s:%d: command %q not followed by ----", path, ln, line)
		}
		ln++
		var want []string
		for sc.Scan() {
			ln++
			if sc.Text() == "" {
				break
			}
			want = append(want, sc.Text())
		}
		c.want = strings.Join(want, "\n")
		cases = append(cases, c)
	}
	return cases, sc.Err()
}

func runScript(t *testing.T, path string) {
	cases, err := parseScript(path)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{reqs: map[uint64]*Request{}}
	var out strings.Builder
	for _, c := range cases {
		got, err := w.run(c.cmd)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", path, c.line, c.cmd, err)
		}
		if !*update && got != c.want {
			t.Errorf("%s:%d: %s\n--- got\n%s\n--- want\n%s", path, c.line, c.cmd, got, c.want)
		}
		if c.comment != "" {
			out.WriteString(c.comment + "\n")
		}
		fmt.Fprintf(&out, "%s\n----\n%s\n\n", c.cmd, got)
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// states are a DC's servers in the script: one letter each.
type states []byte

func (s states) Len() int          { return len(s) }
func (s states) Usable(i int) bool { return s[i] == 'u' }
func (s states) Down(i int) bool   { return s[i] == 'd' }

func parseStates(s string) (states, error) {
	if strings.Trim(s, "uid") != "" || s == "" {
		return nil, fmt.Errorf("servers %q: want letters u, i or d", s)
	}
	return states(s), nil
}

type world struct {
	dc   *DC
	srv  states
	reqs map[uint64]*Request
}

func (w *world) run(line string) (string, error) {
	line, errText, _ := strings.Cut(line, " err=") // the rest of the line
	f := strings.Fields(line)
	args := map[string]string{"err": errText}
	var words []string
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		} else {
			words = append(words, a)
		}
	}
	switch f[0] {
	case "dc":
		return w.newDC(args)
	case "servers":
		if len(words) != 1 {
			return "", fmt.Errorf("want one word of states")
		}
		st, err := parseStates(words[0])
		if err != nil {
			return "", err
		}
		if len(st) != len(w.srv) {
			return "", fmt.Errorf("%d servers, the dc has %d", len(st), len(w.srv))
		}
		copy(w.srv, st)
		return "ok", nil
	}
	if w.dc == nil {
		return "", fmt.Errorf("no dc yet")
	}
	id, err := strconv.ParseUint(args["id"], 10, 64)
	if err != nil {
		return "", fmt.Errorf("id: %w", err)
	}
	at, err := time.ParseDuration(args["at"])
	if err != nil {
		return "", fmt.Errorf("at: %w", err)
	}
	if f[0] == "issue" {
		r := w.dc.Issue(id, at)
		w.reqs[id] = &r
		return fmt.Sprintf("first choice %s", server(r.next)), nil
	}
	r := w.reqs[id]
	if r == nil {
		return "", fmt.Errorf("no request %d", id)
	}
	var step Step
	switch f[0] {
	case "next":
		step = w.dc.Next(r, at)
	case "sending":
		w.dc.Sending(r, at)
		return fmt.Sprintf("sent=%s attempts=%d server=%s", offset(r.Sent), r.Attempts, server(r.Server)), nil
	case "stop":
		step = w.dc.Stop(r, at)
	case "reply":
		kind, err := parseReply(words)
		if err != nil {
			return "", err
		}
		step = w.dc.Reply(r, at, kind, args["err"])
	default:
		return "", fmt.Errorf("unknown command %q", f[0])
	}
	return show(step, r), nil
}

func (w *world) newDC(args map[string]string) (string, error) {
	st, err := parseStates(args["servers"])
	if err != nil {
		return "", err
	}
	cfg := Config{}
	var pick uint64
	for k, p := range map[string]*uint64{"seed": &cfg.Seed, "pick": &pick} {
		if v, ok := args[k]; ok {
			if *p, err = strconv.ParseUint(v, 10, 64); err != nil {
				return "", fmt.Errorf("%s: %w", k, err)
			}
		}
	}
	if v, ok := args["retry"]; ok {
		if cfg.RetryFor, err = time.ParseDuration(v); err != nil {
			return "", fmt.Errorf("retry: %w", err)
		}
	}
	w.srv = st
	w.dc = NewDC(cfg, args["name"], w.srv, pick)
	w.reqs = map[uint64]*Request{}
	return "ok", nil
}

func parseReply(words []string) (Reply, error) {
	if len(words) == 1 {
		for k := Acked; k <= Unavailable; k++ {
			if k.String() == words[0] {
				return k, nil
			}
		}
	}
	return 0, fmt.Errorf("reply %v: want one of acked, refused, not-sent, lost, unavailable", words)
}

func server(i int) string {
	if i < 0 {
		return "none"
	}
	return "s" + strconv.Itoa(i)
}

func offset(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.String()
}

func show(step Step, r *Request) string {
	switch step.Action {
	case Send:
		return "send " + server(step.Server)
	case Wait:
		return fmt.Sprintf("wait %v", step.After)
	case End:
		return fmt.Sprintf("end %v err=%q\nrecord sent=%s done=%v attempts=%d server=%s",
			r.Outcome, r.Err, offset(r.Sent), r.Done, r.Attempts, server(r.Server))
	}
	return fmt.Sprintf("step %d?", step.Action)
}
