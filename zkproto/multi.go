package zkproto

import "fmt"

// MultiHeader precedes each operation of a multi request or response; a header with
// Done set ends the list.
type MultiHeader struct {
	Type Op
	Done bool
	Err  Code
}

func (h *MultiHeader) Encode(e *Encoder) { e.Int(int32(h.Type)); e.Bool(h.Done); e.Int(int32(h.Err)) }
func (h *MultiHeader) Decode(d *Decoder) {
	h.Type = Op(d.Int("multi.type"))
	h.Done = d.Bool("multi.done")
	h.Err = Code(d.Int("multi.err"))
}

var multiEnd = MultiHeader{Type: -1, Done: true, Err: -1}

// MultiOp is one operation of a multi: Req is *CreateRequest (create, create2,
// createContainer), *CreateTTLRequest, *PathVersionRequest (delete, check),
// *SetDataRequest, or *PathWatchRequest (getData, getChildren in a multiRead).
type MultiOp struct {
	Type Op
	Req  Message
}

// MultiRequest is the body of multi and multiRead.
type MultiRequest struct{ Ops []MultiOp }

func (r *MultiRequest) Encode(e *Encoder) {
	for _, op := range r.Ops {
		h := MultiHeader{Type: op.Type, Err: -1}
		h.Encode(e)
		op.Req.Encode(e)
	}
	multiEnd.Encode(e)
}

func (r *MultiRequest) Decode(d *Decoder) {
	r.Ops = nil
	for d.Err() == nil {
		var h MultiHeader
		h.Decode(d)
		if d.Err() != nil || h.Done {
			return
		}
		var m Message
		switch h.Type {
		case OpCreate, OpCreate2, OpCreateContainer:
			m = &CreateRequest{}
		case OpCreateTTL:
			m = &CreateTTLRequest{}
		case OpDelete, OpCheck:
			m = &PathVersionRequest{}
		case OpSetData:
			m = &SetDataRequest{}
		case OpGetData, OpGetChildren:
			m = &PathWatchRequest{}
		default:
			d.fail(fmt.Errorf("zkproto: multi: operation %v not allowed (offset %d)", h.Type, d.Offset()-9))
			return
		}
		m.Decode(d)
		r.Ops = append(r.Ops, MultiOp{Type: h.Type, Req: m})
	}
}

// OpResult is one result of a multi. Type is the operation's type, or OpError with
// Err set when the multi failed (then every op carries an error result: OK before the
// failing op, its code at it, CodeRuntimeInconsistency after it).
type OpResult struct {
	Type     Op
	Err      Code
	Path     string   // create, create2
	Stat     Stat     // create2, setData, getData
	Data     []byte   // getData (multiRead)
	Children []string // getChildren (multiRead)
}

// MultiResponse is the body of a multi reply.
type MultiResponse struct{ Results []OpResult }

func (r *MultiResponse) Encode(e *Encoder) {
	for i := range r.Results {
		res := &r.Results[i]
		h := MultiHeader{Type: res.Type}
		if res.Type == OpError {
			h.Err = res.Err
		}
		h.Encode(e)
		switch res.Type {
		case OpCreate:
			e.String(res.Path)
		case OpCreate2, OpCreateContainer, OpCreateTTL:
			e.String(res.Path)
			res.Stat.Encode(e)
		case OpSetData:
			res.Stat.Encode(e)
		case OpGetData:
			e.Buffer(res.Data)
			res.Stat.Encode(e)
		case OpGetChildren:
			e.Strings(res.Children)
		case OpError:
			e.Int(int32(res.Err))
		}
	}
	multiEnd.Encode(e)
}

func (r *MultiResponse) Decode(d *Decoder) {
	r.Results = nil
	for d.Err() == nil {
		var h MultiHeader
		h.Decode(d)
		if d.Err() != nil || h.Done {
			return
		}
		res := OpResult{Type: h.Type}
		switch h.Type {
		case OpCreate:
			res.Path = d.String("multi.path")
		case OpCreate2, OpCreateContainer, OpCreateTTL:
			res.Path = d.String("multi.path")
			res.Stat.Decode(d)
		case OpSetData:
			res.Stat.Decode(d)
		case OpGetData:
			res.Data = d.Buffer("multi.data")
			res.Stat.Decode(d)
		case OpGetChildren:
			res.Children = d.Strings("multi.children")
		case OpDelete, OpCheck:
		case OpError:
			res.Err = Code(d.Int("multi.err"))
		default:
			d.fail(fmt.Errorf("zkproto: multi result: unknown type %v", h.Type))
			return
		}
		r.Results = append(r.Results, res)
	}
}

// FailedMulti builds the results ZooKeeper returns for a multi of n ops whose op at
// index failed with code: OK before it, code at it, runtime inconsistency after it.
func FailedMulti(n, index int, code Code) []OpResult {
	out := make([]OpResult, n)
	for i := range out {
		out[i].Type = OpError
		switch {
		case i < index:
			out[i].Err = CodeOK
		case i == index:
			out[i].Err = code
		default:
			out[i].Err = CodeRuntimeInconsistency
		}
	}
	return out
}
