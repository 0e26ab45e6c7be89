// Package callgrind measures a command's instructions under valgrind's callgrind and
// splits them into parts by the functions they were spent in. An instruction count
// does not move with the host's load, so it judges the simulator's cost where wall
// time and CPU time judge the day.
package callgrind

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Profile is what a callgrind.out file says about instructions (the event Ir).
type Profile struct {
	Total uint64               // every instruction of the run
	Self  map[string]uint64    // function → instructions in its own code
	Calls map[[2]string]uint64 // caller, callee → instructions inside the calls (inclusive)
}

// ReadFile reads a callgrind.out file.
func ReadFile(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Read parses callgrind's output format (compressed names, relative positions), the
// subset callgrind writes: fn=/cfn= name the function and the callee, a cost line
// after calls= is the call's inclusive cost, any other cost line is the function's own.
func Read(r io.Reader) (*Profile, error) {
	p := &Profile{Self: map[string]uint64{}, Calls: map[[2]string]uint64{}}
	names := map[string]string{} // "(id)" → name
	name := func(v string) string {
		v = strings.TrimSpace(v)
		if !strings.HasPrefix(v, "(") {
			return v
		}
		id, rest, _ := strings.Cut(v, ")")
		id += ")"
		if rest = strings.TrimSpace(rest); rest != "" {
			names[id] = rest
			return rest
		}
		return names[id]
	}
	irAt := -1 // the index of Ir among a cost line's numbers, after its positions
	positions := 1
	var fn, cfn string
	inCall := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for line := 1; sc.Scan(); line++ {
		s := sc.Text()
		switch {
		case s == "" || s[0] == '#':
		case strings.HasPrefix(s, "positions:"):
			positions = len(strings.Fields(s)) - 1
		case strings.HasPrefix(s, "events:"):
			for i, ev := range strings.Fields(s)[1:] {
				if ev == "Ir" {
					irAt = i
				}
			}
		case strings.HasPrefix(s, "summary:"), strings.HasPrefix(s, "totals:"):
			f := strings.Fields(s)
			if irAt >= 0 && irAt+1 < len(f) {
				p.Total, _ = strconv.ParseUint(f[irAt+1], 10, 64)
			}
		case strings.HasPrefix(s, "fn="):
			fn = name(s[3:])
		case strings.HasPrefix(s, "cfn="):
			cfn = name(s[4:])
		case strings.HasPrefix(s, "calls="):
			inCall = true
		case s[0] >= '0' && s[0] <= '9', s[0] == '+', s[0] == '-', s[0] == '*':
			f := strings.Fields(s)
			if irAt < 0 {
				return nil, fmt.Errorf("line %d: a cost before the events: line names Ir", line)
			}
			var ir uint64
			if k := positions + irAt; k < len(f) {
				v, err := strconv.ParseUint(f[k], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("line %d: %q: %w", line, s, err)
				}
				ir = v
			}
			if inCall {
				p.Calls[[2]string{fn, cfn}] += ir
				inCall = false
			} else {
				p.Self[fn] += ir
			}
		case strings.Contains(s, "="), strings.Contains(s, ":"):
			// fl=, fi=, fe=, ob=, cob=, cfi=, jump=..., the header's key: value lines.
		default:
			return nil, fmt.Errorf("line %d: %q: not callgrind's format", line, s)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if p.Total == 0 {
		for _, v := range p.Self {
			p.Total += v
		}
	}
	return p, nil
}
