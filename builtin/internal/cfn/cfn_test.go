package cfn

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v4/cloudformation"
	"github.com/awslabs/goformation/v4/cloudformation/autoscaling"
	"github.com/awslabs/goformation/v4/cloudformation/ec2"
	"github.com/awslabs/goformation/v4/cloudformation/iam"
)

func TestRawExpandsIntrinsics(t *testing.T) {
	// A control character Go's %q would write as \a, and HTML characters
	// encoding/json would escape by default.
	script := "#!/bin/bash\necho \a <&> ${AWS::Region}\n"
	lt := &ec2.LaunchTemplate{LaunchTemplateData: &ec2.LaunchTemplate_LaunchTemplateData{
		UserData:         Base64(Sub(script)),
		SecurityGroupIds: []string{Ref("SG"), GetAtt("Other", "GroupId")},
		ImageId:          Join("", "ami-", Ref("Suffix")),
	}}
	raw := MustRaw(lt)
	var got struct {
		Properties struct {
			LaunchTemplateData struct {
				UserData         map[string]map[string]string
				SecurityGroupIds []any
				ImageId          map[string][]any
			}
		}
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	d := got.Properties.LaunchTemplateData
	if d.UserData["Fn::Base64"]["Fn::Sub"] != script {
		t.Errorf("userdata %q", d.UserData)
	}
	if b, _ := json.Marshal(d.SecurityGroupIds); string(b) != `[{"Ref":"SG"},{"Fn::GetAtt":["Other","GroupId"]}]` {
		t.Errorf("security groups %s", b)
	}
	if b, _ := json.Marshal(d.ImageId); string(b) != `{"Fn::Join":["",["ami-",{"Ref":"Suffix"}]]}` {
		t.Errorf("join %s", b)
	}
	if strings.Contains(string(raw), `\u003c`) {
		t.Error("HTML-escaped output")
	}
	// goformation's own helpers produce the same encoding and expand too.
	if b := MustRaw(map[string]any{"v": cloudformation.Ref("X")}); string(b) != `{"v":{"Ref":"X"}}` {
		t.Errorf("goformation Ref: %s", b)
	}
	// A literal intrinsic object is kept as is, never evaluated.
	if b := MustRaw(map[string]any{"v": map[string]any{"Ref": "AWS::Region"}}); string(b) != `{"v":{"Ref":"AWS::Region"}}` {
		t.Errorf("literal Ref: %s", b)
	}
	// Plain strings that happen to be base64 stay strings.
	if b := MustRaw(map[string]any{"v": "aGVsbG8gd29ybGQh"}); string(b) != `{"v":"aGVsbG8gd29ybGQh"}` {
		t.Errorf("base64 text: %s", b)
	}
}

// Base64Sub is Base64(Sub(s)) once expanded, whatever s holds.
func TestBase64Sub(t *testing.T) {
	for _, s := range []string{
		"",
		"#!/bin/sh\necho ${AWS::Region} && <b> \"quoted\" \\ back\n",
		"\a\x00 control \u2028 é 😀",
		"aGVsbG8gd29ybGQh",
	} {
		got := MustRaw(map[string]any{"UserData": Base64Sub(s)})
		want := MustRaw(map[string]any{"UserData": Base64(Sub(s))})
		if string(got) != string(want) {
			t.Errorf("%q:\ngot  %s\nwant %s", s, got, want)
		}
	}
}

func TestMarshalIsDeterministic(t *testing.T) {
	v := map[string]any{"b": 1, "a": map[string]any{"z": json.Number("123456789012345678"), "y": []any{"x"}}}
	a, _ := Marshal(v, true)
	for i := 0; i < 20; i++ {
		b, _ := Marshal(v, true)
		if string(a) != string(b) {
			t.Fatal("two encodings differ")
		}
	}
	want := "{\n  \"a\": {\n    \"y\": [\n      \"x\"\n    ],\n    \"z\": 123456789012345678\n  },\n  \"b\": 1\n}\n"
	if string(a) != want {
		t.Errorf("got\n%s", a)
	}
}

// BenchmarkRaw encodes a node pool's launch template as the cloudformation
// plugin does: a goformation resource whose userdata is a script under
// Base64 and Sub, and references under goformation's encoding.
func BenchmarkRaw(b *testing.B) {
	script := "#!/bin/sh\nset -e\n" + strings.Repeat("export KUBE_AWS_BUCKET='${AssetsBucket}' KUBE_AWS_PREFIX='${AssetsPrefix}' && echo \"<ok>\"\n", 30)
	lt := &ec2.LaunchTemplate{LaunchTemplateData: &ec2.LaunchTemplate_LaunchTemplateData{
		ImageId:            Ref("ImageId"),
		InstanceType:       "m6i.large",
		IamInstanceProfile: &ec2.LaunchTemplate_IamInstanceProfile{Name: Ref("InstanceProfile")},
		SecurityGroupIds:   []string{Ref("SecurityGroupId"), GetAtt("Other", "GroupId")},
		UserData:           Base64Sub(script),
		MetadataOptions:    &ec2.LaunchTemplate_MetadataOptions{HttpTokens: "required", HttpPutResponseHopLimit: 1, HttpEndpoint: "enabled"},
	}}
	b.ReportAllocs()
	for b.Loop() {
		MustRaw(lt)
	}
}

// expandViaMap is how intrinsics were expanded before: each candidate
// decoded into a map to count its keys, expanded, then compacted.
func expandViaMap(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if b[i] != '"' {
			out = append(out, b[i])
			i++
			continue
		}
		end := stringEnd(b, i)
		tok := b[i:end]
		if end < len(b) && b[end] == ':' || !maybeBase64(tok[1:len(tok)-1]) {
			out = append(out, tok...)
			i = end
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(string(tok[1 : len(tok)-1]))
		var m map[string]json.RawMessage
		ok := err == nil && len(raw) > 0 && (raw[0] == '{' || raw[0] == ' ') && json.Unmarshal(raw, &m) == nil && len(m) == 1
		for k := range m {
			ok = ok && intrinsicNames[k]
		}
		if !ok {
			out = append(out, tok...)
			i = end
			continue
		}
		var c bytes.Buffer
		if err := json.Compact(&c, expandViaMap(raw)); err != nil {
			panic(err)
		}
		out = append(out, c.Bytes()...)
		i = end
	}
	return out
}

func TestExpandIntrinsicsMatchesMap(t *testing.T) {
	b64 := func(s string) string { return `"` + base64.StdEncoding.EncodeToString([]byte(s)) + `"` }
	for _, tc := range []struct{ name, in string }{
		{"compact Ref", `{"a":` + b64(`{"Ref":"X"}`) + `}`},
		{"goformation's spaced Ref", `{"a":` + b64(`{ "Ref": "X" }`) + `}`},
		{"nested", `[` + b64(`{"Fn::Base64":`+b64(`{"Fn::Sub":"echo ${AWS::Region} && <b>\n"}`)+`}`) + `]`},
		{"join of refs", b64(`{"Fn::Join":["",["a",` + b64(`{"Ref":"B"}`) + `]]}`)},
		{"key given twice", b64(`{"Ref":"X","Ref":"Y"}`)},
		{"escaped key", b64(`{"R\u0065f":"X"}`)},
		{"two keys", b64(`{"Ref":"X","Other":1}`)},
		{"not an intrinsic", b64(`{"Foo":"X"}`)},
		{"empty object", b64(`{}`)},
		{"array", b64(`[{"Ref":"X"}]`)},
		{"leading newline", b64("\n{\"Ref\":\"X\"}")},
		{"trailing data", b64(`{"Ref":"X"} x`)},
		{"invalid JSON", b64(`{"Ref":}`)},
		{"plain base64 text", `"aGVsbG8gd29ybGQh"`},
		{"a key is never expanded", `{` + b64(`{"Ref":"X"}`) + `:1}`},
		{"short strings", `["abcd","",  "x"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := expandIntrinsics([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if want := expandViaMap([]byte(tc.in)); string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// A goformation resource skips the Encoder; what it gives is what the
// Encoder gives, whatever the resource holds.
func TestRawOfAResourceIsRawThroughAnEncoder(t *testing.T) {
	lt := &ec2.LaunchTemplate{LaunchTemplateData: &ec2.LaunchTemplate_LaunchTemplateData{
		UserData:         Base64(Sub("#!/bin/bash\necho \a <&> ${AWS::Region}\n")),
		SecurityGroupIds: []string{Ref("SG"), GetAtt("Other", "GroupId")},
		ImageId:          Join("", "ami-", Ref("Suffix")),
	}}
	lt.AWSCloudFormationDependsOn = []string{"A", "B"}
	lt.AWSCloudFormationMetadata = map[string]interface{}{"z": "<&>", "a": []int{1, 2}}
	role := &iam.Role{
		AssumeRolePolicyDocument: map[string]any{"Statement": []any{map[string]any{"Effect": "Allow", "Condition": map[string]any{"StringEquals": map[string]string{"k<": "v&"}}}}},
		Path:                     "/",
		RoleName:                 Sub("${AWS::StackName}-role"),
	}
	asg := &autoscaling.AutoScalingGroup{MinSize: "1", MaxSize: "3", VPCZoneIdentifier: []string{Ref("Subnet"), Sub("${Net}-subnet")}}
	for _, r := range []cloudformation.Resource{lt, role, asg, &ec2.Volume{}} {
		got, err := Raw(r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n%s\nthrough an Encoder:\n%s", r.AWSCloudFormationType(), got, want)
		}
	}
}
