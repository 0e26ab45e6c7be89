package zkproto

import (
	"reflect"
	"testing"
)

// seeds adds every frame of the real capture whose direction matches client.
func seeds(f *testing.F, client bool, add func(frame)) {
	for _, conn := range loadFrames(f) {
		for _, fr := range conn {
			if fr.client == client {
				add(fr)
			}
		}
	}
}

// FuzzDecodeRequest feeds the request decoder arbitrary frames, seeded with what
// real clients sent: it must never panic, and whatever it accepts must survive an
// encode/decode round trip unchanged.
func FuzzDecodeRequest(f *testing.F) {
	seeds(f, true, func(fr frame) { f.Add(fr.data) })
	f.Fuzz(func(t *testing.T, b []byte) {
		h, body, err := DecodeRequest(b)
		if err != nil {
			return
		}
		h2, body2, err := DecodeRequest(EncodeRequest(h, body))
		if err != nil {
			t.Fatalf("re-encoded request does not decode: %v", err)
		}
		if h2 != h || !reflect.DeepEqual(body2, body) {
			t.Fatalf("round trip changed %+v %#v into %+v %#v", h, body, h2, body2)
		}
	})
}

// FuzzDecodeConnectRequest does the same for the first frame of a connection.
func FuzzDecodeConnectRequest(f *testing.F) {
	seeds(f, true, func(fr frame) {
		if fr.label == "connect" || fr.label == "malformed-connect" {
			f.Add(fr.data)
		}
	})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeConnectRequest(b)
		if err != nil {
			return
		}
		r2, err := DecodeConnectRequest(Marshal(&r))
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed %+v into %+v (%v)", r, r2, err)
		}
	})
}

// FuzzDecodeReply covers the client side (what the tests' raw client and any
// tooling decode), seeded with real ZooKeeper replies.
func FuzzDecodeReply(f *testing.F) {
	seeds(f, false, func(fr frame) {
		for op, name := range opNames {
			if name == fr.label {
				f.Add(int32(op), fr.data)
			}
		}
	})
	f.Fuzz(func(t *testing.T, op int32, b []byte) {
		h, body, err := DecodeReply(Op(op), b)
		if err != nil || body == nil {
			return
		}
		h2, body2, err := DecodeReply(Op(op), AppendReply(nil, h, body)[4:])
		if err != nil || h2 != h || !reflect.DeepEqual(body2, body) {
			t.Fatalf("round trip changed %+v %#v into %+v %#v (%v)", h, body, h2, body2, err)
		}
	})
}
