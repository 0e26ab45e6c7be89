package zab

// Data-driven protocol traces (testdata/*.txt): one node driven by hand, every
// message, persistence operation, commit and event it produces written out.
// A case is a command line, "----", and the expected output up to a blank line.
// Run with -update to rewrite the expected output.
//
// Commands:
//   new id=2 peers=1,2,3 [window=N] [snapshot=E.C] [log=E.C,E.C..] [hs=A/C]
//   elected L | stepdown | disconnected P | tick [N] | propose REQ | status | ready | advance
//   step TYPE from=F [e=E] [z=E.C] [cur=E] [fresh] [last] [seq=N] [req=N]
//        [ents=E.C[@ORIGIN#REQ],..] [sum=LAST/BASE/END,END..] [data=TEXT]
// ready hands out the Ready (and remembers it); advance acknowledges it.

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
	cmd, want string
	line      int
}

func parseScript(path string) ([]scriptCase, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var cases []scriptCase
	var comments []string // comment block before each case (kept on rewrite)
	var pendingComment []string
	sc := bufio.NewScanner(f)
	ln := 0
	for sc.Scan() {
		ln++
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			continue
		case strings.HasPrefix(line, "#"):
			pendingComment = append(pendingComment, line)
			continue
		}
		c := scriptCase{cmd: line, line: ln}
		if !sc.Scan() || sc.Text() != "----" {
			return nil, nil, fmt.Errorf("%s:%d: command %q not followed by ----", path, ln, line)
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
		comments = append(comments, strings.Join(pendingComment, "\n"))
		pendingComment = nil
	}
	return cases, comments, sc.Err()
}

func runScript(t *testing.T, path string) {
	cases, comments, err := parseScript(path)
	if err != nil {
		t.Fatal(err)
	}
	var n *Node
	var out strings.Builder
	for i, c := range cases {
		got, err := runCommand(&n, c.cmd)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", path, c.line, c.cmd, err)
		}
		if got == "" {
			got = "ok"
		}
		if !*update && got != c.want {
			t.Errorf("%s:%d: %s\n--- got\n%s\n--- want\n%s", path, c.line, c.cmd, got, c.want)
		}
		if comments[i] != "" {
			out.WriteString(comments[i] + "\n")
		}
		fmt.Fprintf(&out, "%s\n----\n%s\n\n", c.cmd, got)
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func zx(z Zxid) string { return fmt.Sprintf("%d.%d", z.Epoch(), z.Counter()) }

func parseZx(s string) (Zxid, error) {
	e, c, ok := strings.Cut(s, ".")
	if !ok {
		return 0, fmt.Errorf("zxid %q: want EPOCH.COUNTER", s)
	}
	ep, err1 := strconv.ParseUint(e, 10, 32)
	ct, err2 := strconv.ParseUint(c, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("zxid %q: want EPOCH.COUNTER", s)
	}
	return MakeZxid(Epoch(ep), uint32(ct)), nil
}

func parseZxList(s string) ([]Zxid, error) {
	var out []Zxid
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		z, err := parseZx(f)
		if err != nil {
			return nil, err
		}
		out = append(out, z)
	}
	return out, nil
}

var msgByName = func() map[string]MsgType {
	m := map[string]MsgType{}
	for t := MsgType(1); t < msgTypeEnd; t++ {
		m[t.String()] = t
	}
	return m
}()

