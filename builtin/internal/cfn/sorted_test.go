package cfn

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v4/cloudformation/ec2"
	"github.com/awslabs/goformation/v4/cloudformation/tags"

	"github.com/kube-aws/kube-aws/core/construct"
)

// viaTree is what a template value used to go through: decoded into plain
// data and encoded again. appendIndented must give the same bytes.
func viaTree(t testing.TB, src []byte, depth int) string {
	t.Helper()
	v, err := Decode(src)
	if err != nil {
		t.Fatalf("decoding %q: %v", src, err)
	}
	b, err := Marshal(v, true)
	if err != nil {
		t.Fatalf("encoding %q: %v", src, err)
	}
	out := strings.TrimSuffix(string(b), "\n")
	// Marshal indents from depth 0; nested values carry their depth's indent
	// after every newline.
	return strings.ReplaceAll(out, "\n", "\n"+strings.Repeat(indentUnit, depth))
}

var sortedCases = []struct{ name, src string }{
	{"scalar string", `"x"`},
	{"number kept as written", `123456789012345678901234567890`},
	{"numbers", `[1.0, -0, 1e5, 1E+05, 0.000001, -12.50]`},
	{"literals", `[true,false,null]`},
	{"empty containers", `{"a":{},"b":[],"c":[{}],"d":{"e":[]}}`},
	{"unsorted keys", `{"Type":"AWS::EC2::VPC","Properties":{"CidrBlock":"10.0.0.0/16","EnableDnsSupport":true},"DependsOn":["B","A"]}`},
	{"already sorted", `{"a":1,"b":{"c":2,"d":3}}`},
	{"duplicate keys keep the last", `{"b":1,"a":2,"b":3,"a":{"x":1},"c":0}`},
	{"duplicate keys sorted input", `{"a":1,"a":2}`},
	{"a key and its escaped spelling are one key", `{"a":1,"\u0061":2}`},
	{"whitespace everywhere", " \n{ \"b\" :\t[ 1 , 2 ] ,\r\n \"a\" : { } } \n"},
	{"html characters stay", `{"script":"a && b <c> d","\u003ckey\u003e":"\u0026"}`},
	{"escapes", `["line\nbreak\ttab","quote\" back\\slash","\/slash","\u00e9\u4e2d","\b\f\u0001\u001f","\u007f"]`},
	{"escapes as encoding/json writes them", `["#!/bin/bash\necho \"$x\" \\\r\t\b\f\u0001\u001f\u0000", "\u2028\u2029"]`},
	{"escapes it writes otherwise", `["\u001F", "\u0008", "\u0009", "\u000A", "\u000c", "\u000d", "\u007f", "\u0041", "\u00e9", "\u2028\u202A", "\ud83d\ude00"]`},
	{"line separators", `["\u2028 and \u2029", "raw ` + "\u2028\u2029" + `"]`},
	{"non-ASCII", `{"é":"ü","z":"中文","a":"😀"}`},
	{"invalid UTF-8 and lone surrogates", "[\"bad \xff\xfe byte\", \"\\ud800 lone\", \"\\udc00\"]"},
	{"invalid UTF-8 key", "{\"\xff\":1,\"a\":2}"},
	{"non-ASCII key order", `{"ü":1,"u":2,"😀":3,"\uffff":4,"Z":5}`},
	{"many members", manyMembers(40)},
	{"intrinsics", `{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":s3:::",{"Fn::GetAtt":["B","Arn"]}]]}`},
}

