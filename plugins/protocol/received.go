package protocol

import (
	"bytes"
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the codec requestCodec wraps
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/kube-aws/kube-aws/plugins/proto/v1"
)

// requestCodec is the plugin side's counterpart of sharedSet: a process that
// serves several plugins (the built-ins' process serves ten) receives the
// same construct set and the same values, byte for byte, in the request to
// each of them, and decodes them once. Decoding the set was most of what
// receiving a request cost: at 100 node pools its stacks come to 900 kB, and
// the built-ins' process spent more CPU decoding them ten times over than any
// built-in spent rendering; the values' 600 map entries came next.
//
// Every other message, and what of a request is not as sharedSet sends it
// (the constructs field there more than once, the values' entries apart),
// is decoded by gRPC's own codec as before.
type requestCodec struct{ encoding.CodecV2 }

// serverCodec is the codec of every gRPC server of the protocol.
func serverCodec() grpc.ServerOption {
	return grpc.ForceServerCodecV2(requestCodec{encoding.GetCodecV2("proto")})
}

// received are the construct set and the values last decoded. Requests that
// carry the same bytes share the decoded set or values: every reader of a
// request only reads it (InputFromPB converts it into a stage.Input of the
// plugin's own).
var received struct {
	set    lastDecoded[*pb.ConstructSet]
	values lastDecoded[map[string]*pb.PluginValues]
}

// lastDecoded is a value decoded from a field's bytes, kept with them.
type lastDecoded[T any] struct {
	mu    sync.Mutex
	field []byte
	v     T
	ok    bool
}