func runCommand(np **Node, line string) (string, error) {
	f := strings.Fields(line)
	args := map[string]string{}
	for _, a := range f[1:] {
		k, v, _ := strings.Cut(a, "=")
		args[k] = v
	}
	num := func(k string) uint64 { v, _ := strconv.ParseUint(args[k], 10, 64); return v }
	n := *np
	if f[0] != "new" && n == nil {
		return "", fmt.Errorf("no node: start with new")
	}
	switch f[0] {
	case "new":
		cfg := DefaultConfig(int(num("id")), nil, 100*time.Millisecond)
		cfg.TimeoutTicks, cfg.RetryTicks, cfg.InitTicks = 5, 2, 12
		if _, ok := args["window"]; ok {
			cfg.Window = int(num("window"))
		}
		for _, p := range strings.Split(args["peers"], ",") {
			v, _ := strconv.Atoi(p)
			cfg.Peers = append(cfg.Peers, v)
		}
		var st Persisted
		if v, ok := args["snapshot"]; ok {
			z, err := parseZx(v)
			if err != nil {
				return "", err
			}
			st.Snapshot = z
		}
		zs, err := parseZxList(args["log"])
		if err != nil {
			return "", err
		}
		for _, z := range zs {
			st.Log = append(st.Log, Txn{Zxid: z, Data: []byte("t" + zx(z))})
		}
		if v, ok := args["hs"]; ok {
			a, c, _ := strings.Cut(v, "/")
			av, _ := strconv.ParseUint(a, 10, 32)
			cv, _ := strconv.ParseUint(c, 10, 32)
			st.HardState = HardState{AcceptedEpoch: Epoch(av), CurrentEpoch: Epoch(cv)}
		}
		nn, err := New(cfg, st)
		if err != nil {
			return "error: " + err.Error(), nil
		}
		*np = nn
		return "", nil
	case "elected":
		v, _ := strconv.Atoi(f[1])
		if err := n.Elected(v); err != nil {
			return "error: " + err.Error(), nil
		}
	case "stepdown":
		n.StepDown("script")
	case "disconnected":
		v, _ := strconv.Atoi(f[1])
		n.Disconnected(v)
	case "closed":
		v, _ := strconv.Atoi(f[1])
		n.Closed(v)
	case "tick":
		k := 1
		if len(f) > 1 {
			k, _ = strconv.Atoi(f[1])
		}
		for range k {
			n.Tick()
		}
	case "propose":
		v, _ := strconv.ParseUint(f[1], 10, 64)
		if err := n.Propose(v, []byte(fmt.Sprintf("req%d", v))); err != nil {
			return "error: " + err.Error(), nil
		}
	case "status":
		st := n.Status()
		return fmt.Sprintf("%s leader=%d serving=%v epoch=%d accepted=%d current=%d last=%s committed=%s applied=%s",
			st.Role, st.Leader, st.Serving, st.Epoch, st.AcceptedEpoch, st.CurrentEpoch, zx(st.LastZxid), zx(st.Committed), zx(st.Applied)), nil
	case "ready":
		return formatReady(n.Ready()), nil
	case "advance":
		n.Advance()
	case "step":
		t, ok := msgByName[f[1]]
		if !ok {
			return "", fmt.Errorf("unknown message type %q", f[1])
		}
		m := Message{Type: t, From: int(num("from")), To: n.id, Epoch: Epoch(num("e")), CurrentEpoch: Epoch(num("cur")),
			Seq: uint32(num("seq")), ReqID: num("req")}
		_, m.Fresh = args["fresh"]
		_, m.Last = args["last"]
		if v, ok := args["data"]; ok {
			m.Data = []byte(v)
		}
		if v, ok := args["z"]; ok {
			z, err := parseZx(v)
			if err != nil {
				return "", err
			}
			m.Zxid = z
		}
		for _, tok := range strings.Split(args["ents"], ",") {
			if tok == "" {
				continue
			}
			// E.C or E.C@ORIGIN#REQ
			zs, tag, _ := strings.Cut(tok, "@")
			z, err := parseZx(zs)
			if err != nil {
				return "", err
			}
			e := Entry{Txn: Txn{Zxid: z, Data: []byte("t" + zx(z))}}
			if tag != "" {
				o, r, _ := strings.Cut(tag, "#")
				e.Origin, _ = strconv.Atoi(o)
				e.ReqID, _ = strconv.ParseUint(r, 10, 64)
			}
			m.Entries = append(m.Entries, e)
		}
		if v, ok := args["sum"]; ok {
			parts := strings.SplitN(v, "/", 3)
			if len(parts) != 3 {
				return "", fmt.Errorf("sum=%q: want LAST/BASE/ENDS", v)
			}
			l, err1 := parseZx(parts[0])
			b, err2 := parseZx(parts[1])
			ends, err3 := parseZxList(parts[2])
			if err1 != nil || err2 != nil || err3 != nil {
				return "", fmt.Errorf("sum=%q: bad zxid", v)
			}
			m.Summary = Summary{Last: l, Base: b, EpochEnds: ends}
		}
		if err := n.Step(m); err != nil {
			return "error: " + err.Error(), nil
		}
	default:
		return "", fmt.Errorf("unknown command %q", f[0])
	}
	return "", nil
}

