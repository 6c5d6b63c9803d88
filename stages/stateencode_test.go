package stages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
)

// TestEncodeStateIsMarshalOfTheSameState: encodeState writes the document
// json.Marshal writes (decoded, they are equal), for every shape of state,
// and the same bytes every time.
func TestEncodeStateIsMarshalOfTheSameState(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	fullStack := construct.Stack{
		Name: "nodepool-<a&b>", Description: "a \"pool\" \u2028",
		DependsOn: []string{"network"},
		Resources: map[string]json.RawMessage{
			"Z":   raw(`{"Type":"AWS::EC2::LaunchTemplate","Properties":{"UserData":"#!/bin/sh\n<&>"}}`),
			"A<>": raw("{\n  \"Type\": \"AWS::IAM::Role\"\n}"),
		},
		Outputs:    map[string]json.RawMessage{"Out": raw(`{"Value":{"Ref":"Z"}}`)},
		Parameters: map[string]json.RawMessage{"P": raw(`{"Type":"String","Default":"é"}`)},
		Conditions: map[string]json.RawMessage{"C": raw(`{"Fn::Equals":["a",1.50]}`)},
		Mappings:   map[string]json.RawMessage{"M": raw(`{"k":{"v":[true,null]}}`)},
		Tags:       map[string]string{"kube-aws:pool": "a"},
		ParameterSources: map[string]names.Source{
			"VpcId": names.From("network", "VpcId"),
		},
		Plugin: "cloudformation", Renderer: "iam",
	}
	inputs := StateInputs{Config: "c0ffee", Plugins: map[string]string{"iam": "ab", "pki": "cd"}, Previous: "01"}
	cases := []struct {
		name string
		res  StageResult
	}{
		{"empty result", StageResult{}},
		{"no constructs", StageResult{Plugins: []string{"iam"}, Rendered: &stage.Rendered{Dir: "rendered"}}},
		{"constructs without stacks", StageResult{Constructs: &construct.Set{
			Units: []construct.Unit{{Name: "a.service", Content: "[Unit]\n"}},
		}}},
		{"stacks alone", StageResult{Constructs: &construct.Set{Stacks: []construct.Stack{{Name: "bare"}}}}},
		{"everything", StageResult{
			Plugins:      []string{"cloudformation", "iam"},
			Values:       map[string]stage.PluginValues{},
			Capabilities: map[string]string{"network": "flannel"},
			Constructs: &construct.Set{
				Stacks:  []construct.Stack{fullStack, {Name: "second", Resources: map[string]json.RawMessage{"R": raw(`{"Type":"T"}`)}}},
				Patches: []construct.Patch{{Stack: "second", LogicalID: "R", Merge: raw(`{"Properties":{"X":1}}`)}},
				Files:   []construct.File{{Path: "/etc/x", Content: "<x>"}},
			},
			Diagnostics: diag.List{diag.Warningf("careful").At("nodePools[0]")},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := State{Version: StateVersion, Stage: stage.Initialise, Inputs: inputs, Result: tc.res}
			want, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeState(st)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(got) {
				t.Fatalf("encodeState wrote invalid JSON:\n%s", got)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("encodeState differs from json.Marshal:\n got %s\nwant %s", got, want)
			}
			var back State
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("the state does not decode: %v", err)
			}
			for range 5 {
				again, _ := encodeState(st)
				if !bytes.Equal(again, got) {
					t.Fatalf("a second encoding differs:\n%s\n%s", again, got)
				}
			}
			if st.Result.Constructs != nil && tc.res.Constructs != st.Result.Constructs {
				t.Fatal("encodeState changed the state it was given")
			}
		})
	}
}

// BenchmarkEncodeState: the initialise state of 100 node pools' worth of
// stacks, by encodeState and by json.Marshal.
func BenchmarkEncodeState(b *testing.B) {
	body := json.RawMessage(`{"Type":"AWS::EC2::LaunchTemplate","Properties":{"LaunchTemplateData":{"UserData":{"Fn::Base64":{"Fn::Sub":"` +
		string(bytes.Repeat([]byte(`#!/bin/sh\nexec /opt/bin/kube-aws-node boot --role worker\n`), 40)) + `"}},"InstanceType":"m5.large"}}}`)
	set := &construct.Set{}
	for i := range 100 {
		s := construct.Stack{Name: fmt.Sprintf("nodepool-%d", i), Resources: map[string]json.RawMessage{}, Outputs: map[string]json.RawMessage{}}
		for j := range 8 {
			s.Resources[fmt.Sprintf("R%d", j)] = body
			s.Outputs[fmt.Sprintf("O%d", j)] = json.RawMessage(`{"Value":{"Ref":"R0"}}`)
		}
		set.Stacks = append(set.Stacks, s)
	}
	st := State{Version: StateVersion, Stage: stage.Initialise, Result: StageResult{Constructs: set}}
	for _, enc := range []struct {
		name string
		fn   func(State) ([]byte, error)
	}{{"encodeState", encodeState}, {"json.Marshal", func(s State) ([]byte, error) { return json.Marshal(s) }}} {
		b.Run(enc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := enc.fn(st); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
