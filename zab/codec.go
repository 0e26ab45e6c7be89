package zab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Wire format (version 1): one version byte, the type byte, a flags byte, then
// uvarints From, To, Epoch, CurrentEpoch, Zxid, Seq, ReqID, the summary (Last, Base,
// count, epoch ends), the entries (count, then per entry Zxid, Origin, ReqID, data
// length, data) and the data (length, bytes). Framing is the transport's.
const codecVersion = 1

const (
	flagFresh = 1 << iota
	flagLast
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("zab: malformed message")

// MarshalBinary encodes m.
func (m *Message) MarshalBinary() ([]byte, error) { return m.AppendBinary(nil) }

// AppendBinary appends the encoding of m to b.
func (m *Message) AppendBinary(b []byte) ([]byte, error) {
	if m.Type == 0 || m.Type >= msgTypeEnd {
		return nil, fmt.Errorf("zab: encode: unknown message type %d", m.Type)
	}
	var flags byte
	if m.Fresh {
		flags |= flagFresh
	}
	if m.Last {
		flags |= flagLast
	}
	b = append(b, codecVersion, byte(m.Type), flags)
	for _, v := range []uint64{uint64(m.From), uint64(m.To), uint64(m.Epoch), uint64(m.CurrentEpoch), uint64(m.Zxid), uint64(m.Seq), m.ReqID,
		uint64(m.Summary.Last), uint64(m.Summary.Base), uint64(len(m.Summary.EpochEnds))} {
		b = binary.AppendUvarint(b, v)
	}
	for _, z := range m.Summary.EpochEnds {
		b = binary.AppendUvarint(b, uint64(z))
	}
	b = binary.AppendUvarint(b, uint64(len(m.Entries)))
	for _, e := range m.Entries {
		b = binary.AppendUvarint(b, uint64(e.Zxid))
		b = binary.AppendUvarint(b, uint64(e.Origin))
		b = binary.AppendUvarint(b, e.ReqID)
		b = binary.AppendUvarint(b, uint64(len(e.Data)))
		b = append(b, e.Data...)
	}
	b = binary.AppendUvarint(b, uint64(len(m.Data)))
	return append(b, m.Data...), nil
}

// EncodedSize is the length of m's encoding, without encoding it.
func (m *Message) EncodedSize() int {
	// The fields one by one, not a loop over a slice of them: the simulator sizes
	// every message it sends, and the loop was 3 % of a run's instructions.
	n := 3 + uvarintLen(uint64(m.From)) + uvarintLen(uint64(m.To)) + uvarintLen(uint64(m.Epoch)) +
		uvarintLen(uint64(m.CurrentEpoch)) + uvarintLen(uint64(m.Zxid)) + uvarintLen(uint64(m.Seq)) +
		uvarintLen(m.ReqID) + uvarintLen(uint64(m.Summary.Last)) + uvarintLen(uint64(m.Summary.Base)) +
		uvarintLen(uint64(len(m.Summary.EpochEnds))) + uvarintLen(uint64(len(m.Entries))) + uvarintLen(uint64(len(m.Data)))
	for _, z := range m.Summary.EpochEnds {
		n += uvarintLen(uint64(z))
	}
	for _, e := range m.Entries {
		n += uvarintLen(uint64(e.Zxid)) + uvarintLen(uint64(e.Origin)) + uvarintLen(e.ReqID) + uvarintLen(uint64(len(e.Data))) + len(e.Data)
	}
	return n + len(m.Data)
}

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

type decoder struct {
	b     []byte
	err   error
	share bool // byte fields alias the input
}

func (d *decoder) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, a...)...)
	}
}

func (d *decoder) uvarint(field string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("%s: bad varint", field)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) u32(field string) uint32 {
	v := d.uvarint(field)
	if v > 1<<32-1 {
		d.fail("%s: %d does not fit 32 bits", field, v)
	}
	return uint32(v)
}

// id reads a server id, which must fit 32 bits.
func (d *decoder) id(field string) int { return int(d.u32(field)) }

// count reads a length and checks that at least min bytes per element remain, so a
// hostile length cannot make us allocate more than the input justifies.
func (d *decoder) count(field string, min int) int {
	v := d.uvarint(field)
	if d.err == nil && v > uint64(len(d.b)/min) {
		d.fail("%s: %d elements but %d bytes left", field, v, len(d.b))
		return 0
	}
	return int(v)
}

func (d *decoder) bytes(field string) []byte {
	n := d.count(field, 1)
	if d.err != nil || n == 0 {
		return nil
	}
	out := d.b[:n:n]
	if !d.share {
		out = make([]byte, n)
		copy(out, d.b[:n])
	}
	d.b = d.b[n:]
	return out
}

// UnmarshalBinary decodes b into m. It copies what it keeps, so b may be reused.
func (m *Message) UnmarshalBinary(b []byte) error { return m.unmarshal(b, false) }

// UnmarshalShared decodes b into m without copying: m's data (a snapshot chunk's
// megabyte, the entries') aliases b, which must not change afterwards (a frame read
// for this message alone).
func (m *Message) UnmarshalShared(b []byte) error { return m.unmarshal(b, true) }

func (m *Message) unmarshal(b []byte, share bool) error {
	if len(b) < 3 {
		return fmt.Errorf("%w: %d bytes, need at least 3", ErrMalformed, len(b))
	}
	if b[0] != codecVersion {
		return fmt.Errorf("%w: version %d, want %d", ErrMalformed, b[0], codecVersion)
	}
	t := MsgType(b[1])
	if t == 0 || t >= msgTypeEnd {
		return fmt.Errorf("%w: unknown type %d", ErrMalformed, b[1])
	}
	flags := b[2]
	if flags&^(flagFresh|flagLast) != 0 {
		return fmt.Errorf("%w: unknown flags 0x%x", ErrMalformed, flags)
	}
	d := decoder{b: b[3:], share: share}
	out := Message{Type: t, Fresh: flags&flagFresh != 0, Last: flags&flagLast != 0}
	out.From = d.id("from")
	out.To = d.id("to")
	out.Epoch = Epoch(d.u32("epoch"))
	out.CurrentEpoch = Epoch(d.u32("current epoch"))
	out.Zxid = Zxid(d.uvarint("zxid"))
	out.Seq = d.u32("seq")
	out.ReqID = d.uvarint("request id")
	out.Summary.Last = Zxid(d.uvarint("summary last"))
	out.Summary.Base = Zxid(d.uvarint("summary base"))
	if n := d.count("summary epochs", 1); n > 0 {
		out.Summary.EpochEnds = make([]Zxid, n)
		for i := range out.Summary.EpochEnds {
			out.Summary.EpochEnds[i] = Zxid(d.uvarint("summary epoch end"))
		}
	}
	if n := d.count("entries", 4); n > 0 {
		out.Entries = make([]Entry, n)
		for i := range out.Entries {
			e := &out.Entries[i]
			e.Zxid = Zxid(d.uvarint("entry zxid"))
			e.Origin = d.id("entry origin")
			e.ReqID = d.uvarint("entry request id")
			e.Data = d.bytes("entry data")
		}
	}
	out.Data = d.bytes("data")
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(d.b))
	}
	*m = out
	return nil
}
