package pole

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/polebench/polebench/zxid"
)

// interactionEnv runs the scripts in testdata: nodes whose messages wait in one FIFO
// until a command delivers or drops them, on a clock that moves 10 ms per tick.
type interactionEnv struct {
	ids     []int
	cfg     Config
	nodes   map[int]*Node
	up      map[int]bool
	zxid    map[int]zxid.Zxid
	rate    map[int]float64
	now     time.Duration
	pending []Message
	out     strings.Builder
}

type cmdArgs struct {
	pos []string
	kv  map[string]string
}

func parseArgs(fields []string) cmdArgs {
	a := cmdArgs{kv: map[string]string{}}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			a.kv[k] = v
		} else {
			a.pos = append(a.pos, f)
		}
	}
	return a
}

func (a cmdArgs) int(key string, def int) (int, error) {
	v, ok := a.kv[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: not an integer", key, v)
	}
	return n, nil
}

// targets are the node ids named positionally, or every node for "all" or none.
func (e *interactionEnv) targets(a cmdArgs) ([]int, error) {
	if len(a.pos) == 0 || len(a.pos) == 1 && a.pos[0] == "all" {
		return e.ids, nil
	}
	var out []int
	for _, p := range a.pos {
		id, err := strconv.Atoi(p)
		if err != nil || e.nodes[id] == nil {
			return nil, fmt.Errorf("no node %q", p)
		}
		out = append(out, id)
	}
	return out, nil
}

func (e *interactionEnv) run(line string) (string, error) {
	e.out.Reset()
	fields := strings.Fields(line)
	a := parseArgs(fields[1:])
	if fields[0] != "add-nodes" && e.nodes == nil {
		return "", fmt.Errorf("add-nodes first")
	}
	var err error
	switch fields[0] {
	case "add-nodes":
		err = e.addNodes(a)
	case "set-zxid", "set-rate":
		err = e.setInputs(fields[0], a)
	case "new-election":
		err = e.each(a, func(id int) {
			fmt.Fprintf(&e.out, "> %d new-election\n", id)
			e.nodes[id].NewElection()
			e.collect(id)
		})
	case "tick":
		err = e.tick(a)
	case "stabilize":
		for rounds := 0; len(e.pending) > 0; rounds++ {
			if rounds == 1000 {
				return e.out.String(), fmt.Errorf("no quiescence after 1000 rounds")
			}
			batch := e.pending
			e.pending = nil
			for _, m := range batch {
				if err := e.deliver(m); err != nil {
					return "", err
				}
			}
		}
	case "deliver", "drop":
		err = e.filter(fields[0], a)
	case "msgs":
		for _, m := range e.pending {
			fmt.Fprintf(&e.out, "%v\n", m)
		}
	case "crash":
		err = e.each(a, func(id int) {
			e.up[id] = false
			e.pending = slices.DeleteFunc(e.pending, func(m Message) bool { return m.From == id || m.To == id })
		})
	case "start":
		err = e.each(a, func(id int) {
			// Messages addressed to the previous incarnation are gone with it.
			e.pending = slices.DeleteFunc(e.pending, func(m Message) bool { return m.From == id || m.To == id })
			e.nodes[id] = e.newNode(id)
			e.up[id] = true
		})
	case "propose", "vote":
		err = e.inject(fields[0], a)
	case "status":
		err = e.each(a, func(id int) {
			if !e.up[id] {
				fmt.Fprintf(&e.out, "%d: down\n", id)
				return
			}
			fmt.Fprintf(&e.out, "%v\n", e.nodes[id].Status())
		})
	case "peers":
		err = e.each(a, func(id int) {
			for _, p := range e.nodes[id].Peers() {
				fmt.Fprintf(&e.out, "%d sees %d: alive=%v rtt=%.1fms samples=%d rate=%g\n", id, p.ID, p.Alive, p.RTT, p.Samples, p.Rate)
			}
		})
	default:
		return "", fmt.Errorf("unknown command %q", fields[0])
	}
	return strings.TrimRight(e.out.String(), "\n"), err
}

func (e *interactionEnv) each(a cmdArgs, f func(id int)) error {
	ids, err := e.targets(a)
	if err != nil {
		return err
	}
	for _, id := range ids {
		f(id)
	}
	return nil
}