func manyMembers(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := n; i > 0; i-- {
		if i < n {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%03d":{"z":%d,"y":[%d,{"b":1,"a":2}]}`, i, i, i)
	}
	b.WriteString("}")
	return b.String()
}

func TestAppendIndentedMatchesTree(t *testing.T) {
	for _, tc := range sortedCases {
		for _, depth := range []int{0, 2} {
			t.Run(fmt.Sprintf("%s/depth%d", tc.name, depth), func(t *testing.T) {
				if !json.Valid([]byte(tc.src)) {
					t.Fatalf("case is not valid JSON: %q", tc.src)
				}
				got := string(appendIndented(nil, []byte(tc.src), depth))
				if want := viaTree(t, []byte(tc.src), depth); got != want {
					t.Errorf("got\n%s\nwant\n%s", got, want)
				}
			})
		}
	}
}

func FuzzAppendIndented(f *testing.F) {
	for _, tc := range sortedCases {
		f.Add([]byte(tc.src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if !json.Valid(src) {
			return
		}
		if got, want := string(appendIndented(nil, src, 0)), viaTree(t, src, 0); got != want {
			t.Errorf("input %q\ngot\n%s\nwant\n%s", src, got, want)
		}
	})
}

// templateViaTree is how a template used to be written: every section's
// values decoded into one map and the map encoded.
func templateViaTree(t *testing.T, s construct.Stack, metadata map[string]any) string {
	t.Helper()
	tpl := map[string]any{"AWSTemplateFormatVersion": templateFormatVer}
	if s.Description != "" {
		tpl["Description"] = s.Description
	}
	if len(metadata) > 0 {
		tpl["Metadata"] = metadata
	}
	for name, m := range map[string]map[string]json.RawMessage{
		"Parameters": s.Parameters, "Conditions": s.Conditions, "Mappings": s.Mappings,
		"Resources": s.Resources, "Outputs": s.Outputs,
	} {
		if len(m) == 0 {
			continue
		}
		sec := map[string]any{}
		for id, raw := range m {
			v, err := Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			sec[id] = v
		}
		tpl[name] = sec
	}
	b, err := Marshal(tpl, true)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTemplate(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	full := construct.Stack{
		Name:        "nodepool-a",
		Description: "a <pool> & its \"things\"\n",
		Parameters:  map[string]json.RawMessage{"B": raw(`{"Type":"String"}`), "A": raw(`{"Type":"Number","Default":1.50}`)},
		Conditions:  map[string]json.RawMessage{"C": raw(`{"Fn::Equals":[{"Ref":"A"},"1"]}`)},
		Mappings:    map[string]json.RawMessage{"M": raw(`{"us-east-1":{"ami":"ami-1"}}`)},
		Resources: map[string]json.RawMessage{
			"Z":      raw(`{"Type":"AWS::SQS::Queue","Properties":{"QueueName":"q"}}`),
			"A1":     raw(`{"Properties":{"Tags":[{"Value":"v","Key":"k"}]},"Type":"AWS::EC2::VPC","DependsOn":"Z"}`),
			"Empty":  raw(`{"Type":"AWS::CloudFormation::WaitConditionHandle","Properties":{}}`),
			"Spaced": raw(" {\n \"Type\" : \"AWS::SNS::Topic\" }\n"),
		},
		Outputs: map[string]json.RawMessage{"O": raw(`{"Value":{"Ref":"Z"},"Export":{"Name":{"Fn::Sub":"${AWS::StackName}-O"}}}`)},
	}
	meta := map[string]any{"KubeAws": map[string]any{"ParameterFiles": map[string]any{"UserDataKey": "userdata/a.yaml"}}}
	for _, tc := range []struct {
		name string
		s    construct.Stack
		meta map[string]any
	}{
		{"every section", full, meta},
		{"no metadata", full, nil},
		{"resources only", construct.Stack{Name: "x", Resources: full.Resources}, nil},
		{"nothing", construct.Stack{Name: "x"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Template(tc.s, tc.meta)
			if err != nil {
				t.Fatal(err)
			}
			if want := templateViaTree(t, tc.s, tc.meta); string(got) != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestTemplateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    construct.Stack
		want string
	}{
		{"invalid resource JSON", construct.Stack{Resources: map[string]json.RawMessage{"R": json.RawMessage(`{"Type":`)}}, "Resources R: invalid JSON"},
		{"trailing data", construct.Stack{Outputs: map[string]json.RawMessage{"O": json.RawMessage(`{} {}`)}}, "Outputs O: invalid JSON"},
		{"resource not an object", construct.Stack{Resources: map[string]json.RawMessage{"R": json.RawMessage(`["Type"]`)}}, "resource R is not a JSON object"},
		{"no Type", construct.Stack{Resources: map[string]json.RawMessage{"R": json.RawMessage(`{"Properties":{"Type":"x"}}`)}}, "resource R has no Type"},
		{"empty Type", construct.Stack{Resources: map[string]json.RawMessage{"R": json.RawMessage(`{"Type":""}`)}}, "resource R has no Type"},
		{"Type not a string", construct.Stack{Resources: map[string]json.RawMessage{"R": json.RawMessage(`{"Type":{"a":"b"}}`)}}, "resource R has no Type"},
		{"last of two Types empty", construct.Stack{Resources: map[string]json.RawMessage{"R": json.RawMessage(`{"Type":"AWS::SNS::Topic","Type":""}`)}}, "resource R has no Type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Template(tc.s, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// benchStack is a node pool's stack as the cloudformation plugin makes it:
// goformation resources through Raw, whose keys are in struct order.
func benchStack() construct.Stack {
	s := construct.Stack{
		Name:        "nodepool-bench",
		Description: "node pool bench",
		Parameters:  map[string]json.RawMessage{},
		Resources:   map[string]json.RawMessage{},
		Outputs:     map[string]json.RawMessage{},
	}
	for i := range 10 {
		s.Parameters[fmt.Sprintf("Param%d", i)] = MustRaw(map[string]any{"Type": "String", "Description": "a parameter filled by deploy"})
	}
	for i := range 20 {
		tagList := []tags.Tag{{Key: "Name", Value: "demo"}, {Key: "kubernetes.io/cluster/demo", Value: "owned"}}
		s.Resources[fmt.Sprintf("LaunchTemplate%d", i)] = MustRaw(&ec2.LaunchTemplate{LaunchTemplateData: &ec2.LaunchTemplate_LaunchTemplateData{
			UserData:         Base64(Sub("#!/bin/bash\nexec /opt/kube-aws-node --region ${AWS::Region} --key ${UserDataKey}\n")),
			SecurityGroupIds: []string{Ref("SecurityGroupId"), GetAtt("Other", "GroupId")},
			ImageId:          Ref("ImageId"),
			InstanceType:     "t3.medium",
			IamInstanceProfile: &ec2.LaunchTemplate_IamInstanceProfile{
				Arn: GetAtt("Profile", "Arn"),
			},
			MetadataOptions: &ec2.LaunchTemplate_MetadataOptions{HttpTokens: "required", HttpPutResponseHopLimit: 2},
			TagSpecifications: []ec2.LaunchTemplate_TagSpecification{
				{ResourceType: "instance", Tags: tagList},
				{ResourceType: "volume", Tags: tagList},
			},
		}})
		s.Outputs[fmt.Sprintf("Output%d", i)] = MustRaw(map[string]any{"Value": RefObj(fmt.Sprintf("LaunchTemplate%d", i)), "Description": "an output"})
	}
	return s
}

// BenchmarkTemplate writes one stack's template from its construct JSON;
// decode-encode is the way it was written before, for comparison.
func BenchmarkTemplate(b *testing.B) {
	s := benchStack()
	meta := map[string]any{"kube-aws": map[string]any{"parameterFiles": map[string]any{"UserDataKey": "userdata/nodepool-bench.yaml"}}}
	want := templateViaTree(&testing.T{}, s, meta)
	b.Run("sorted", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := Template(s, meta)
			if err != nil || len(out) != len(want) {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			templateViaTree(&testing.T{}, s, meta)
		}
	})
}
