package protocol

import (
	"bytes"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the codec requestCodec wraps
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/kube-aws/kube-aws/plugins/proto/v1"
)

// requestCodec is the plugin side's counterpart of sharedSet: a process that
// serves several plugins (the built-ins' process serves ten) receives the
// same construct set, byte for byte, in the request to each of them, and
// decodes it once. Decoding it was most of what receiving a request cost: at
// 100 node pools its stacks come to 900 kB, and the built-ins' process spent
// more CPU decoding them ten times over than any built-in spent rendering.
//
// Every other message, and a request whose constructs field is not there
// exactly once, is decoded by gRPC's own codec as before.
type requestCodec struct{ encoding.CodecV2 }

// serverCodec is the codec of every gRPC server of the protocol.
func serverCodec() grpc.ServerOption {
	return grpc.ForceServerCodecV2(requestCodec{encoding.GetCodecV2("proto")})
}

// received is the construct set last decoded, with the bytes it was decoded
// from. Requests that carry the same bytes share the decoded set: every
// reader of a request only reads it (InputFromPB converts it into a
// stage.Input of the plugin's own).
var received struct {
	mu    sync.Mutex
	field []byte
	set   *pb.ConstructSet
}

func (c requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	req, ok := v.(*pb.StageRequest)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	wire := buf.ReadOnlyData()
	set, rest, ok := splitConstructs(wire)
	if !ok {
		return proto.Unmarshal(wire, req)
	}
	if err := proto.Unmarshal(rest, req); err != nil {
		return err
	}
	decoded, err := decodeSet(set)
	if err != nil {
		return err
	}
	req.Constructs = decoded
	return nil
}

// splitConstructs returns the value of a request's constructs field and the
// request's other fields, when the field is there once. Protobuf merges a
// field that is there more than once; such a request is left to the
// ordinary decoding.
func splitConstructs(wire []byte) (set, rest []byte, ok bool) {
	start, end := -1, -1
	for b, off := wire, 0; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, nil, false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, nil, false
		}
		if num == constructsField {
			if start >= 0 || typ != protowire.BytesType {
				return nil, nil, false
			}
			v, _ := protowire.ConsumeBytes(b[n:])
			set = v
			start, end = off, off+n+m
		}
		b, off = b[n+m:], off+n+m
	}
	if start < 0 {
		return nil, nil, false
	}
	rest = make([]byte, 0, len(wire)-(end-start))
	rest = append(append(rest, wire[:start]...), wire[end:]...)
	return set, rest, true
}

// decodeSet decodes a construct set, or returns the one decoded from the
// same bytes last. The bytes are copied: gRPC reuses the buffer they are in.
func decodeSet(field []byte) (*pb.ConstructSet, error) {
	received.mu.Lock()
	defer received.mu.Unlock()
	if received.set != nil && bytes.Equal(field, received.field) {
		return received.set, nil
	}
	set := &pb.ConstructSet{}
	if err := proto.Unmarshal(field, set); err != nil {
		return nil, err
	}
	received.field = bytes.Clone(field)
	received.set = set
	return set, nil
}
