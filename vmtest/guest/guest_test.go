package main

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/topology"
)

func TestSummarize(t *testing.T) {
	s := summarize([]float64{5, 1, 4, 2, 3})
	want := summary{N: 5, Mean: 3, SD: math.Sqrt(2.5), Min: 1, P5: 1.2, Median: 3, P95: 4.8, Max: 5}
	if math.Abs(s.SD-want.SD) > 1e-12 || math.Abs(s.P5-want.P5) > 1e-12 || math.Abs(s.P95-want.P95) > 1e-12 {
		t.Fatalf("summarize = %+v, want %+v", s, want)
	}
	s.SD, s.P5, s.P95 = want.SD, want.P5, want.P95
	if s != want {
		t.Fatalf("summarize = %+v, want %+v", s, want)
	}
	if (summarize(nil) != summary{}) {
		t.Fatal("summary of nothing is not zero")
	}
}

func TestCheckMean(t *testing.T) {
	for _, tc := range []struct {
		mean, plan float64
		ok         bool
	}{
		{9.93, 9.88, true}, {10.37, 9.88, true}, {10.38, 9.88, false}, {9.38, 9.88, false}, {77.06, 77.06, true}, {1, 0, false},
	} {
		if err := checkMean(summary{Mean: tc.mean}, tc.plan); (err == nil) != tc.ok {
			t.Errorf("checkMean(mean %v, plan %v) = %v, want ok %v", tc.mean, tc.plan, err, tc.ok)
		}
	}
}

func link(from, to int, delay, jitter time.Duration, dist string) netem.Link {
	return netem.Link{From: from, To: to, Delay: delay, Jitter: jitter, Dist: dist}
}

// The plan's 77.06 ms link with 2 % Pareto jitter each way, from the real tables.
func TestExpectRTT(t *testing.T) {
	ab := link(1, 4, 38530*time.Microsecond, 770600*time.Nanosecond, netem.DistPareto)
	ba := link(4, 1, 38530*time.Microsecond, 770600*time.Nanosecond, netem.DistPareto)
	got, err := expectRTT(ab, ba)
	if err != nil {
		t.Fatal(err)
	}
	// Per unit of jitter, the sum of two draws from pareto.c's table has mean
	// -0.067, median -0.429, p5 -1.169, p95 2.483 (counted over all 4096² sums).
	j := 0.7706
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"mean", got.Mean, 77.06 - 0.067*j},
		{"median", got.Median, 77.06 - 0.429*j},
		{"p5", got.P5, 77.06 - 1.169*j},
		{"p95", got.P95, 77.06 + 2.483*j},
	} {
		if math.Abs(c.got-c.want) > 0.03*j {
			t.Errorf("%s = %.4f ms, want %.4f", c.name, c.got, c.want)
		}
	}
	if _, err := expectRTT(link(1, 2, 0, 1, "cauchy"), ba); err == nil {
		t.Error("an unknown distribution was accepted")
	}
}

// draws returns n round trips of the 53.26 ms link with jitter from dist, as netem
// draws them (a table entry, or uniform without a table).
func draws(t *testing.T, r *rand.Rand, dist string, n int) []float64 {
	t.Helper()
	tab, err := netem.Table(dist)
	if err != nil {
		t.Fatal(err)
	}
	const d, j = 26.63, 0.5326
	one := func() float64 {
		if tab == nil {
			return d + j*(2*r.Float64()-1)
		}
		return d + j*float64(tab[r.IntN(len(tab))])/netem.DistScale
	}
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = one() + one()
	}
	return xs
}

// The shape check passes Pareto jitter and fails the other distributions netem
// knows, at the sample size the guest uses; and it fails jitter of the wrong size.
func TestCheckShapeSeparatesDistributions(t *testing.T) {
	plan := link(1, 2, 26630*time.Microsecond, 532600*time.Nanosecond, netem.DistPareto)
	want, err := expectRTT(plan, plan)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	const trials, n = 300, 150
	for _, tc := range []struct {
		dist      string
		minPassed float64 // fraction of trials
		maxPassed float64
	}{
		{netem.DistPareto, 1, 1},
		{netem.DistNormal, 0, 0.02},
		{netem.DistUniform, 0, 0.02},
		// paretonormal (a quarter normal, three quarters Pareto) is skewed too and
		// passes: the check tells a long upper tail from a symmetric one.
	} {
		passed := 0
		for range trials {
			if checkShape(summarize(draws(t, r, tc.dist, n)), want) == nil {
				passed++
			}
		}
		if f := float64(passed) / trials; f < tc.minPassed || f > tc.maxPassed {
			t.Errorf("%s: %.3f of %d trials passed, want [%v, %v]", tc.dist, f, trials, tc.minPassed, tc.maxPassed)
		}
	}
	// Pareto jitter ten times too large, or none at all.
	xs := draws(t, r, netem.DistPareto, n)
	wide, flat := make([]float64, n), make([]float64, n)
	for i, x := range xs {
		wide[i] = 53.26 + 10*(x-53.26)
		flat[i] = 53.26 + 1e-3*float64(i%2)
	}
	for name, s := range map[string][]float64{"10x jitter": wide, "no jitter": flat} {
		if err := checkShape(summarize(s), want); err == nil {
			t.Errorf("%s passed the shape check", name)
		}
	}
}

