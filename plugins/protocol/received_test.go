package protocol

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kube-aws/kube-aws/core/stage"
	pb "github.com/kube-aws/kube-aws/plugins/proto/v1"
)

func receive(t *testing.T, wire []byte) (*pb.StageRequest, error) {
	t.Helper()
	return receiveIn(t, wire, len(wire))
}

// receiveIn decodes wire as it arrives in buffers of chunk bytes (the last
// shorter), as gRPC hands over a request in its frames.
func receiveIn(t *testing.T, wire []byte, chunk int) (*pb.StageRequest, error) {
	t.Helper()
	codec := requestCodec{encoding.GetCodecV2("proto")}
	var data mem.BufferSlice
	for b := wire; len(b) > 0; {
		k := min(max(chunk, 1), len(b))
		data = append(data, mem.SliceBuffer(append([]byte(nil), b[:k]...)))
		b = b[k:]
	}
	var req pb.StageRequest
	err := codec.Unmarshal(data, &req)
	return &req, err
}

// chunkings are the buffer sizes a request is received in by the tests: one
// buffer, gRPC's frames, and sizes that split every tag and length.
var chunkings = []int{1 << 30, 16 << 10, 7, 3, 1}

// Whatever a request holds, the plugin side decodes what gRPC's own codec
// decodes, and plugins that receive the same set share its decoding.
func TestRequestCodecDecodesWhatProtoDecodes(t *testing.T) {
	sent := func(in *stage.Input) []byte {
		req, err := requestFor(in, 7, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	full := sent(fullInput())
	noSet := fullInput()
	noSet.Constructs = nil
	changed := fullInput()
	changed.Constructs.Stacks[0].Name = "changed"
	changedValues := fullInput()
	changedValues.Constructs = nil
	changedValues.Values["dex"].NodePools["pool-a"] = json.RawMessage(`{"x":2}`)
	// Values' entries apart, another field between them: protobuf merges
	// the entries into one map.
	apart := append(append(mustMarshal(t, &pb.StageRequest{Values: map[string]*pb.PluginValues{"a": {ValuesJson: []byte(`{"a":1}`)}}}),
		mustMarshal(t, &pb.StageRequest{ConfigJson: []byte(`{}`)})...),
		mustMarshal(t, &pb.StageRequest{Values: map[string]*pb.PluginValues{"b": {ValuesJson: []byte(`{"b":1}`)}}})...)
	set := protowire.AppendTag(nil, constructsField, protowire.BytesType)
	twice := append(append([]byte(nil), full...), protowire.AppendBytes(set, mustMarshal(t, &pb.ConstructSet{Stacks: []*pb.Stack{{Name: "merged"}}}))...)

	for _, tc := range []struct {
		name     string
		wire     []byte
		sharedBy []byte // a request whose set this one's decoding is shared with
	}{
		{name: "every field", wire: full},
		{name: "the same bytes again", wire: full, sharedBy: full},
		{name: "no construct set", wire: sent(noSet)},
		{name: "the same values again, no construct set", wire: sent(noSet), sharedBy: sent(noSet)},
		{name: "the values of a request with a set, without one", wire: sent(noSet), sharedBy: full},
		{name: "changed values", wire: sent(changedValues)},
		{name: "the values' entries apart", wire: apart},
		{name: "a changed set", wire: sent(changed)},
		{name: "the set first on the wire", wire: append(append([]byte(nil), full[len(full)-len(mustField(t, full)):]...), full[:len(full)-len(mustField(t, full))]...), sharedBy: full},
		{name: "the set there twice, which protobuf merges", wire: twice},
		{name: "nothing", wire: nil},
		{name: "the set field as a number, an unknown field to protobuf", wire: protowire.AppendVarint(protowire.AppendTag(nil, constructsField, protowire.VarintType), 3)},
	} {
		for _, chunk := range chunkings {
			t.Run(fmt.Sprintf("%s/in %d-byte buffers", tc.name, min(chunk, len(tc.wire))), func(t *testing.T) {
				var want pb.StageRequest
				if err := proto.Unmarshal(tc.wire, &want); err != nil {
					t.Fatal(err)
				}
				var first *pb.StageRequest
				if tc.sharedBy != nil {
					var err error
					if first, err = receive(t, tc.sharedBy); err != nil {
						t.Fatal(err)
					}
				}
				got, err := receiveIn(t, tc.wire, chunk)
				if err != nil {
					t.Fatal(err)
				}
				if !proto.Equal(got, &want) {
					t.Fatalf("decoded\n%v\nwant\n%v", got, &want)
				}
				gotIn, _ := InputFromPB(got)
				wantIn, _ := InputFromPB(&want)
				if !reflect.DeepEqual(gotIn, wantIn) {
					gj, _ := json.Marshal(gotIn)
					wj, _ := json.Marshal(wantIn)
					t.Errorf("input %s\nwant %s", gj, wj)
				}
				if tc.sharedBy != nil {
					if got.Constructs != nil && first.Constructs != got.Constructs {
						t.Error("the same set was decoded again")
					}
					if !sameMap(first.Values, got.Values) {
						t.Error("the same values were decoded again")
					}
				}
			})
		}
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustField returns the constructs field as requestFor puts it, last.
func mustField(t *testing.T, wire []byte) []byte {
	t.Helper()
	f, ok := newMessage(mem.BufferSlice{mem.SliceBuffer(wire)}).sharedFields()
	if !ok || !f.set.found() || f.set.end != len(wire) {
		t.Fatal("no constructs field last")
	}
	return wire[f.set.start:f.set.end]
}

// Bad bytes are refused as gRPC's codec refuses them, and never panic.
func TestRequestCodecRefusesWhatProtoRefuses(t *testing.T) {
	req, err := requestFor(fullInput(), 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	full := mustMarshal(t, req)
	field := mustField(t, full)
	for _, tc := range []struct {
		name string
		wire []byte
	}{
		{"cut in the set", full[:len(full)-len(field)/2]},
		{"garbage in the set", protowire.AppendBytes(append(append([]byte(nil), full[:len(full)-len(field)]...), field[:len(protowire.AppendTag(nil, constructsField, protowire.BytesType))]...), []byte{0xff, 0xff, 0xff})},
		{"a bad tag", []byte{0x80}},
	} {
		for _, chunk := range chunkings {
			t.Run(fmt.Sprintf("%s/in %d-byte buffers", tc.name, min(chunk, len(tc.wire))), func(t *testing.T) {
				want := proto.Unmarshal(tc.wire, &pb.StageRequest{})
				if want == nil {
					t.Fatal("proto.Unmarshal takes the case")
				}
				_, got := receiveIn(t, tc.wire, chunk)
				if (got == nil) != (want == nil) {
					t.Errorf("err = %v, proto.Unmarshal's %v", got, want)
				}
			})
		}
	}
}

// The plugins of a process receive their requests at once; each gets an
// Input of its own, set and values, that appending to does not share.
func TestRequestsSharingASetGetInputsOfTheirOwn(t *testing.T) {
	in := fullInput()
	in.Constructs.Stacks[0].Name = "concurrent"
	req, err := requestFor(in, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	wire := mustMarshal(t, req)
	inputs := make([]*stage.Input, 10)
	var wg sync.WaitGroup
	for i := range inputs {
		wg.Go(func() {
			got, err := receive(t, wire)
			if err != nil {
				t.Error(err)
				return
			}
			inputs[i], _ = InputFromPB(got)
			st := &inputs[i].Constructs.Stacks[0]
			for k, v := range st.Resources {
				st.Resources[k] = append(v, fmt.Sprint(i)...)
			}
			pv := inputs[i].Values["dex"]
			pv.NodePools[fmt.Sprint(i)] = json.RawMessage(`{}`)
			pv.NodePools["pool-a"] = append(pv.NodePools["pool-a"], fmt.Sprint(i)...)
			inputs[i].Values["dex"] = stage.PluginValues{Values: append(pv.Values, fmt.Sprint(i)...), NodePools: pv.NodePools}
			for _, a := range inputs[i].Constructs.Artifacts {
				for _, s := range a.Sources {
					if s.Members != nil {
						s.Members[fmt.Sprint(i)] = "x"
					}
				}
			}
		})
	}
	wg.Wait()
	want, _ := InputFromPB(InputToPB(in, 7))
	for i, got := range inputs {
		pv, wv := got.Values["dex"], want.Values["dex"]
		if w := string(wv.Values) + fmt.Sprint(i); string(pv.Values) != w {
			t.Errorf("plugin %d's values = %s, want %s", i, pv.Values, w)
		}
		if w := string(wv.NodePools["pool-a"]) + fmt.Sprint(i); string(pv.NodePools["pool-a"]) != w || len(pv.NodePools) != len(wv.NodePools)+1 {
			t.Errorf("plugin %d's pools = %s, want pool-a %s and one pool more than %d", i, pv.NodePools, w, len(wv.NodePools))
		}
		for k, v := range got.Constructs.Stacks[0].Resources {
			if w := string(want.Constructs.Stacks[0].Resources[k]) + fmt.Sprint(i); string(v) != w {
				t.Errorf("plugin %d's resource %s = %s, want %s", i, k, v, w)
			}
		}
	}
}
