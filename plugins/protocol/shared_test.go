package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/proto"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/stage"
	pb "github.com/kube-aws/kube-aws/plugins/proto/v1"
)

// A request whose construct set travels pre-encoded reaches the plugin as
// the request InputToPB makes, whatever the input holds.
func TestRequestForIsInputToPB(t *testing.T) {
	full := fullInput()
	noSet := fullInput()
	noSet.Constructs = nil
	emptySet := fullInput()
	emptySet.Constructs = &construct.Set{}
	noValues := fullInput()
	noValues.Values = nil
	neither := fullInput()
	neither.Constructs, neither.Values = nil, nil
	for _, tc := range []struct {
		name string
		in   *stage.Input
	}{
		{"every field", full},
		{"no construct set", noSet},
		{"an empty construct set", emptySet},
		{"no values", noValues},
		{"neither values nor a set", neither},
		{"nil input", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := requestFor(tc.in, 7, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Twice: the second takes the set's kept encoding.
			for range 2 {
				got := wire(t, req)
				want := wire(t, InputToPB(tc.in, 7))
				if !proto.Equal(got, want) {
					t.Fatalf("the plugin receives\n%v\nwant\n%v", got, want)
				}
				if len(got.ProtoReflect().GetUnknown()) != 0 {
					t.Errorf("unknown fields reached the plugin: %x", got.ProtoReflect().GetUnknown())
				}
				gotIn, id := InputFromPB(got)
				wantIn, _ := InputFromPB(want)
				if id != 7 || !reflect.DeepEqual(gotIn, wantIn) {
					gj, _ := json.Marshal(gotIn)
					wj, _ := json.Marshal(wantIn)
					t.Errorf("input %s (host service %d)\nwant %s", gj, id, wj)
				}
				if req, err = requestFor(tc.in, 7, nil); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// The encoding kept is the Input's: another Input is encoded afresh, even
// with the same set changed in between (a set carried to the next stage),
// and the same Input again is not encoded again.
func TestSharedFieldsAreKeptPerInput(t *testing.T) {
	a := &stage.Input{Stage: stage.Render, Constructs: fullSet()}
	fa, _, err := sharedFields(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := sharedFields(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if &again[0] != &fa[0] {
		t.Error("the same input was encoded again")
	}
	a.Constructs.Stacks[0].Name = "other"
	b := &stage.Input{Stage: stage.Deploy, Constructs: a.Constructs}
	fb, _, err := sharedFields(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(fa) == string(fb) {
		t.Fatal("the next stage's input took the encoding of the set before it changed")
	}
	var req pb.StageRequest
	if err := proto.Unmarshal(fb, &req); err != nil || req.GetConstructs().GetStacks()[0].GetName() != "other" {
		t.Errorf("field decodes to %v (%v)", req.GetConstructs(), err)
	}
}

// The values are encoded once per Input too, in key order: equal values are
// equal bytes, whatever order a map gives its keys in, so the plugin side
// can tell them the same.
func TestSharedValuesAreKeptPerInputInKeyOrder(t *testing.T) {
	values := func() map[string]stage.PluginValues {
		m := map[string]stage.PluginValues{}
		for _, p := range []string{"iam", "apiserver", "cloudformation", "userdata", "deploy", "helm"} {
			pools := map[string]json.RawMessage{}
			for i := range 20 {
				pools[fmt.Sprintf("pool-%d", i)] = json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))
			}
			m[p] = stage.PluginValues{Values: json.RawMessage(`{"plugin":"` + p + `"}`), NodePools: pools}
		}
		return m
	}
	a := &stage.Input{Stage: stage.Initialise, Values: values()}
	fa, _, err := sharedFields(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again, _, _ := sharedFields(a, nil); &again[0] != &fa[0] {
		t.Error("the same input was encoded again")
	}
	for range 5 {
		b := &stage.Input{Stage: stage.Initialise, Values: values()}
		fb, _, err := sharedFields(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fa, fb) {
			t.Fatal("equal values were encoded as different bytes")
		}
	}
	// Values changed under the same Input are not sent stale.
	a.Values = values()
	a.Values["iam"].NodePools["pool-3"] = json.RawMessage(`{"n":"changed"}`)
	fc, _, err := sharedFields(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	var req pb.StageRequest
	if err := proto.Unmarshal(fc, &req); err != nil || string(req.GetValues()["iam"].GetNodePoolsJson()["pool-3"]) != `{"n":"changed"}` {
		t.Errorf("values decode to %v (%v)", req.GetValues()["iam"], err)
	}
}

// BenchmarkStageRequests sends one stage's input to ten plugins, as the
// built-ins get it: shared encodes the construct set once, perPlugin (how
// it was sent before) once per plugin.
func BenchmarkStageRequests(b *testing.B) {
	in := fullInput()
	set := &construct.Set{}
	for i := range 100 {
		st := fullSet().Stacks[0]
		st.Name = fmt.Sprintf("nodepool-%d", i)
		set.Stacks = append(set.Stacks, st)
	}
	in.Constructs = set
	send := func(b *testing.B, req *pb.StageRequest) {
		if _, err := proto.Marshal(req); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("shared", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			stageIn := *in // a new stage's input
			for range 10 {
				req, err := requestFor(&stageIn, 7, nil)
				if err != nil {
					b.Fatal(err)
				}
				send(b, req)
			}
		}
	})
	b.Run("perPlugin", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for range 10 {
				send(b, InputToPB(in, 7))
			}
		}
	})
}

// What the client codec hands gRPC is what proto.Marshal writes, and a
// request's construct set goes out from the shared encoding, not a copy.
func TestSendCodecWritesWhatProtoWrites(t *testing.T) {
	codec := sendCodec{encoding.GetCodecV2("proto")}
	withSet, err := requestFor(fullInput(), 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	noSet := fullInput()
	noSet.Constructs = nil
	withoutSet, err := requestFor(noSet, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	neither := fullInput()
	neither.Constructs, neither.Values = nil, nil
	bare, err := requestFor(neither, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		msg    proto.Message
		shared []byte // the bytes the last buffer must be, not a copy of
	}{
		{"a request with values and a set", withSet, withSet.ProtoReflect().GetUnknown()},
		{"a request with values, without a set", withoutSet, withoutSet.ProtoReflect().GetUnknown()},
		{"a request with neither", bare, nil},
		{"another message", &pb.Event{Kind: "log", Message: "hello"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := mustMarshal(t, tc.msg)
			data, err := codec.Marshal(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if got := data.Materialize(); !bytes.Equal(got, want) {
				t.Fatalf("wrote %d bytes, proto.Marshal %d, not the same", len(got), len(want))
			}
			if again := mustMarshal(t, tc.msg); !bytes.Equal(again, want) {
				t.Error("the message is not as it was before it was sent")
			}
			if tc.shared != nil {
				last := data[len(data)-1].ReadOnlyData()
				if len(last) != len(tc.shared) || &last[0] != &tc.shared[0] {
					t.Error("the shared fields were copied, not sent from their shared encoding")
				}
			}
		})
	}
}