func TestChecksum(t *testing.T) {
	// RFC 1071's example: the sum of these words is 0xddf2.
	if got := checksum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}); got != ^uint16(0xddf2) {
		t.Errorf("checksum = %#x, want %#x", got, ^uint16(0xddf2))
	}
	m := echoRequest(3, 9, 12345)
	if checksum(m) != 0 { // a correct checksum makes the whole message sum to 0xffff
		t.Errorf("echo request does not verify: %x", m)
	}
	if got := checksum([]byte{0xff}); got != ^uint16(0xff00) {
		t.Errorf("odd length: %#x", got)
	}
}

func TestParseEchoReply(t *testing.T) {
	reply := echoRequest(7, 42, 1_700_000_000_123_456_789)
	reply[0] = icmpEchoReply
	pkt := append([]byte{0x45}, make([]byte, 19)...) // IPv4 header, no options
	pkt = append(pkt, reply...)
	seq, sent, ok := parseEchoReply(pkt, 7)
	if !ok || seq != 42 || sent != 1_700_000_000_123_456_789 {
		t.Errorf("parseEchoReply = %d, %d, %v", seq, sent, ok)
	}
	for name, p := range map[string][]byte{
		"other id":  pkt,
		"short":     pkt[:30],
		"bad ihl":   append([]byte{0x41}, pkt[1:]...),
		"a request": append(append([]byte{}, pkt[:20]...), echoRequest(7, 42, 1)...),
	} {
		id := uint16(7)
		if name == "other id" {
			id = 8
		}
		if _, _, ok := parseEchoReply(p, id); ok {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestRxTimestamp(t *testing.T) {
	// struct cmsghdr on amd64: u64 len, i32 level, i32 type, then the timespec.
	oob := make([]byte, unix.CmsgSpace(16))
	binary.NativeEndian.PutUint64(oob, uint64(unix.CmsgLen(16)))
	binary.NativeEndian.PutUint32(oob[8:], unix.SOL_SOCKET)
	binary.NativeEndian.PutUint32(oob[12:], unix.SCM_TIMESTAMPNS)
	data := oob[unix.CmsgLen(0):]
	binary.NativeEndian.PutUint64(data, 1_700_000_000)
	binary.NativeEndian.PutUint64(data[8:], 123_456_789)
	if ns, ok := rxTimestamp(oob); !ok || ns != 1_700_000_000_123_456_789 {
		t.Errorf("rxTimestamp = %d, %v", ns, ok)
	}
	if _, ok := rxTimestamp(nil); ok {
		t.Error("a timestamp from nothing")
	}
}

func TestReportNamesFailures(t *testing.T) {
	// Two servers in two DCs 10 ms apart; the measured RTTs are 20 % too high.
	plan := netem.Plan{Links: []netem.Link{
		link(1, 2, 5*time.Millisecond, 100*time.Microsecond, netem.DistPareto),
		link(2, 1, 5*time.Millisecond, 100*time.Microsecond, netem.DistPareto),
	}}
	topo := twoDC(t)
	r := rand.New(rand.NewPCG(1, 1))
	tab, _ := netem.Table(netem.DistPareto)
	var res []pairResult
	for _, p := range [][2]int{{1, 2}, {2, 1}} {
		pr := pairResult{from: p[0], to: p[1], sent: 150}
		for range 150 {
			pr.rtts = append(pr.rtts, 12+0.1*float64(tab[r.IntN(len(tab))]+tab[r.IntN(len(tab))])/netem.DistScale)
		}
		res = append(res, pr)
	}
	var out strings.Builder
	fails := report(&out, topo, plan, res, pingSpec{Samples: 150, Interval: 100 * time.Millisecond})
	if len(fails) != 2 || !strings.Contains(fails[0], "p1->p2: mean") || !strings.Contains(out.String(), "MEAN OFF") {
		t.Errorf("failures %q\n%s", fails, out.String())
	}
}

func twoDC(t *testing.T) *topology.Topology {
	t.Helper()
	topo, err := topology.New(topology.Config{
		DCs:   []topology.DC{{Name: "A", Servers: []int{1}}, {Name: "B", Servers: []int{2}}},
		Links: []topology.Link{{A: "A", B: "B", RTT: 10}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}
