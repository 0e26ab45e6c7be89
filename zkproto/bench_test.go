package zkproto

import "testing"

func BenchmarkDecodeSetData1KB(b *testing.B) {
	frame := EncodeRequest(RequestHeader{Xid: 7, Type: OpSetData}, &SetDataRequest{Path: "/bench/node", Data: make([]byte, 1024), Version: -1})
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, _, err := DecodeRequest(frame); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendStatReply(b *testing.B) {
	var buf []byte
	body := &StatResponse{Stat: Stat{Czxid: 1, Mzxid: 2, Version: 3, DataLength: 1024}}
	for b.Loop() {
		buf = AppendReply(buf[:0], ReplyHeader{Xid: 7, Zxid: 9}, body)
	}
}
