package spec

import (
	"github.com/polebench/polebench/model"
	"github.com/polebench/polebench/score"
)

// Model runs the analytic model on the spec's scenario: the initial leader leads with
// every server live, then crashes; the rest elect with every single-score oracle and
// with the spec's own oracle when it needs configuration (preference, combined).
func (s *Spec) Model() (*model.Prediction, error) {
	t, err := s.Topology()
	if err != nil {
		return nil, err
	}
	oracles := model.SingleScoreOracles()
	if s.Oracle.Name == score.Preference || s.Oracle.Name == score.Combined {
		oracles = append(oracles, s.Oracle)
	}
	sc := model.Scenario{InitialLeader: s.InitialLeader, Zxids: s.modelZxids(), Oracles: oracles}
	if s.Links.hasRules() {
		// One-way delays per direction from the links' rules, as they stand at the
		// start, and where the links make the prediction not apply.
		plan := s.Plan(t, s.Seed)
		sc.OneWay, sc.Notes = model.PlanOneWay(plan.At(0)), model.NotesFor(plan)
	}
	return model.Predict(t, sc)
}

// modelZxids is the spec's zxids or, when it gives none, what the outdate list implies:
// a server's last zxid grows with the time of the last write it saw, and an outdated
// server is restarted too late to catch up, so it is behind by what it missed (the
// earlier killed, the further).
func (s *Spec) modelZxids() map[int]uint64 {
	if s.Zxids != nil || len(s.Outdate) == 0 || s.CrashAt == 0 {
		return s.Zxids
	}
	z := map[int]uint64{}
	for id := 1; id <= s.N(); id++ {
		z[id] = uint64(s.CrashAt)
	}
	for _, o := range s.Outdate {
		if o.KillAt < s.CrashAt {
			z[o.Server] = uint64(o.KillAt)
		}
	}
	return z
}

// HistoryElects is whom the history oracle elects after the initial leader's crash
// from the zxids the servers proposed at the election (highest zxid, ties by highest
// id): what a run's summary (election_zxids) says history had to elect, when a
// proposal in flight at the kill put a server ahead of the model's winner.
func (s *Spec) HistoryElects(zxids map[int]uint64) (int, error) {
	pred, err := s.Model()
	if err != nil {
		return 0, err
	}
	e, err := pred.After.Elect(score.Oracle{Name: score.History}, 0, zxids)
	return e.Leader, err
}
