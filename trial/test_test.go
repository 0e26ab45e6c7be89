package trial_test

import (
	"testing"

	"github.com/polebench/polebench/spec"
	"github.com/polebench/polebench/trial"
)

// A run's plot title names its placement policy beside the system's own election.
func TestTitle(t *testing.T) {
	for _, tc := range []struct {
		settings []spec.Setting
		want     string
	}{
		{nil, "two-dc: history oracle, p5 killed at 1m0s"},
		{[]spec.Setting{{Name: "flavor", Value: "etcd"}, {Name: "placement", Value: "latency"}}, "two-dc: history oracle, p5 killed at 1m0s, placement latency"},
		{[]spec.Setting{{Name: "flavor", Value: "etcd"}, {Name: "placement", Value: "priority:1,2,3,4,5"}}, "two-dc: history oracle, p5 killed at 1m0s, placement priority [1 2 3 4 5]"},
	} {
		sp, err := spec.Resolve("two-dc")
		if err == nil {
			sp, err = sp.With(tc.settings...)
		}
		if err != nil {
			t.Fatal(err)
		}
		tt, err := trial.New(sp, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := tt.Title(); got != tc.want {
			t.Errorf("%v: title %q, want %q", tc.settings, got, tc.want)
		}
	}
}
