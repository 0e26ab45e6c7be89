package pole

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMessageRoundTrip(t *testing.T) {
	msgs := []Message{
		{Type: MsgPropose, From: 1, To: 2, Epoch: 7, Proposal: Proposal{Score: Score{1, 2.5, math.Inf(1)}, ID: 3}},
		{Type: MsgVote, From: 5, To: 4, Epoch: 1 << 40, Leader: 3},
		{Type: MsgPing, From: 2, To: 1, Clock: 90 * time.Second, Rate: 333.25},
		{Type: MsgPong, From: 1, To: 2, Clock: 90 * time.Second, Rate: 0},
		{Type: MsgScoreQuery, From: 3, To: 1, Epoch: 2},
		{Type: MsgScore, From: 1, To: 3, Epoch: 2, Proposal: Proposal{Score: Score{-4}, ID: 1}},
		{Type: MsgResign, From: 3, To: 2, Epoch: 2},
	}
	for _, m := range msgs {
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		var got Message
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip: got %#v, want %#v", got, m)
		}
	}
}

func TestMessageDecodeErrors(t *testing.T) {
	good, err := Message{Type: MsgPropose, From: 1, To: 2, Proposal: Proposal{Score: Score{1}, ID: 1}}.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	nan := math.Float64bits(math.NaN())
	cases := map[string]struct {
		b    []byte
		want string
	}{
		"empty":     {nil, "header needs"},
		"version":   {mutate(func(b []byte) []byte { b[0] = 9; return b }), "wire version 9"},
		"type":      {mutate(func(b []byte) []byte { b[1] = 99; return b }), "unknown message type 99"},
		"truncated": {good[:len(good)-1], "want"},
		"trailing":  {append(append([]byte(nil), good...), 0), "want"},
		"long":      {mutate(func(b []byte) []byte { b[headerLen-1] = MaxScoreLen + 1; return b }), "at most"},
		"nan": {mutate(func(b []byte) []byte {
			for i := range 8 {
				b[headerLen+i] = byte(nan >> (56 - 8*i))
			}
			return b
		}), "NaN"},
	}
	for name, c := range cases {
		var m Message
		err := m.UnmarshalBinary(c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, c.want)
		}
	}
}

func TestMessageEncodeErrors(t *testing.T) {
	for name, m := range map[string]Message{
		"type":     {Type: 0},
		"negative": {Type: MsgVote, From: -1},
		"long":     {Type: MsgPropose, Proposal: Proposal{Score: make(Score, MaxScoreLen+1)}},
		"nan":      {Type: MsgPing, Rate: math.NaN()},
	} {
		if _, err := m.MarshalBinary(); err == nil {
			t.Errorf("%s: %v encoded without error", name, m)
		}
	}
}