// add-nodes n=3 oracle=history T=3 retry=0 maxretry=0 heartbeat=0 missed=3 window=10
// resign=0 margin=0 initial=0
func (e *interactionEnv) addNodes(a cmdArgs) error {
	n, err := a.int("n", 3)
	if err != nil {
		return err
	}
	o, err := ParseOracle(orDefault(a.kv["oracle"], "history"))
	if err != nil {
		return err
	}
	e.ids = servers(n)
	e.cfg = Config{Servers: e.ids, Oracle: o, MissedHeartbeats: 3, RTTWindow: 10}
	for _, f := range []struct {
		key string
		dst *int
		def int
	}{{"T", &e.cfg.ElectionTicks, 3}, {"retry", &e.cfg.RetryTicks, 0}, {"maxretry", &e.cfg.MaxRetryTicks, 0},
		{"heartbeat", &e.cfg.HeartbeatTicks, 0}, {"missed", &e.cfg.MissedHeartbeats, 3},
		{"window", &e.cfg.RTTWindow, 10}, {"resign", &e.cfg.ResignCheckTicks, 0}} {
		if *f.dst, err = a.int(f.key, f.def); err != nil {
			return err
		}
	}
	if m, ok := a.kv["margin"]; ok {
		if e.cfg.ResignMargin, err = strconv.ParseFloat(m, 64); err != nil {
			return fmt.Errorf("margin=%q: %v", m, err)
		}
	}
	if l, err := a.int("initial", 0); err != nil {
		return err
	} else if l > 0 {
		e.cfg.Oracle = Initial{Leader: l, Oracle: o}
	}
	e.nodes, e.up = map[int]*Node{}, map[int]bool{}
	e.zxid, e.rate = map[int]zxid.Zxid{}, map[int]float64{}
	for _, id := range e.ids {
		e.cfg.ID = id
		if _, err := NewNode(e.cfg); err != nil {
			return err
		}
		e.nodes[id], e.up[id] = e.newNode(id), true
	}
	return nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func (e *interactionEnv) newNode(id int) *Node {
	c := e.cfg
	c.ID = id
	n, _ := NewNode(c) // validated by add-nodes
	n.SetZxid(e.zxid[id])
	n.SetRate(e.rate[id])
	return n
}

// set-zxid 1=5 2=0x100000003; set-rate 1=100
func (e *interactionEnv) setInputs(cmd string, a cmdArgs) error {
	for k, v := range a.kv {
		id, err := strconv.Atoi(k)
		if err != nil || e.nodes[id] == nil {
			return fmt.Errorf("no node %q", k)
		}
		if cmd == "set-zxid" {
			z, err := strconv.ParseUint(v, 0, 64)
			if err != nil {
				return fmt.Errorf("zxid %q: %v", v, err)
			}
			e.zxid[id] = zxid.Zxid(z)
			e.nodes[id].SetZxid(zxid.Zxid(z))
		} else {
			r, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("rate %q: %v", v, err)
			}
			e.rate[id] = r
			e.nodes[id].SetRate(r)
		}
	}
	return nil
}

// tick [ids|all] n=1: every round moves the clock 10 ms and ticks the nodes.
func (e *interactionEnv) tick(a cmdArgs) error {
	n, err := a.int("n", 1)
	if err != nil {
		return err
	}
	ids, err := e.targets(a)
	if err != nil {
		return err
	}
	for range n {
		e.now += 10 * time.Millisecond
		for _, id := range ids {
			if e.up[id] {
				e.nodes[id].Tick(e.now)
				if e.nodes[id].HasReady() {
					fmt.Fprintf(&e.out, "> %d tick (t=%v)\n", id, e.now)
					e.collect(id)
				}
			}
		}
	}
	return nil
}

// collect prints what a node produced and queues its messages.
func (e *interactionEnv) collect(id int) {
	rd := e.nodes[id].Ready()
	for _, ev := range rd.Events {
		fmt.Fprintf(&e.out, "  event: %v\n", ev)
	}
	for _, m := range rd.Messages {
		fmt.Fprintf(&e.out, "  %v\n", m)
		e.pending = append(e.pending, m)
	}
}

func (e *interactionEnv) deliver(m Message) error {
	if !e.up[m.To] || !e.up[m.From] {
		fmt.Fprintf(&e.out, "> lost %v\n", m)
		return nil
	}
	fmt.Fprintf(&e.out, "> %d receives %v\n", m.To, m)
	if err := e.nodes[m.To].Step(e.now, m); err != nil {
		return err
	}
	e.collect(m.To)
	return nil
}

// deliver/drop from=1 to=2 type=P: acts on the matching messages now pending.
func (e *interactionEnv) filter(cmd string, a cmdArgs) error {
	from, err := a.int("from", 0)
	if err != nil {
		return err
	}
	to, err := a.int("to", 0)
	if err != nil {
		return err
	}
	match := func(m Message) bool {
		return (from == 0 || m.From == from) && (to == 0 || m.To == to) &&
			(a.kv["type"] == "" || m.Type.String() == a.kv["type"])
	}
	var keep, act []Message
	for _, m := range e.pending {
		if match(m) {
			act = append(act, m)
		} else {
			keep = append(keep, m)
		}
	}
	e.pending = keep
	for _, m := range act {
		if cmd == "drop" {
			fmt.Fprintf(&e.out, "dropped %v\n", m)
		} else if err := e.deliver(m); err != nil {
			return err
		}
	}
	return nil
}

// propose from=2 to=1 epoch=5 score=(0,3) id=2; vote from=2 to=1 epoch=1 leader=3
func (e *interactionEnv) inject(cmd string, a cmdArgs) error {
	m := Message{Type: MsgPropose}
	var err error
	if m.From, err = a.int("from", 0); err != nil {
		return err
	}
	if m.To, err = a.int("to", 0); err != nil {
		return err
	}
	ep, err := a.int("epoch", 0)
	if err != nil {
		return err
	}
	m.Epoch = Epoch(ep)
	if cmd == "vote" {
		m.Type = MsgVote
		if m.Leader, err = a.int("leader", 0); err != nil {
			return err
		}
	} else {
		if m.Proposal.ID, err = a.int("id", m.From); err != nil {
			return err
		}
		list := strings.Trim(a.kv["score"], "()")
		for _, f := range strings.Split(list, ",") {
			if f == "" {
				continue
			}
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return fmt.Errorf("score %q: %v", a.kv["score"], err)
			}
			m.Proposal.Score = append(m.Proposal.Score, v)
		}
	}
	return e.deliver(m)
}
