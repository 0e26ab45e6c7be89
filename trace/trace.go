// Package trace is what poled records of each write's way through it: marks, an
// instant per zxid and step (the client port read it, the leader proposed it, a quorum
// acknowledged it, ...), each server's own, in the host's monotonic clock, which every
// process and container on one kernel reads alike (netem.Now). The harness joins the
// servers' marks with its own records by zxid (analysis.Join) to say where each
// millisecond of a write's latency went.
package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/polebench/polebench/zxid"
)

// Kind is the step a mark records.
type Kind uint8

// The steps of a write, in the order it passes them. S is the server the client sent
// it to, L the leader, F a follower.
const (
	Recv          Kind = iota + 1 // S: its client port read the request
	Submit                        // S: its loop took the write
	Arrived                       // L: the write reached it (the forwarded REQUEST's arrival; Submit's instant on L itself)
	Proposed                      // L: its PROPOSALs went to the links
	PropArrived                   // F: the PROPOSAL arrived
	Acked                         // F: the ACK that covers it went to the link
	Quorum                        // L: the ACK that completed a quorum arrived (Peer: its sender)
	Committed                     // L: committed and applied
	CommitArrived                 // S, a follower: the COMMIT arrived
	Applied                       // S: applied
	Reply                         // S: the reply was queued for the client
	NumKinds                      // one past the last kind
)

var kindNames = [...]string{Recv: "recv", Submit: "submit", Arrived: "arrived", Proposed: "proposed",
	PropArrived: "prop_arrived", Acked: "acked", Quorum: "quorum", Committed: "committed",
	CommitArrived: "commit_arrived", Applied: "applied", Reply: "reply"}

func (k Kind) String() string {
	if k > 0 && k < NumKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Mark is one step of one write on one server.
type Mark struct {
	Zxid zxid.Zxid
	At   int64 // ns of the server's clock: netem.Now in poled, virtual time in the simulator
	Kind Kind
	Peer uint8 // Quorum: the server whose ACK completed it
}

// Log keeps a server's latest marks in a ring, numbered from 0 for a reader that
// polls (GET /trace?from=N): marks overwritten before they were read are counted,
// not silently missing. Safe for concurrent use.
type Log struct {
	mu   sync.Mutex
	ring []Mark
	next uint64 // sequence number of the next mark
	boot int64  // tells one life of a server's log from the next
}

// DefaultCapacity holds about 30 s of a leader's marks at 1000 writes/s, far more
// than a reader polling every second needs.
const DefaultCapacity = 1 << 18

// NewLog returns a log of capacity marks (DefaultCapacity if <= 0); boot tells it
// apart from the server's earlier lives (poled uses its start instant).
func NewLog(capacity int, boot int64) *Log {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Log{ring: make([]Mark, capacity), boot: boot}
}

// Add appends a mark.
func (l *Log) Add(m Mark) {
	l.mu.Lock()
	l.ring[l.next%uint64(len(l.ring))] = m
	l.next++
	l.mu.Unlock()
}

// Page is a reader's share of a log: the marks from sequence From on, the sequence
// to ask from next, how many were overwritten before being read, and the log's boot.
type Page struct {
	Boot  int64
	From  uint64
	Next  uint64
	Lost  uint64
	Marks []Mark
}

// Since returns the marks from sequence from on, at most max (<= 0: all held).
func (l *Log) Since(from uint64, max int) Page {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := Page{Boot: l.boot, From: from}
	if oldest := l.next - min(l.next, uint64(len(l.ring))); from < oldest {
		p.Lost, from = oldest-from, oldest
	}
	end := l.next
	if from > end {
		from = end // a reader of an earlier life: nothing here is after its cursor
	}
	if max > 0 && end-from > uint64(max) {
		end = from + uint64(max)
	}
	p.Marks = make([]Mark, 0, end-from)
	for s := from; s < end; s++ {
		p.Marks = append(p.Marks, l.ring[s%uint64(len(l.ring))])
	}
	p.Next = end
	return p
}

// The page's wire format: magic, boot, from, next, lost, count, then per mark zxid,
// at, kind, peer; big-endian, fixed sizes.
const (
	pageMagic = 0x54524331 // "TRC1"
	pageHead  = 4 + 8*5
	markSize  = 8 + 8 + 1 + 1
)

// AppendBinary appends the page's wire format to b.
func (p Page) AppendBinary(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, pageMagic)
	for _, v := range []uint64{uint64(p.Boot), p.From, p.Next, p.Lost, uint64(len(p.Marks))} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	for _, m := range p.Marks {
		b = binary.BigEndian.AppendUint64(b, uint64(m.Zxid))
		b = binary.BigEndian.AppendUint64(b, uint64(m.At))
		b = append(b, byte(m.Kind), m.Peer)
	}
	return b
}

// UnmarshalBinary reads what AppendBinary wrote.
func (p *Page) UnmarshalBinary(b []byte) error {
	if len(b) < pageHead || binary.BigEndian.Uint32(b) != pageMagic {
		return errors.New("trace: not a page of marks")
	}
	u := func(i int) uint64 { return binary.BigEndian.Uint64(b[4+8*i:]) }
	p.Boot, p.From, p.Next, p.Lost = int64(u(0)), u(1), u(2), u(3)
	n := u(4)
	body := b[pageHead:]
	if uint64(len(body)) != n*markSize {
		return fmt.Errorf("trace: page says %d marks, holds %d bytes (want %d)", n, len(body), n*markSize)
	}
	p.Marks = make([]Mark, n)
	for i := range p.Marks {
		r := body[i*markSize:]
		m := Mark{Zxid: zxid.Zxid(binary.BigEndian.Uint64(r)), At: int64(binary.BigEndian.Uint64(r[8:])), Kind: Kind(r[16]), Peer: r[17]}
		if m.Kind == 0 || m.Kind >= NumKinds {
			return fmt.Errorf("trace: mark %d has kind %d", i, r[16])
		}
		p.Marks[i] = m
	}
	return nil
}
