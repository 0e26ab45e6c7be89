package zkproto

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func be(vs ...int32) []byte {
	e := NewEncoder(nil)
	for _, v := range vs {
		e.Int(v)
	}
	return e.Bytes()
}

func TestPrimitives(t *testing.T) {
	e := NewEncoder(nil)
	e.Int(-2)
	e.Long(0x0102030405060708)
	e.Bool(true)
	e.Buffer(nil)
	e.Buffer([]byte{})
	e.Buffer([]byte("ab"))
	e.String("zk")
	e.Strings(nil)
	e.Strings([]string{"a", ""})
	want := []byte{
		0xff, 0xff, 0xff, 0xfe,
		1, 2, 3, 4, 5, 6, 7, 8,
		1,
		0xff, 0xff, 0xff, 0xff,
		0, 0, 0, 0,
		0, 0, 0, 2, 'a', 'b',
		0, 0, 0, 2, 'z', 'k',
		0xff, 0xff, 0xff, 0xff,
		0, 0, 0, 2, 0, 0, 0, 1, 'a', 0, 0, 0, 0,
	}
	if !bytes.Equal(e.Bytes(), want) {
		t.Fatalf("encoded\n %x\nwant %x", e.Bytes(), want)
	}
	d := NewDecoder(want)
	if v := d.Int("i"); v != -2 {
		t.Errorf("int %d", v)
	}
	if v := d.Long("l"); v != 0x0102030405060708 {
		t.Errorf("long %x", v)
	}
	if !d.Bool("b") {
		t.Error("bool false")
	}
	if v := d.Buffer("null"); v != nil {
		t.Errorf("null buffer %v", v)
	}
	if v := d.Buffer("empty"); v == nil || len(v) != 0 {
		t.Errorf("empty buffer %v", v)
	}
	if v := d.Buffer("ab"); string(v) != "ab" {
		t.Errorf("buffer %q", v)
	}
	if v := d.String("s"); v != "zk" {
		t.Errorf("string %q", v)
	}
	if v := d.Strings("null"); v != nil {
		t.Errorf("null vector %v", v)
	}
	if v := d.Strings("v"); !reflect.DeepEqual(v, []string{"a", ""}) {
		t.Errorf("vector %q", v)
	}
	if d.Err() != nil || d.Remaining() != 0 {
		t.Fatalf("err %v, %d left", d.Err(), d.Remaining())
	}
}

// TestDecodeErrors: malformed input gives an error naming the field, never a panic
// and never an allocation sized by a hostile length.
func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		read func(d *Decoder)
		want string
	}{
		{"short int", []byte{1, 2}, func(d *Decoder) { d.Int("xid") }, "xid needs 4 bytes"},
		{"short long", be(1), func(d *Decoder) { d.Long("zxid") }, "zxid needs 8 bytes"},
		{"empty bool", nil, func(d *Decoder) { d.Bool("watch") }, "watch needs 1 bytes"},
		{"buffer length -2", be(-2), func(d *Decoder) { d.Buffer("data") }, "data: bad length -2"},
		{"buffer past the end", be(5, 0), func(d *Decoder) { d.Buffer("data") }, "data: bad length 5"},
		{"huge string", be(0x7fffffff), func(d *Decoder) { d.String("path") }, "path: bad length 2147483647"},
		{"huge vector", be(0x10000000, 0), func(d *Decoder) { d.Strings("children") }, "children: bad length 268435456"},
		{"vector element cut", be(1, 5), func(d *Decoder) { d.Strings("children") }, "children: bad length 5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(tc.in)
			tc.read(d)
			if d.Err() == nil || !strings.Contains(d.Err().Error(), tc.want) {
				t.Fatalf("err %v, want it to mention %q", d.Err(), tc.want)
			}
			d.Int("after") // errors stick; later reads are harmless
			if !strings.Contains(d.Err().Error(), tc.want) {
				t.Fatalf("first error replaced by %v", d.Err())
			}
		})
	}
}

func TestReadFrame(t *testing.T) {
	frame := AppendFrame(nil, []byte("body"))
	got, err := ReadFrame(bytes.NewReader(frame), 10)
	if err != nil || string(got) != "body" {
		t.Fatalf("%q %v", got, err)
	}
	for name, in := range map[string][]byte{
		"too long": AppendFrame(nil, make([]byte, 11)),
		"negative": be(-1),
		"cut":      be(8, 0),
	} {
		if _, err := ReadFrame(bytes.NewReader(in), 10); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := ReadFrame(bytes.NewReader(nil), 10); !errors.Is(err, io.EOF) {
		t.Errorf("clean EOF: %v", err)
	}
}

// TestConnectReadOnlyByte: the optional trailing byte is detected and echoed.
func TestConnectReadOnlyByte(t *testing.T) {
	for _, ro := range []bool{false, true} {
		req := ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: ro}
		b := Marshal(&req)
		if want := 44 + map[bool]int{false: 0, true: 1}[ro]; len(b) != want {
			t.Fatalf("read-only %v: %d bytes, want %d", ro, len(b), want)
		}
		got, err := DecodeConnectRequest(b)
		if err != nil || got.HasReadOnly != ro {
			t.Fatalf("read-only %v: decoded %+v, %v", ro, got, err)
		}
		resp := ExpiredConnectResponse(got)
		if n := len(Marshal(&resp)); n != 36+len(b)-44 {
			t.Fatalf("read-only %v: expired response of %d bytes", ro, n)
		}
	}
}

func TestMultiRejectsForeignOps(t *testing.T) {
	e := NewEncoder(nil)
	(&RequestHeader{Xid: 1, Type: OpMulti}).Encode(e)
	(&MultiHeader{Type: OpPing, Err: -1}).Encode(e)
	if _, _, err := DecodeRequest(e.Bytes()); err == nil || !strings.Contains(err.Error(), "ping not allowed") {
		t.Fatalf("err %v", err)
	}
}
