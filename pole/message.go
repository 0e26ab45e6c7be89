package pole

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MsgType says what a Message is.
type MsgType uint8

const (
	// MsgPropose is Alg. 1's ⟨P, epoch, proposal⟩.
	MsgPropose MsgType = iota + 1
	// MsgVote is Alg. 1's ⟨V, epoch, leader⟩, the answer of a process that knows the leader.
	MsgVote
	// MsgPing is a heartbeat: Clock is the sender's clock, Rate its theta_r.
	MsgPing
	// MsgPong answers a ping: Clock echoes the ping's, Rate is the responder's theta_r.
	MsgPong
	// MsgScoreQuery is the leader asking followers for their scores (resignation, Sec. 5).
	MsgScoreQuery
	// MsgScore answers MsgScoreQuery; Proposal carries the score and the sender's id.
	MsgScore
	// MsgResign tells the followers that the leader of Epoch gave up leadership (Sec. 5).
	MsgResign
)

var msgNames = map[MsgType]string{
	MsgPropose: "P", MsgVote: "V", MsgPing: "Ping", MsgPong: "Pong",
	MsgScoreQuery: "ScoreQuery", MsgScore: "Score", MsgResign: "Resign",
}

func (t MsgType) String() string {
	if s, ok := msgNames[t]; ok {
		return s
	}
	return "MsgType(" + strconv.Itoa(int(t)) + ")"
}

// Score is what an oracle's get-score returns and what proposals carry. Its layout and
// order belong to the oracle (every process of a cluster runs the same one); a vector
// lets combined oracles carry several scores at once.
type Score []float64

func (s Score) clone() Score { return append(Score(nil), s...) }

func (s Score) String() string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.FormatFloat(v, 'g', 6, 64)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Proposal is Alg. 1's (θ, id): a score and the process it belongs to.
type Proposal struct {
	Score Score
	ID    int
}

func (p Proposal) clone() Proposal { return Proposal{Score: p.Score.clone(), ID: p.ID} }

func (p Proposal) String() string { return fmt.Sprintf("%v@%d", p.Score, p.ID) }

// Epoch is an election's epoch (Alg. 1's epoch): it counts POLE's elections. It is not
// the broadcast's epoch (zab.Epoch, the high 32 bits of a zxid).
type Epoch uint64

// Message is everything processes send each other on the election channel. From and
// To are server ids; which other fields matter depends on Type.
type Message struct {
	Type     MsgType
	From, To int
	Epoch    Epoch         // P, V, ScoreQuery, Score, Resign
	Proposal Proposal      // P, Score
	Leader   int           // V
	Clock    time.Duration // Ping: sender's clock; Pong: the ping's, echoed
	Rate     float64       // Ping, Pong: sender's request rate (theta_r, req/s)
}

func (m Message) String() string {
	head := fmt.Sprintf("%d->%d %v", m.From, m.To, m.Type)
	switch m.Type {
	case MsgPropose, MsgScore:
		return fmt.Sprintf("%s e=%d %v", head, m.Epoch, m.Proposal)
	case MsgVote:
		return fmt.Sprintf("%s e=%d leader=%d", head, m.Epoch, m.Leader)
	case MsgPing, MsgPong:
		return fmt.Sprintf("%s clock=%v rate=%g", head, m.Clock, m.Rate)
	default:
		return fmt.Sprintf("%s e=%d", head, m.Epoch)
	}
}

// MaxScoreLen bounds the components of a score on the wire.
const MaxScoreLen = 32

const (
	wireVersion = 1
	headerLen   = 1 + 1 + 4 + 4 + 8 + 4 + 8 + 8 + 4 + 1
)

// MarshalBinary encodes m in a fixed big-endian layout (version, type, from, to,
// epoch, leader, clock, rate, proposal id, score length, score components).
func (m Message) MarshalBinary() ([]byte, error) {
	if _, ok := msgNames[m.Type]; !ok {
		return nil, fmt.Errorf("pole: marshal: unknown message type %d", m.Type)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"from", m.From}, {"to", m.To}, {"leader", m.Leader}, {"proposal id", m.Proposal.ID}} {
		if f.v < 0 || f.v > math.MaxUint32 {
			return nil, fmt.Errorf("pole: marshal: %s %d out of range", f.name, f.v)
		}
	}
	if len(m.Proposal.Score) > MaxScoreLen {
		return nil, fmt.Errorf("pole: marshal: score has %d components, at most %d", len(m.Proposal.Score), MaxScoreLen)
	}
	if err := checkFloats(m.Rate, m.Proposal.Score); err != nil {
		return nil, fmt.Errorf("pole: marshal: %w", err)
	}
	b := make([]byte, 0, headerLen+8*len(m.Proposal.Score))
	b = append(b, wireVersion, byte(m.Type))
	b = binary.BigEndian.AppendUint32(b, uint32(m.From))
	b = binary.BigEndian.AppendUint32(b, uint32(m.To))
	b = binary.BigEndian.AppendUint64(b, uint64(m.Epoch))
	b = binary.BigEndian.AppendUint32(b, uint32(m.Leader))
	b = binary.BigEndian.AppendUint64(b, uint64(m.Clock))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(m.Rate))
	b = binary.BigEndian.AppendUint32(b, uint32(m.Proposal.ID))
	b = append(b, byte(len(m.Proposal.Score)))
	for _, v := range m.Proposal.Score {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary produced; malformed input is an error.
func (m *Message) UnmarshalBinary(b []byte) error {
	if len(b) < headerLen {
		return fmt.Errorf("pole: unmarshal: %d bytes, header needs %d", len(b), headerLen)
	}
	if b[0] != wireVersion {
		return fmt.Errorf("pole: unmarshal: wire version %d, want %d", b[0], wireVersion)
	}
	t := MsgType(b[1])
	if _, ok := msgNames[t]; !ok {
		return fmt.Errorf("pole: unmarshal: unknown message type %d", b[1])
	}
	n := int(b[headerLen-1])
	if n > MaxScoreLen {
		return fmt.Errorf("pole: unmarshal: score has %d components, at most %d", n, MaxScoreLen)
	}
	if want := headerLen + 8*n; len(b) != want {
		return fmt.Errorf("pole: unmarshal: %d bytes, want %d for a %d-component score", len(b), want, n)
	}
	be := binary.BigEndian
	out := Message{
		Type:   t,
		From:   int(be.Uint32(b[2:])),
		To:     int(be.Uint32(b[6:])),
		Epoch:  Epoch(be.Uint64(b[10:])),
		Leader: int(be.Uint32(b[18:])),
		Clock:  time.Duration(be.Uint64(b[22:])),
		Rate:   math.Float64frombits(be.Uint64(b[30:])),
	}
	out.Proposal.ID = int(be.Uint32(b[38:]))
	if n > 0 {
		out.Proposal.Score = make(Score, n)
		for i := range out.Proposal.Score {
			out.Proposal.Score[i] = math.Float64frombits(be.Uint64(b[headerLen+8*i:]))
		}
	}
	if err := checkFloats(out.Rate, out.Proposal.Score); err != nil {
		return fmt.Errorf("pole: unmarshal: %w", err)
	}
	*m = out
	return nil
}

// checkFloats rejects NaN: it has no place in an order, and one NaN score would make
// proposals incomparable. Infinities are fine (an unreachable quorum scores +Inf).
func checkFloats(rate float64, s Score) error {
	if math.IsNaN(rate) {
		return errors.New("rate is NaN")
	}
	for i, v := range s {
		if math.IsNaN(v) {
			return fmt.Errorf("score component %d is NaN", i)
		}
	}
	return nil
}
