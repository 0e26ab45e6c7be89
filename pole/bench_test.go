package pole

import (
	"math/rand"
	"testing"
	"time"
)

// BenchmarkSimElection measures a whole five-server election on the simulated network
// (start, propose, elect by the election timer), heartbeats off.
func BenchmarkSimElection(b *testing.B) {
	ids := servers(5)
	for i := range b.N {
		rng := rand.New(rand.NewSource(int64(i)))
		s := newSim(b, int64(i), ids, electionConfig(ids, History{}))
		s.delay = randomDelays(rng, ids, time.Millisecond, 40*time.Millisecond)
		for _, id := range ids {
			s.start(id)
		}
		s.run(time.Second)
		if _, ok := s.agreed(); !ok {
			b.Fatal("no leader")
		}
	}
}

// BenchmarkStepProposal measures handling one proposal of the current epoch.
func BenchmarkStepProposal(b *testing.B) {
	n, err := NewNode(DefaultConfig(1, servers(5), History{}, 10*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	n.NewElection()
	n.Ready()
	m := Message{Type: MsgPropose, From: 2, To: 1, Epoch: 1, Proposal: Proposal{Score: Score{0, 0}, ID: 2}}
	b.ReportAllocs()
	for b.Loop() {
		if err := n.Step(0, m); err != nil {
			b.Fatal(err)
		}
		n.Ready()
	}
}
