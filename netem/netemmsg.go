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
	tcaNetemCorr      = 1
	tcaNetemDelayDist = 2
	tcaNetemReorder   = 3
	tcaNetemLoss      = 5
	tcaNetemRate      = 6
	tcaNetemRate64    = 8
	tcaNetemLatency64 = 10
	tcaNetemJitter64  = 11
	tcaNetemPrngSeed  = 14

	netemLossGI = 1 // nested in TCA_NETEM_LOSS: struct tc_netem_gimodel (4-state)
	netemLossGE = 2 // nested in TCA_NETEM_LOSS: struct tc_netem_gemodel (Gilbert-Elliott)
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

	// Fixed-point probabilities (0..MaxUint32), as tc's set_percent makes them.
	Duplicate                    uint32
	DelayCorr, LossCorr, DupCorr uint32     // struct tc_netem_corr
	Reorder, ReorderCorr         uint32     // struct tc_netem_reorder
	Gap                          uint32     // reorder gap; tc makes 0 into 1 when reordering
	GE                           *[4]uint32 // p, r, h (= 1 - (1-h)), 1-k: struct tc_netem_gemodel
	GI                           *[5]uint32 // p13, p31, p32, p14, p23: struct tc_netem_gimodel

	// Reset also sends the attributes that are zero (correlations, reorder, rate),
	// which a change of an existing leaf needs: the kernel keeps those of the old
	// settings when a change omits them. tc omits them, so Reset is for changes only.
	Reset bool
}

// params is the netem leaf of l (limit, seed and table are the caller's).
func (l Link) params() netemParams {
	p := netemParams{
		Latency: l.Delay, Jitter: l.Jitter, Loss: lossScaled(l.LossPct), Rate: l.RateBytesPerSec,
		Duplicate: scaled(l.DuplicatePct), DelayCorr: scaled(l.DelayCorrPct), LossCorr: scaled(l.LossCorrPct),
		DupCorr: scaled(l.DuplicateCorrPct), Reorder: scaled(l.ReorderPct), ReorderCorr: scaled(l.ReorderCorrPct),
		Gap: l.ReorderGap,
	}
	if p.Reorder != 0 && p.Gap == 0 {
		p.Gap = 1 // as tc: netem reorders nothing with gap 0
	}
	if g := l.LossGE; !g.IsZero() {
		p.GE = &[4]uint32{scaled(g.P), scaled(g.R), math.MaxUint32 - scaled(g.OneMinusH), scaled(g.OneMinusK)}
	}
	return p
}

// lossScaled turns a percentage into netem's fixed-point probability like tc does.
func lossScaled(pct float64) uint32 {
	return uint32(math.RoundToEven(pct / 100 * math.MaxUint32))
}

// options is the TCA_OPTIONS attribute: struct tc_netem_qopt followed by nested
// attributes. The 32-bit latency and jitter of qopt stay 0: the 64-bit attributes
// (kernel >= 4.15) replace them.
//
// The attributes follow tc's order (q_netem.c): latency64, jitter64, correlations,
// reorder, the nested loss model, rate64, rate, seed, distribution table. One
// deliberate difference: tc forgets the correlation attribute when only the
// duplicate has a correlation ("duplicate 1% 25%" alone sends none); polebench sends
// it whenever any correlation is set.
func (p netemParams) options() *nl.RtAttr {
	qopt := nl.TcNetemQopt{Limit: p.Limit, Loss: p.Loss, Gap: p.Gap, Duplicate: p.Duplicate}
	opts := nl.NewRtAttr(nl.TCA_OPTIONS, qopt.Serialize())
	opts.AddRtAttr(tcaNetemLatency64, s64(int64(p.Latency)))
	if p.Jitter != 0 {
		opts.AddRtAttr(tcaNetemJitter64, s64(int64(p.Jitter)))
	}
	if p.Reset || p.DelayCorr != 0 || p.LossCorr != 0 || p.DupCorr != 0 || p.ReorderCorr != 0 {
		opts.AddRtAttr(tcaNetemCorr, u32s(p.DelayCorr, p.LossCorr, p.DupCorr))
	}
	if p.Reset || p.Reorder != 0 {
		opts.AddRtAttr(tcaNetemReorder, u32s(p.Reorder, p.ReorderCorr))
	}
	switch {
	case p.GE != nil:
		loss := opts.AddRtAttr(tcaNetemLoss|unix.NLA_F_NESTED, nil)
		loss.AddRtAttr(netemLossGE, u32s(p.GE[:]...))
	case p.GI != nil:
		loss := opts.AddRtAttr(tcaNetemLoss|unix.NLA_F_NESTED, nil)
		loss.AddRtAttr(netemLossGI, u32s(p.GI[:]...))
	}
	if p.Reset || p.Rate > 0 {
		rate := nl.TcNetemRate{Rate: uint32(min(p.Rate, math.MaxUint32))}
		if p.Rate >= 1<<32 {
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

// u32s packs a C struct of __u32 fields.
func u32s(vs ...uint32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		nl.NativeEndian().PutUint32(b[4*i:], v)
	}
	return b
}

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
