package protocol

import (
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/stage"
	pb "github.com/kube-aws/kube-aws/plugins/proto/v1"
)

// sharedSet is the construct set of the stage input last sent, encoded
// once for every plugin the stage calls. Every plugin of a stage receives
// the same Input (the stages build one per stage call and hand it to all of
// them, concurrently), and its set is by far the largest part of it:
// converting and encoding it once per plugin, ten times over for the
// built-ins, cost kube-aws more than all the rest of sending the input.
//
// The encoding is kept for one Input, not for a set: a stage's Input cannot
// change while its plugins run (they read it concurrently), but a set may
// be carried to the next stage, and nothing but this rule would keep a later
// change to it from travelling stale. Input and set are kept (not only
// their addresses) so that no other can take their address while here.
var sharedSet struct {
	mu  sync.Mutex
	in  *stage.Input
	set *construct.Set
	// field is the set as the StageRequest's constructs field: its tag,
	// length and encoding.
	field []byte
}

// requestToPB is InputToPB for sending: the construct set is not converted
// into the request but carried in its unknown fields, already encoded as
// field constructs (5). Protobuf writes unknown fields as they are after
// the known ones, and the order of fields on the wire is free, so the
// plugin decodes exactly the request InputToPB would have made.
func requestToPB(in *stage.Input, hostServiceID uint32) (*pb.StageRequest, error) {
	if in == nil || in.Constructs == nil {
		return InputToPB(in, hostServiceID), nil
	}
	field, err := setField(in)
	if err != nil {
		return nil, err
	}
	bare := *in
	bare.Constructs = nil
	req := InputToPB(&bare, hostServiceID)
	req.ProtoReflect().SetUnknown(field)
	return req, nil
}

// setField returns in's construct set encoded as the constructs field of a
// StageRequest, encoding it only for the first plugin in is sent to.
func setField(in *stage.Input) ([]byte, error) {
	sharedSet.mu.Lock()
	defer sharedSet.mu.Unlock()
	if sharedSet.in == in && sharedSet.set == in.Constructs {
		return sharedSet.field, nil
	}
	b, err := proto.Marshal(SetToPB(in.Constructs))
	if err != nil {
		return nil, err
	}
	field := protowire.AppendTag(nil, constructsField, protowire.BytesType)
	field = protowire.AppendBytes(field, b)
	sharedSet.in, sharedSet.set, sharedSet.field = in, in.Constructs, field
	return field, nil
}

// constructsField is the number of StageRequest's constructs field.
var constructsField = (&pb.StageRequest{}).ProtoReflect().Descriptor().Fields().ByName("constructs").Number()

// sendCodec is gRPC's proto codec on the sending side of sharedSet. A
// StageRequest carries the set in its unknown fields, which protobuf writes
// last and as they are; the codec hands gRPC the request's other fields and
// the set's own bytes as two buffers, instead of copying the set into a
// buffer of the request's size for each plugin: ten copies of about a MB,
// and as many of the buffers cleared for reuse, at 100 node pools.
type sendCodec struct{ encoding.CodecV2 }

// clientCodec is the codec of every gRPC client of the protocol.
func clientCodec() grpc.CallOption {
	return grpc.ForceCodecV2(sendCodec{encoding.GetCodecV2("proto")})
}

func (c sendCodec) Marshal(v any) (mem.BufferSlice, error) {
	req, ok := v.(*pb.StageRequest)
	if !ok {
		return c.CodecV2.Marshal(v)
	}
	m := req.ProtoReflect()
	field := m.GetUnknown()
	if len(field) == 0 {
		return c.CodecV2.Marshal(v)
	}
	// The request is the caller's own, made for this one call (requestToPB),
	// so taking its unknown fields off while it is encoded races nothing.
	m.SetUnknown(nil)
	data, err := c.CodecV2.Marshal(req)
	m.SetUnknown(field)
	if err != nil {
		return nil, err
	}
	return append(data, mem.SliceBuffer(field)), nil
}
