package cfn

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v4/cloudformation"
	"github.com/awslabs/goformation/v4/cloudformation/ec2"
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
