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
	// The request is read where gRPC received it, in its frames' buffers:
	// copying a MB into one buffer for each plugin, to find the set equal to
	// the last, cost more than comparing it.
	msg := newMessage(data)
	start, value, end, ok := msg.constructsField()
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	rest := msg.appendRange(make([]byte, 0, msg.size-(end-start)), 0, start)
	rest = msg.appendRange(rest, end, msg.size-end)
	if err := proto.Unmarshal(rest, req); err != nil {
		return err
	}
	decoded, err := decodeSet(msg, value, end-value)
	if err != nil {
		return err
	}
	req.Constructs = decoded
	return nil
}

// message is a message as gRPC received it: the bytes of its frames, in
// order, in the buffers they arrived in.
type message struct {
	bufs [][]byte
	size int
}

func newMessage(data mem.BufferSlice) message {
	m := message{bufs: make([][]byte, 0, len(data))}
	for _, b := range data {
		if d := b.ReadOnlyData(); len(d) > 0 {
			m.bufs = append(m.bufs, d)
			m.size += len(d)
		}
	}
	return m
}

// appendRange appends the message's bytes [off, off+n) to dst.
func (m message) appendRange(dst []byte, off, n int) []byte {
	for _, b := range m.bufs {
		if n == 0 {
			break
		}
		if off >= len(b) {
			off -= len(b)
			continue
		}
		k := min(n, len(b)-off)
		dst = append(dst, b[off:off+k]...)
		n -= k
		off = 0
	}
	return dst
}

// equal reports whether the message's bytes from off on begin with want.
func (m message) equal(off int, want []byte) bool {
	if off+len(want) > m.size {
		return false
	}
	for _, b := range m.bufs {
		if len(want) == 0 {
			break
		}
		if off >= len(b) {
			off -= len(b)
			continue
		}
		k := min(len(want), len(b)-off)
		if !bytes.Equal(b[off:off+k], want[:k]) {
			return false
		}
		want = want[k:]
		off = 0
	}
	return len(want) == 0
}

// constructsField finds a request's constructs field: where it starts, where
// its value starts and where it ends. It answers only when the field is
// there once, as a length-delimited field, and every other field can be
// stepped over by its length: protobuf merges a field that is there more
// than once, and anything else is left to the ordinary decoding, which
// also says what is wrong with a broken request.
func (m message) constructsField() (start, value, end int, ok bool) {
	start = -1
	// A tag and a varint, of 10 bytes each at most.
	var head [20]byte
	for off := 0; off < m.size; {
		h := m.appendRange(head[:0], off, min(len(head), m.size-off))
		num, typ, n := protowire.ConsumeTag(h)
		if n < 0 {
			return 0, 0, 0, false
		}
		at, size := off+n, 0
		switch typ {
		case protowire.VarintType:
			if size = protowire.ConsumeFieldValue(num, typ, h[n:]); size < 0 {
				return 0, 0, 0, false
			}
		case protowire.Fixed32Type:
			size = 4
		case protowire.Fixed64Type:
			size = 8
		case protowire.BytesType:
			l, k := protowire.ConsumeVarint(h[n:])
			if k < 0 || l > uint64(m.size) {
				return 0, 0, 0, false
			}
			at, size = at+k, int(l)
		default:
			return 0, 0, 0, false
		}
		next := at + size
		if next > m.size {
			return 0, 0, 0, false
		}
		if num == constructsField {
			if start >= 0 || typ != protowire.BytesType {
				return 0, 0, 0, false
			}
			start, value, end = off, at, next
		}
		off = next
	}
	return start, value, end, start >= 0
}

// decodeSet decodes the construct set in the message's bytes [off, off+n),
// or returns the one decoded from the same bytes last. The bytes are
// copied: gRPC reuses the buffers they are in.
func decodeSet(msg message, off, n int) (*pb.ConstructSet, error) {
	received.mu.Lock()
	defer received.mu.Unlock()
	if received.set != nil && len(received.field) == n && msg.equal(off, received.field) {
		return received.set, nil
	}
	field := msg.appendRange(make([]byte, 0, n), off, n)
	set := &pb.ConstructSet{}
	if err := proto.Unmarshal(field, set); err != nil {
		return nil, err
	}
	received.field = field
	received.set = set
	return set, nil
}
