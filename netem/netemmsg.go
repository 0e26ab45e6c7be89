package netem

import (
	"fmt"
	"math"
	"time"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// vishvananda/netlink builds netem options from the 32-bit tick fields only and never
// sends a distribution table, so netem leaves are encoded here, attribute for
// attribute in the order iproute2's tc (>= 6.9) sends them (TestNetemRequestMatchesTc
// compares with bytes captured from tc).

// Netem attribute types missing from nl (linux/pkt_sched.h).
const (
	tcaNetemDelayDist = 2
	tcaNetemRate      = 6
	tcaNetemRate64    = 8
	tcaNetemLatency64 = 10
	tcaNetemJitter64  = 11
	tcaNetemPrngSeed  = 14
)

// netemParams is what one netem leaf carries.
type netemParams struct {
	Limit   uint32        // queue length in packets; never 0 (a zero limit drops everything)
	Latency time.Duration // mean one-way delay
	Jitter  time.Duration
	Loss    uint32 // probability scaled to 0..MaxUint32
	Rate    uint64 // bytes/s, 0 for none
	Seed    uint64 // PRNG seed (kernels >= 6.6 honour it, older ones ignore it)
	Table   []int16
}

// lossScaled turns a percentage into netem's fixed-point probability like tc does.
func lossScaled(pct float64) uint32 {
	return uint32(math.RoundToEven(pct / 100 * math.MaxUint32))
}

// options is the TCA_OPTIONS attribute: struct tc_netem_qopt followed by nested
// attributes. The 32-bit latency and jitter of qopt stay 0: the 64-bit attributes
// (kernel >= 4.15) replace them.
func (p netemParams) options() *nl.RtAttr {
	qopt := nl.TcNetemQopt{Limit: p.Limit, Loss: p.Loss}
	opts := nl.NewRtAttr(nl.TCA_OPTIONS, qopt.Serialize())
	opts.AddRtAttr(tcaNetemLatency64, s64(int64(p.Latency)))
	if p.Jitter != 0 {
		opts.AddRtAttr(tcaNetemJitter64, s64(int64(p.Jitter)))
	}
	if p.Rate > 0 {
		rate := nl.TcNetemRate{Rate: uint32(min(p.Rate, math.MaxUint32))}
		if p.Rate >= math.MaxUint32 {
			opts.AddRtAttr(tcaNetemRate64, nl.Uint64Attr(p.Rate))
		}
		opts.AddRtAttr(tcaNetemRate, rate.Serialize())
	}
	opts.AddRtAttr(tcaNetemPrngSeed, nl.Uint64Attr(p.Seed))
	if len(p.Table) > 0 {
		b := make([]byte, 2*len(p.Table))
		for i, v := range p.Table {
			nl.NativeEndian().PutUint16(b[2*i:], uint16(v))
		}
		opts.AddRtAttr(tcaNetemDelayDist, b)
	}
	return opts
}

func s64(v int64) []byte { return nl.Uint64Attr(uint64(v)) }

// netemRequest is "tc qdisc replace dev <ifindex> parent <parent> handle <handle>
// netem ...": it creates the leaf, changes it in place when the same handle is there,
// or replaces whatever other qdisc sits under parent.
func netemRequest(ifindex int, parent, handle uint32, p netemParams) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_REPLACE|unix.NLM_F_ACK)
	req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(ifindex), Handle: handle, Parent: parent})
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("netem")))
	req.AddData(p.options())
	return req
}

// dumpedNetem is what the kernel reports of a netem qdisc (it never reports the table).
type dumpedNetem struct {
	netemParams
	HasSeed bool // kernels before 6.6 neither keep nor report a seed
}

// parseNetemOptions decodes the TCA_OPTIONS of a dumped netem qdisc.
func parseNetemOptions(b []byte) (dumpedNetem, error) {
	var d dumpedNetem
	if len(b) < nl.SizeofTcNetemQopt {
		return d, fmt.Errorf("netem options: %d bytes, want at least %d", len(b), nl.SizeofTcNetemQopt)
	}
	qopt := nl.DeserializeTcNetemQopt(b)
	d.Limit, d.Loss = qopt.Limit, qopt.Loss
	attrs, err := nl.ParseRouteAttr(b[nl.SizeofTcNetemQopt:])
	if err != nil {
		return d, fmt.Errorf("netem options: %w", err)
	}
	ne := nl.NativeEndian()
	var rate32 uint32
	for _, a := range attrs {
		switch {
		case a.Attr.Type == tcaNetemLatency64 && len(a.Value) == 8:
			d.Latency = time.Duration(int64(ne.Uint64(a.Value)))
		case a.Attr.Type == tcaNetemJitter64 && len(a.Value) == 8:
			d.Jitter = time.Duration(int64(ne.Uint64(a.Value)))
		case a.Attr.Type == tcaNetemPrngSeed && len(a.Value) == 8:
			d.Seed, d.HasSeed = ne.Uint64(a.Value), true
		case a.Attr.Type == tcaNetemRate64 && len(a.Value) == 8:
			d.Rate = ne.Uint64(a.Value)
		case a.Attr.Type == tcaNetemRate && len(a.Value) >= 4:
			rate32 = ne.Uint32(a.Value)
		}
	}
	if d.Rate == 0 {
		d.Rate = uint64(rate32)
	}
	return d, nil
}