// get decodes the message's bytes [off, off+n) with decode, or returns what
// it decoded from the same bytes last. The bytes are copied: gRPC reuses the
// buffers they are in.
func (d *lastDecoded[T]) get(msg message, off, n int, decode func([]byte) (T, error)) (T, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ok && len(d.field) == n && msg.equal(off, d.field) {
		return d.v, nil
	}
	field := msg.appendRange(make([]byte, 0, n), off, n)
	v, err := decode(field)
	if err != nil {
		return v, err
	}
	d.field, d.v, d.ok = field, v, true
	return v, nil
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
	f, ok := msg.sharedFields()
	if !ok || !f.set.found() && !f.values.found() {
		return c.CodecV2.Unmarshal(data, v)
	}
	// The rest: the bytes around the shared fields, in their order.
	rest := make([]byte, 0, msg.size-f.set.len()-f.values.len())
	off := 0
	for _, r := range f.inOrder() {
		rest = msg.appendRange(rest, off, r.start-off)
		off = r.end
	}
	rest = msg.appendRange(rest, off, msg.size-off)
	if err := proto.Unmarshal(rest, req); err != nil {
		return err
	}
	if f.set.found() {
		decoded, err := decodeSet(msg, f.set.value, f.set.end-f.set.value)
		if err != nil {
			return err
		}
		req.Constructs = decoded
	}
	if f.values.found() {
		values, err := decodeValues(msg, f.values.start, f.values.len())
		if err != nil {
			return err
		}
		req.Values = values
	}
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

// span is where a field is in a message: from its tag (start) and its
// value (value) to its end; start < 0 when it is not there.
type span struct{ start, value, end int }

func (s span) found() bool { return s.start >= 0 }

func (s span) len() int {
	if !s.found() {
		return 0
	}
	return s.end - s.start
}

// shared are the places of a request's shared fields: the constructs field,
// and the run of the values' map entries (value is not used).
type shared struct{ set, values span }

// inOrder are the fields found, in the order they are in the message.
func (f shared) inOrder() []span {
	var out []span
	for _, s := range []span{f.set, f.values} {
		if s.found() {
			out = append(out, s)
		}
	}
	if len(out) == 2 && out[1].start < out[0].start {
		out[0], out[1] = out[1], out[0]
	}
	return out
}

// sharedFields finds a request's constructs field and its values' entries.
// It answers only when every field can be stepped over by its length:
// anything else is left to the ordinary decoding, which also says what is
// wrong with a broken request. The set is taken only when it is there once
// (protobuf merges a field that is there more than once), the values only
// when their entries are next to each other, as one run.
func (m message) sharedFields() (f shared, ok bool) {
	f = shared{set: span{start: -1}, values: span{start: -1}}
	setTwice, valuesApart := false, false
	// A tag and a varint, of 10 bytes each at most.
	var head [20]byte
	for off := 0; off < m.size; {
		h := m.appendRange(head[:0], off, min(len(head), m.size-off))
		num, typ, n := protowire.ConsumeTag(h)
		if n < 0 {
			return f, false
		}
		at, size := off+n, 0
		switch typ {
		case protowire.VarintType:
			if size = protowire.ConsumeFieldValue(num, typ, h[n:]); size < 0 {
				return f, false
			}
		case protowire.Fixed32Type:
			size = 4
		case protowire.Fixed64Type:
			size = 8
		case protowire.BytesType:
			l, k := protowire.ConsumeVarint(h[n:])
			if k < 0 || l > uint64(m.size) {
				return f, false
			}
			at, size = at+k, int(l)
		default:
			return f, false
		}
		next := at + size
		if next > m.size {
			return f, false
		}
		switch {
		case num == constructsField && typ == protowire.BytesType:
			setTwice = setTwice || f.set.found()
			f.set = span{off, at, next}
		case num == constructsField:
			// The field as a number: unknown to protobuf, kept as such.
			setTwice = true
		case num == valuesField && typ == protowire.BytesType:
			switch {
			case !f.values.found():
				f.values = span{off, at, next}
			case f.values.end == off:
				f.values.end = next
			default:
				valuesApart = true
			}
		case num == valuesField:
			valuesApart = true
		}
		off = next
	}
	if setTwice {
		f.set = span{start: -1}
	}
	if valuesApart {
		f.values = span{start: -1}
	}
	return f, true
}

// decodeSet decodes the construct set in the message's bytes [off, off+n),
// or returns the one decoded from the same bytes last.
func decodeSet(msg message, off, n int) (*pb.ConstructSet, error) {
	return received.set.get(msg, off, n, func(b []byte) (*pb.ConstructSet, error) {
		set := &pb.ConstructSet{}
		return set, proto.Unmarshal(b, set)
	})
}

// decodeValues decodes the values' map entries in the message's bytes
// [off, off+n), or returns the map decoded from the same bytes last.
func decodeValues(msg message, off, n int) (map[string]*pb.PluginValues, error) {
	return received.values.get(msg, off, n, func(b []byte) (map[string]*pb.PluginValues, error) {
		var req pb.StageRequest
		err := proto.Unmarshal(b, &req)
		return req.Values, err
	})
}

// setsByID are the construct sets requests carried with an id
// (StageRequest.constructs_id), for the requests that name them: kube-aws
// sends a stage's set once to a process that serves several plugins, and
// names it in the requests to the others. They are sent at once, so a
// request naming a set may be read before the one carrying it. A process
// runs one stage at a time: the set of the stage before is kept too, and
// no older one (at 100 node pools a decoded set is several MB).
var setsByID = setStore{keep: 2}

// setStore holds the last sets carried with an id, the newest last.
type setStore struct {
	mu   sync.Mutex
	keep int
	sets []*carriedSet
}

// carriedSet is a set by its id; ready is closed once it is in.
type carriedSet struct {
	id    string
	set   *pb.ConstructSet
	ready chan struct{}
}

// entry returns the set of id, making its place if it has none.
func (s *setStore) entry(id string) *carriedSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.sets {
		if c.id == id {
			return c
		}
	}
	c := &carriedSet{id: id, ready: make(chan struct{})}
	s.sets = append(s.sets, c)
	if len(s.sets) > s.keep {
		s.sets = s.sets[1:]
	}
	return c
}

// put keeps set under id, for the requests that name it.
func (s *setStore) put(id string, set *pb.ConstructSet) {
	c := s.entry(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.set == nil {
		c.set = set
		close(c.ready)
	}
}

// setWait bounds how long a request naming a set waits for the request
// that carries it: both are sent together, so only a broken host makes
// it wait at all long.
var setWait = time.Minute

// await returns the set of id once the request carrying it is read.
func (s *setStore) await(ctx context.Context, id string) (*pb.ConstructSet, error) {
	c := s.entry(id)
	t := time.NewTimer(setWait)
	defer t.Stop()
	select {
	case <-c.ready:
		return c.set, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	case <-t.C:
		return nil, status.Errorf(codes.FailedPrecondition, "the request names construct set %x, which no request to this process carried within %s: kube-aws sends it with one of the stage's requests", id, setWait)
	}
}

// resolveSet gives a request that names its set by id (and carries none)
// the set of the request that carries it, and keeps a carried set for the
// requests that name it.
func resolveSet(ctx context.Context, req *pb.StageRequest) error {
	id := string(req.GetConstructsId())
	if id == "" {
		return nil
	}
	if req.Constructs != nil {
		setsByID.put(id, req.Constructs)
		return nil
	}
	set, err := setsByID.await(ctx, id)
	if err != nil {
		return err
	}
	req.Constructs = set
	return nil
}
