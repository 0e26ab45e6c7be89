package netem

import (
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

func readHex(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.Join(strings.Fields(string(data)), ""))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

// TestNetemRequestMatchesTc compares our netem leaf request with what tc sent for the
// same options (testdata/capture-tc.sh), byte for byte after the nlmsghdr.
func TestNetemRequestMatchesTc(t *testing.T) {
	pareto, err := Table(DistPareto)
	if err != nil {
		t.Fatal(err)
	}
	const parent, handle = 0x9e0010, 0xa00000
	for _, tc := range []struct {
		golden string
		p      netemParams
	}{
		{"testdata/netem-pareto.tc.hex", netemParams{
			Limit: 1000, Latency: 38530 * time.Microsecond, Jitter: 770600 * time.Nanosecond,
			Seed: 12345, Table: pareto}},
		{"testdata/netem-uniform-loss-rate.tc.hex", netemParams{
			Limit: 5000, Latency: 5 * time.Millisecond, Jitter: 100 * time.Microsecond,
			Loss: lossScaled(0.5), Rate: 100e6 / 8, Seed: 7}},
		// testdata/capture-tc-impair.sh; the params come from Links where the spec
		// can express them, so the test covers Link.params too.
		{"testdata/netem-impair-loss-corr.tc.hex", withTable(withLimitSeed(Link{
			Delay: 20 * time.Millisecond, Jitter: 400 * time.Microsecond, Dist: DistPareto,
			DelayCorrPct: 25, LossPct: 1, LossCorrPct: 30}.params(), 1000, 42), pareto)},
		{"testdata/netem-impair-gemodel.tc.hex", withLimitSeed(Link{
			Delay: 10 * time.Millisecond, Dist: DistPareto,
			LossGE: GEModel{P: 1, R: 10, OneMinusH: 70, OneMinusK: 0.1}}.params(), 1000, 1)},
		{"testdata/netem-impair-state.tc.hex", netemParams{Limit: 1000, Latency: 10 * time.Millisecond, Seed: 2,
			// tc's argument order is p13 p31 p32 p23 p14; the struct's p13 p31 p32 p14 p23
			GI: &[5]uint32{scaled(1), scaled(30), scaled(2), scaled(0.5), scaled(40)}}},
		{"testdata/netem-impair-dup-reorder.tc.hex", withLimitSeed(Link{
			Delay: 10 * time.Millisecond, Jitter: time.Millisecond, Dist: DistUniform,
			DuplicatePct: 2, ReorderPct: 5, ReorderCorrPct: 50, ReorderGap: 3}.params(), 1000, 9)},
		{"testdata/netem-impair-rate64.tc.hex", withLimitSeed(Link{
			Delay: 5 * time.Millisecond, Dist: DistPareto, RateBytesPerSec: 40e9 / 8}.params(), 20000, 3)},
		{"testdata/netem-impair-rate-queue.tc.hex", withLimitSeed(Link{
			Delay: 30 * time.Millisecond, Dist: DistPareto, RateBytesPerSec: 1e9 / 8, LossPct: 0.1,
			QueuePackets: 250}.params(), limitFor(Link{QueuePackets: 250}), 4)},
		// A schedule's change (RunSchedule): the zero attributes the kernel would keep.
		{"testdata/netem-impair-reset.tc.hex", withReset(withLimitSeed(Link{
			Delay: 10 * time.Millisecond, Dist: DistPareto}.params(), 1000, 5))},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			want := readHex(t, tc.golden)
			msg := netemRequest(3, parent, handle, tc.p).Serialize()
			ne := nl.NativeEndian()
			length, typ, flags := ne.Uint32(msg[0:]), ne.Uint16(msg[4:]), ne.Uint16(msg[6:])
			if typ != unix.RTM_NEWQDISC || flags != unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_REPLACE {
				t.Errorf("header type %d flags %#x; want RTM_NEWQDISC, REQUEST|ACK|CREATE|REPLACE", typ, flags)
			}
			if int(length) != len(msg) {
				t.Errorf("nlmsg_len %d, message %d bytes", length, len(msg))
			}
			got := msg[unix.SizeofNlMsghdr:]
			if !bytes.Equal(got, want) {
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Fatalf("differs from tc at body byte %d (got %d bytes, tc %d):\ngot  % x\ntc   % x",
							i, len(got), len(want), got[i:min(i+32, len(got))], want[i:min(i+32, len(want))])
					}
				}
				t.Fatalf("length %d, tc %d", len(got), len(want))
			}
		})
	}
}

func withLimitSeed(p netemParams, limit uint32, seed uint64) netemParams {
	p.Limit, p.Seed = limit, seed
	return p
}

func withReset(p netemParams) netemParams {
	p.Reset = true
	return p
}

func withTable(p netemParams, tab []int16) netemParams {
	p.Table = tab
	return p
}

func TestParseNetemOptionsRoundTrip(t *testing.T) {
	p := netemParams{Limit: 4242, Latency: 77 * time.Millisecond, Jitter: 3 * time.Millisecond,
		Loss: lossScaled(1), Rate: 1 << 33, Seed: 99}
	opts := p.options().Serialize()
	d, err := parseNetemOptions(opts[4:])
	if err != nil {
		t.Fatal(err)
	}
	if !d.HasSeed || d.netemParams.Limit != p.Limit || d.Latency != p.Latency || d.Jitter != p.Jitter ||
		d.Loss != p.Loss || d.Rate != p.Rate || d.Seed != p.Seed {
		t.Errorf("parsed %+v; want %+v", d, p)
	}
	if _, err := parseNetemOptions(opts[4:10]); err == nil {
		t.Error("short options parsed without error")
	}
}

// TestResetSendsZeroAttributes: a change of an existing leaf (a schedule's instant)
// carries the correlations, reorder and rate also when they are zero, so the kernel
// forgets the old ones; without Reset they are left out, as tc does.
func TestResetSendsZeroAttributes(t *testing.T) {
	has := func(p netemParams) map[uint16]bool {
		opts := p.options().Serialize()
		attrs, err := nl.ParseRouteAttr(opts[4+nl.SizeofTcNetemQopt:])
		if err != nil {
			t.Fatal(err)
		}
		m := map[uint16]bool{}
		for _, a := range attrs {
			m[a.Attr.Type] = true
		}
		return m
	}
	p := Link{Delay: time.Millisecond, Dist: DistPareto}.params()
	if m := has(p); m[tcaNetemCorr] || m[tcaNetemReorder] || m[tcaNetemRate] {
		t.Errorf("plain leaf sends %v", m)
	}
	p.Reset = true
	if m := has(p); !m[tcaNetemCorr] || !m[tcaNetemReorder] || !m[tcaNetemRate] {
		t.Errorf("reset leaf sends %v; want corr, reorder and rate", m)
	}
}
