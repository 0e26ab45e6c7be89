package replica

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polebench/polebench/netem"
	"github.com/polebench/polebench/topology"
)

// withPlan writes a plan for n servers, every link delay one way, into dir and
// points the configs at it with mode.
func withPlan(t *testing.T, cfgs []Config, delay time.Duration, mode string) {
	t.Helper()
	ids := make([]int, len(cfgs))
	for i := range ids {
		ids[i] = i + 1
	}
	topo, err := topology.New(topology.Config{
		DCs:      []topology.DC{{Name: "D1", Servers: ids[:1]}, {Name: "D2", Servers: ids[1:]}},
		Links:    []topology.Link{{A: "D1", B: "D2", RTT: 2 * float64(delay) / float64(time.Millisecond)}},
		IntraRTT: 2 * float64(delay) / float64(time.Millisecond),
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := netem.WritePlan(path, netem.NewPlan(topo, netem.Options{Seed: 1})); err != nil {
		t.Fatal(err)
	}
	for i := range cfgs {
		cfgs[i].LinkPlan, cfgs[i].LinkMode = path, mode
	}
}

// withoutKernelLinks returns why kernel links are unavailable here; where they are
// available (root and sch_netem: the VM test covers that mode), it makes them
// unavailable for the test, so the user-space path is tested everywhere.
func withoutKernelLinks(t *testing.T) error {
	if err := kernelLinksUnavailable(context.Background()); err != nil {
		return err
	}
	probe := kernelLinksUnavailable
	t.Cleanup(func() { kernelLinksUnavailable = probe })
	err := errors.New("made unavailable by the test")
	kernelLinksUnavailable = func(context.Context) error { return err }
	return err
}

// TestLinkModeAuto: a server in auto mode installs its links in the kernel when it
// can (CAP_NET_ADMIN and sch_netem), else delays its messages itself, and /status says
// which and why; either way the heartbeats measure the plan's RTT.
func TestLinkModeAuto(t *testing.T) {
	cfgs, lns := ensemble(t, 3)
	withPlan(t, cfgs, 10*time.Millisecond, LinksAuto)
	kernelErr := withoutKernelLinks(t)
	nodes := make([]*Node, len(cfgs))
	for i, c := range cfgs {
		n, err := Start(t.Context(), c, lns[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Stop()
		nodes[i] = n
	}
	for _, n := range nodes {
		waitServing(t, n)
	}
	st := nodes[0].Status().Links
	if st.Mode != LinksUserSpace || st.Reason != "kernel links unavailable: "+kernelErr.Error() {
		t.Fatalf("p1's links %+v; want user-space because %v", st, kernelErr)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var rtt float64
		for _, p := range nodes[0].Status().Peers {
			if p.ID == 2 && p.Samples > 0 {
				rtt = p.RTTms
			}
		}
		if rtt >= 15 && rtt <= 25 { // within 25 % of the plan
			t.Logf("p1 measures p2 at %.2f ms (plan 20 ms, user space: %s)", rtt, st.Reason)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("p1 measures p2 at %.2f ms; the plan says 20 ms", rtt)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestLinkModeKernelRefused: link_mode kernel where the kernel links cannot be
// installed fails the start, saying why.
func TestLinkModeKernelRefused(t *testing.T) {
	reason := withoutKernelLinks(t)
	cfgs, lns := ensemble(t, 3)
	withPlan(t, cfgs, time.Millisecond, LinksKernel)
	n, err := Start(t.Context(), cfgs[0], lns[0], nil)
	if err == nil {
		n.Stop()
		t.Fatal("started with link_mode kernel where kernel links are unavailable")
	}
	if !strings.Contains(err.Error(), "link_mode kernel: "+reason.Error()) {
		t.Fatalf("error %q does not say why: %v", err, reason)
	}
}

// A kernel-links server follows its peers' addresses: a peer that resolves is
// installed, one that does not is reported and keeps its last address.
func TestKernelLinksLookup(t *testing.T) {
	for host, want := range map[string]string{"10.1.2.3": "10.1.2.3", "::ffff:10.1.2.4": "10.1.2.4", "localhost": "127.0.0.1"} {
		a, err := lookup(t.Context(), host)
		if err != nil || a != netip.MustParseAddr(want) {
			t.Errorf("lookup(%q) = %v, %v; want %s", host, a, err, want)
		}
	}
	if _, err := lookup(t.Context(), "no-such-host.invalid"); err == nil {
		t.Error("no-such-host.invalid resolved")
	}
}
