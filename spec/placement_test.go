package spec

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// The placement section and its errors, each naming file:line: field (or the
// override): an unknown policy, a flavor that cannot move its leader (in its own
// words), a priority order naming a server the spec does not have, and the
// controller's faults without a controller or out of order.
func TestPlacementErrors(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"flavor: etcd\nplacement: fastest", `x.yaml:10: placement: unknown placement policy "fastest" (known: none, priority, latency, worst-case, consensus, request)`},
		{"flavor: etcd\nplacement: {policy: fastest}", `x.yaml:10: placement.policy: unknown placement policy "fastest" (known: none, priority, latency, worst-case, consensus, request)`},
		{"flavor: etcd\nplacement:\n  policy: priority\n  priority: [3, 9]", "x.yaml:12: placement.priority: p9 is not a server of the spec (p1..p5)"},
		{"flavor: etcd\nplacement:\n  policy: priority\n  priority: [3, 3]", "x.yaml:12: placement.priority: p3 is named twice"},
		{"flavor: etcd\nplacement: priority", "x.yaml:10: placement: priority needs an order of servers, most preferred first (placement: {policy: priority, priority: [3, 1]}, or --placement priority:3,1)"},
		{"flavor: etcd\nplacement:\n  policy: latency\n  priority: [3]", "x.yaml:12: placement.priority: an order is given but the policy is latency, not priority"},
		{"flavor: etcd\nplacement: {policy: latency, margin: 1}", "x.yaml:10: placement.margin: unknown field (known: policy, priority)"},
		{"flavor: zookeeper\nplacement: latency", "x.yaml:10: placement: flavor zookeeper cannot move its leader, so no placement policy but none applies: ZooKeeper has no leader transfer: no request hands leadership to a chosen server, its leader is whoever wins its own election, and the only way to move it is to stop the leader, a crash rather than a placement"},
		{"placement: latency", "x.yaml:9: placement: flavor poled cannot move its leader, so no placement policy but none applies: poled places its leader itself, by the spec's oracle (POLE's election): give oracle: instead"},
		{"flavor: etcd\nfaults:\n  - {at: 70s, kill: controller}", "x.yaml:11: faults[0].kill: the run has no placement controller to kill or restart (placement: a policy other than none)"},
		{"flavor: etcd\nplacement: latency\nfaults:\n  - {at: 70s, restart: controller}", "x.yaml:12: faults[0].restart: the placement controller is running at 1m10s: only a killed one restarts"},
		{"flavor: etcd\nplacement: latency\nfaults:\n  - {at: 80s, kill: controller}\n  - {at: 70s, kill: controller}", "x.yaml:12: faults[0].kill: the placement controller is not running at 1m20s"},
		{"flavor: etcd\nplacement: latency\nfaults:\n  - {at: 70s, kill: leader}", `x.yaml:12: faults[0].kill: "leader" is not an integer`},
	}
	for _, tc := range tests {
		_, err := Parse("x.yaml", runSpec("60s", tc.yaml))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got: %v\nwant: %s", tc.yaml, err, tc.want)
		}
	}
}

func TestPlacementOverride(t *testing.T) {
	base, err := Parse("x.yaml", runSpec("60s", "flavor: etcd\n"))
	if err != nil {
		t.Fatal(err)
	}
	if base.Places() || base.Placement != nil {
		t.Fatalf("default placement %+v, want none (nil)", base.Placement)
	}
	tests := []struct {
		value string
		want  *Placement
		err   string
	}{
		{"latency", &Placement{Policy: "latency"}, ""},
		{"priority:3,p1", &Placement{Policy: "priority", Priority: []int{3, 1}}, ""},
		{"none", nil, ""},
		{"priority:3,7", nil, "override placement=priority:3,7: placement.priority: p7 is not a server of the spec (p1..p5)"},
		{"priority:x", nil, `override placement=priority:x: placement: "x" is not a server id`},
		{"quickest", nil, `override placement=quickest: placement: unknown placement policy "quickest" (known: none, priority, latency, worst-case, consensus, request)`},
	}
	for _, tc := range tests {
		s, err := base.With(Setting{"placement", tc.value})
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("--placement %s: got %v, want %s", tc.value, err, tc.err)
			}
		case err != nil:
			t.Errorf("--placement %s: %v", tc.value, err)
		case !reflect.DeepEqual(s.Placement, tc.want):
			t.Errorf("--placement %s: %+v, want %+v", tc.value, s.Placement, tc.want)
		}
	}
	// The override on a flavor that cannot move its leader names the override.
	zk, err := Parse("x.yaml", runSpec("60s", ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zk.With(Setting{"placement", "latency"}); err == nil || !strings.HasPrefix(err.Error(), "override placement=latency: placement: flavor poled cannot move its leader") {
		t.Errorf("poled with --placement latency: %v", err)
	}
}

// The controller's faults are the harness's, in time order, out of the nemesis's
// schedule.
func TestControllerFaults(t *testing.T) {
	s, err := Parse("x.yaml", runSpec("60s", "flavor: etcd\nplacement: latency\nfaults:\n  - {at: 90s, restart: controller}\n  - {at: 70s, kill: controller}\n  - {at: 75s, kill: 1}"))
	if err != nil {
		t.Fatal(err)
	}
	want := []ControllerFault{{At: 70 * time.Second, Kill: true, Source: "faults[1].kill"}, {At: 90 * time.Second, Source: "faults[0].restart"}}
	if got := s.ControllerFaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("ControllerFaults() = %+v, want %+v", got, want)
	}
	for _, f := range s.FaultSchedule() {
		if f.Source != "crash_at" && f.Source != "faults[2].kill" {
			t.Errorf("the nemesis's schedule has %+v", f)
		}
	}
}
