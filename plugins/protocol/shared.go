package protocol

import (
	"crypto/rand"
	"reflect"
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

// sharedSet is what every plugin of a stage receives alike, encoded once for
// all of them: the stage input's construct set and every plugin's values.
// Every plugin of a stage receives the same Input (the stages build one per
// stage call and hand it to all of them, concurrently). Its set is by far
// the largest part of it: converting and encoding it once per plugin, ten
// times over for the built-ins, cost kube-aws more than all the rest of
// sending the input. The values are next: every plugin receives every
// plugin's, with an entry per node pool each, 600 map entries at 100 pools.
//
// The encoding is kept for one Input, not for a set: a stage's Input cannot
// change while its plugins run (they read it concurrently), but a set may
// be carried to the next stage, and nothing but this rule would keep a later
// change to it from travelling stale. Input, set and values are kept (not
// only their addresses) so that no other can take their address while here.
var sharedSet struct {
	mu     sync.Mutex
	in     *stage.Input
	set    *construct.Set
	values map[string]stage.PluginValues
	// fields are the values and the set as the StageRequest's fields: the
	// values' map entries (field values, in key order), then the
	// constructs field (from setAt on), each with its tag, length and
	// encoding.
	fields []byte
	setAt  int
	// id names the set of this encoding (StageRequest.constructs_id), and
	// carried are the plugin processes (their connections) that a request
	// carrying the whole set was made for. A process that serves several
	// plugins gets the set once: the requests to its other plugins name it.
	// Sending it to each put ten copies of about a MB through one
	// connection at 100 node pools, and no plugin could start before its
	// copy was through.
	id      []byte
	carried map[any]bool
}

// requestFor is InputToPB for sending to a plugin of the process behind
// conn (nil: a process that does not take constructs_id): the construct set
// and the values are not converted into the request but carried in its
// unknown fields, already encoded as fields values (3) and constructs (5).
// Protobuf writes unknown fields as they are after the known ones, and the
// order of fields on the wire is free, so the plugin decodes exactly the
// request InputToPB would have made. The first request of an Input for a
// process that takes constructs_id carries the set and its id; every
// other names it by its id alone.
func requestFor(in *stage.Input, hostServiceID uint32, conn any) (*pb.StageRequest, error) {
	if in == nil || in.Constructs == nil && len(in.Values) == 0 {
		return InputToPB(in, hostServiceID), nil
	}
	fields, id, err := sharedFields(in, conn)
	if err != nil {
		return nil, err
	}
	bare := *in
	bare.Constructs, bare.Values = nil, nil
	req := InputToPB(&bare, hostServiceID)
	req.ConstructsId = id
	req.ProtoReflect().SetUnknown(fields)
	return req, nil
}

// sharedFields returns in's values and construct set encoded as the fields
// of a StageRequest, encoding them only for the first plugin in is sent to.
// For a request to the process behind conn, the set is left out when a
// request for that process already carries it, and id names it.
func sharedFields(in *stage.Input, conn any) (fields, id []byte, err error) {
	sharedSet.mu.Lock()
	defer sharedSet.mu.Unlock()
	if sharedSet.in != in || sharedSet.set != in.Constructs || !sameMap(sharedSet.values, in.Values) {
		if err := encodeShared(in); err != nil {
			return nil, nil, err
		}
	}
	if conn == nil || sharedSet.id == nil {
		return sharedSet.fields, nil, nil
	}
	if sharedSet.carried[conn] {
		return sharedSet.fields[:sharedSet.setAt], sharedSet.id, nil
	}
	sharedSet.carried[conn] = true
	return sharedSet.fields, sharedSet.id, nil
}

// encodeShared encodes in's values and set into sharedSet, with a new id.
func encodeShared(in *stage.Input) error {
	// In key order, so that the same values are the same bytes in every
	// stage: the plugin side compares bytes to reuse what it decoded.
	fields, err := proto.MarshalOptions{Deterministic: true}.Marshal(&pb.StageRequest{Values: valuesToPB(in.Values)})
	if err != nil {
		return err
	}
	setAt := len(fields)
	var id []byte
	if in.Constructs != nil {
		b, err := proto.Marshal(SetToPB(in.Constructs))
		if err != nil {
			return err
		}
		fields = protowire.AppendTag(fields, constructsField, protowire.BytesType)
		fields = protowire.AppendBytes(fields, b)
		id = make([]byte, 16)
		if _, err := rand.Read(id); err != nil {
			return err
		}
	}
	sharedSet.in, sharedSet.set, sharedSet.values = in, in.Constructs, in.Values
	sharedSet.fields, sharedSet.setAt, sharedSet.id, sharedSet.carried = fields, setAt, id, map[any]bool{}
	return nil
}

// sameMap reports whether a and b are the same map, not merely equal ones.
func sameMap[K comparable, V any](a, b map[K]V) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// constructsField and valuesField are the numbers of StageRequest's
// constructs and values fields.
var (
	constructsField = (&pb.StageRequest{}).ProtoReflect().Descriptor().Fields().ByName("constructs").Number()
	valuesField     = (&pb.StageRequest{}).ProtoReflect().Descriptor().Fields().ByName("values").Number()
)

// sendCodec is gRPC's proto codec on the sending side of sharedSet. A
// StageRequest carries the values and the set in its unknown fields, which
// protobuf writes last and as they are; the codec hands gRPC the request's
// other fields and the shared bytes as two buffers, instead of copying them
// into a buffer of the request's size for each plugin: ten copies of about a
// MB, and as many of the buffers cleared for reuse, at 100 node pools.
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
	// The request is the caller's own, made for this one call (requestFor),
	// so taking its unknown fields off while it is encoded races nothing.
	m.SetUnknown(nil)
	data, err := c.CodecV2.Marshal(req)
	m.SetUnknown(field)
	if err != nil {
		return nil, err
	}
	return append(data, mem.SliceBuffer(field)), nil
}
