package spec

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/polebench/polebench/cluster/backend"
	"github.com/polebench/polebench/placement"
	"github.com/polebench/polebench/topology"
)

// Placement is the placement controller a run starts beside its cluster (package
// placement): its policy and, for priority, the order of servers. Nil in a Spec is
// placement.None, the system's own choice, so a spec without it resolves as it did.
type Placement struct {
	Policy   string
	Priority []int `json:",omitempty"`
}

// PlacementPolicy is the spec's placement policy (placement.None without one).
func (s *Spec) PlacementPolicy() placement.Policy {
	if s.Placement == nil {
		return placement.Policy{Name: placement.None}
	}
	return placement.Policy{Name: s.Placement.Policy, Priority: slices.Clone(s.Placement.Priority)}
}

// Places says whether the run starts a placement controller.
func (s *Spec) Places() bool { return s.PlacementPolicy().Name != placement.None }

// decodePlacement reads placement: a policy's name, or {policy, priority}.
func decodePlacement(d *decoder, s *Spec) field {
	return func(n *yaml.Node, path string) error {
		p := &Placement{}
		s.Placement = p
		if resolve(n).Kind == yaml.ScalarNode {
			return d.str(&p.Policy)(n, path)
		}
		return d.mapping(n, path, map[string]field{
			"policy":   d.str(&p.Policy),
			"priority": d.ints(&p.Priority),
		}, "policy")
	}
}

// parsePlacement reads the --placement override: a policy, or priority:ID,ID,...
func parsePlacement(v string) (*Placement, error) {
	name, order, hasOrder := strings.Cut(v, ":")
	p := &Placement{Policy: name}
	if hasOrder {
		for _, f := range strings.Split(order, ",") {
			id, err := parseServer(strings.TrimSpace(f))
			if err != nil {
				return nil, err
			}
			p.Priority = append(p.Priority, id)
		}
	}
	if name == placement.None && !hasOrder {
		return nil, nil
	}
	return p, nil
}

// placementField is the path of the placement's policy as the spec gave it.
func (s *Spec) placementField() string {
	if _, ok := s.pos["placement.policy"]; ok {
		return "placement.policy"
	}
	return "placement"
}

// checkPlacement checks the policy, its order against the servers, and that the
// flavor can move its leader (backend.Carries.LeaderTransfer, as it declares).
func (s *Spec) checkPlacement() error {
	if s.Placement == nil {
		return s.checkControllerFaults(false)
	}
	p, n := s.Placement, s.N()
	if !slices.Contains(placement.Names(), p.Policy) {
		return s.errf(s.placementField(), "unknown placement policy %q (known: %s)", p.Policy, strings.Join(placement.Names(), ", "))
	}
	switch {
	case p.Policy == placement.Priority && len(p.Priority) == 0:
		return s.errf(s.placementField(), "priority needs an order of servers, most preferred first (placement: {policy: priority, priority: [3, 1]}, or --placement priority:3,1)")
	case p.Policy != placement.Priority && len(p.Priority) > 0:
		return s.errf("placement.priority", "an order is given but the policy is %s, not priority", p.Policy)
	}
	for i, id := range p.Priority {
		path := index("placement.priority", i)
		if id < 1 || id > n {
			return &Error{Pos: s.where(path), Field: "placement.priority", Msg: fmt.Sprintf("%s is not a server of the spec (p1..p%d)", topology.Name(id), n)}
		}
		if slices.Contains(p.Priority[:i], id) {
			return &Error{Pos: s.where(path), Field: "placement.priority", Msg: fmt.Sprintf("%s is named twice", topology.Name(id))}
		}
	}
	if f, known := backend.LookupFlavor(s.Flavor); known && p.Policy != placement.None && !backend.Carried(s.Backend, s.Flavor).LeaderTransfer {
		return s.errf(s.placementField(), "flavor %s cannot move its leader, so no placement policy but %s applies: %s",
			f.Name, placement.None, f.Carries.Reason("placement"))
	}
	return s.checkControllerFaults(p.Policy != placement.None)
}

// checkControllerFaults plays the controller's kills and restarts: only with a
// controller, only a running one killed, only a killed one started again.
func (s *Spec) checkControllerFaults(places bool) error {
	running := true
	for _, f := range s.ControllerFaults() {
		switch {
		case !places:
			return s.errf(f.Source, "the run has no placement controller to kill or restart (placement: a policy other than %s)", placement.None)
		case f.Kill && !running:
			return s.errf(f.Source, "the placement controller is not running at %v", f.At)
		case !f.Kill && running:
			return s.errf(f.Source, "the placement controller is running at %v: only a killed one restarts", f.At)
		}
		running = !f.Kill
	}
	return nil
}