func formatReady(rd Ready) string {
	if rd.Empty() {
		return "(empty)"
	}
	var b strings.Builder
	for _, m := range rd.Messages {
		fmt.Fprintf(&b, "msg %s %d->%d e=%d z=%s", m.Type, m.From, m.To, m.Epoch, zx(m.Zxid))
		switch m.Type {
		case MsgAckEpoch:
			fmt.Fprintf(&b, " cur=%d fresh=%v sum=%s", m.CurrentEpoch, m.Fresh, formatSummary(m.Summary))
		case MsgFetch:
			fmt.Fprintf(&b, " sum=%s", formatSummary(m.Summary))
		case MsgRequest:
			fmt.Fprintf(&b, " req=%d", m.ReqID)
		}
		if len(m.Entries) > 0 {
			b.WriteString(" ents=")
			for i, e := range m.Entries {
				if i > 0 {
					b.WriteString(",")
				}
				b.WriteString(zx(e.Zxid))
				if e.Origin != 0 {
					fmt.Fprintf(&b, "@%d#%d", e.Origin, e.ReqID)
				}
			}
		}
		b.WriteString("\n")
	}
	for _, op := range rd.Persist {
		switch op := op.(type) {
		case *Append:
			b.WriteString("persist append")
			for _, t := range op.Txns {
				b.WriteString(" " + zx(t.Zxid))
			}
		case *Truncate:
			fmt.Fprintf(&b, "persist truncate after %s", zx(op.After))
		case *SnapshotChunk:
			fmt.Fprintf(&b, "persist snapshot %s seq=%d last=%v bytes=%d", zx(op.Zxid), op.Seq, op.Last, len(op.Data))
		case *SetHardState:
			fmt.Fprintf(&b, "persist hardstate accepted=%d current=%d", op.AcceptedEpoch, op.CurrentEpoch)
		}
		b.WriteString("\n")
	}
	if len(rd.Committed) > 0 {
		b.WriteString("commit")
		for _, t := range rd.Committed {
			b.WriteString(" " + zx(t.Zxid))
		}
		b.WriteString("\n")
	}
	for _, r := range rd.Results {
		if r.Err != nil {
			fmt.Fprintf(&b, "result req=%d err=%v\n", r.ReqID, r.Err)
		} else {
			fmt.Fprintf(&b, "result req=%d zxid=%s\n", r.ReqID, zx(r.Zxid))
		}
	}
	for _, e := range rd.Events {
		fmt.Fprintf(&b, "event %s leader=%d epoch=%d zxid=%s", e.Type, e.Leader, e.Epoch, zx(e.Zxid))
		if e.Reason != "" {
			fmt.Fprintf(&b, " (%s)", e.Reason)
		}
		if e.InitLimit {
			fmt.Fprintf(&b, " waited=%d received=%d", e.Waited, e.Received)
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func formatSummary(s Summary) string {
	var ends []string
	for _, z := range s.EpochEnds {
		ends = append(ends, zx(z))
	}
	return fmt.Sprintf("%s/%s/%s", zx(s.Last), zx(s.Base), strings.Join(ends, ","))
}
