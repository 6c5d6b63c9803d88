package merge

import (
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
)

const launchTemplate = `{"Type":"AWS::EC2::LaunchTemplate","Properties":{"LaunchTemplateData":{"UserData":{"Fn::Base64":"#!/bin/bash fetch"},"InstanceType":"t3.medium"},"TagSpecifications":[{"ResourceType":"instance"}]}}`

// base is the plugin that makes a node pool stack and protects its bootstrap
// userdata, as the cloudformation built-in does.
func base() construct.Set {
	return construct.Set{
		Stacks: []construct.Stack{stack("nodepool-a", map[string]string{
			"LaunchTemplate": launchTemplate,
			"ASG":            `{"Type":"AWS::AutoScaling::AutoScalingGroup","Properties":{"MinSize":"1"}}`,
		})},
		Protected: []construct.Protected{{
			Stack: "nodepool-a", LogicalID: "LaunchTemplate",
			Pointer: "/Properties/LaunchTemplateData/UserData", Reason: "bootstrap userdata",
		}},
	}
}

func patchSet(stackName, id, merge string) construct.Set {
	return construct.Set{Patches: []construct.Patch{{Stack: stackName, LogicalID: id, Merge: raw(merge)}}}
}

func TestPatchesApplyInPluginOrder(t *testing.T) {
	b := base()
	p1 := construct.Set{Patches: []construct.Patch{
		{Stack: "nodepool-a", LogicalID: "LaunchTemplate", Merge: raw(`{"Properties":{"LaunchTemplateData":{"InstanceType":"m5.large","Monitoring":{"Enabled":true}}}}`)},
		{Stack: "nodepool-a", LogicalID: "ASG", Merge: raw(`{"Properties":{"MaxSize":"3"}}`)},
	}}
	p2 := patchSet("nodepool-a", "LaunchTemplate", `{"Properties":{"LaunchTemplateData":{"InstanceType":"c5.xlarge","Monitoring":null}}}`)
	out := mustMerge(t, []Contribution{{"cloudformation", &b}, {"p1", &p1}, {"p2", &p2}})
	lt := resourceJSON(t, out, "nodepool-a", "LaunchTemplate")
	data := lt["Properties"].(map[string]any)["LaunchTemplateData"].(map[string]any)
	if data["InstanceType"] != "c5.xlarge" {
		t.Errorf("InstanceType = %v: the later plugin's patch must apply last", data["InstanceType"])
	}
	if _, ok := data["Monitoring"]; ok {
		t.Error("p2's null did not remove what p1 added")
	}
	if data["UserData"] == nil {
		t.Error("unrelated protected value lost")
	}
	asg := resourceJSON(t, out, "nodepool-a", "ASG")
	if got := asg["Properties"].(map[string]any); got["MaxSize"] != "3" || got["MinSize"] != "1" {
		t.Errorf("ASG properties = %v", got)
	}

	// The other order gives the other result: order decides patches, which
	// by design apply in sequence, and never conflicts.
	out = mustMerge(t, []Contribution{{"cloudformation", &b}, {"p2", &p2}, {"p1", &p1}})
	data = resourceJSON(t, out, "nodepool-a", "LaunchTemplate")["Properties"].(map[string]any)["LaunchTemplateData"].(map[string]any)
	if data["InstanceType"] != "m5.large" || data["Monitoring"] == nil {
		t.Errorf("reversed order: %v", data)
	}
}

func TestPatchRefused(t *testing.T) {
	tests := []struct {
		name     string
		patch    construct.Set
		extra    []construct.Protected
		contains []string
	}{
		{"protected pointer itself",
			patchSet("nodepool-a", "LaunchTemplate", `{"Properties":{"LaunchTemplateData":{"UserData":"evil"}}}`), nil,
			[]string{"/Properties/LaunchTemplateData/UserData", `sets it to "evil"`, "bootstrap userdata", `"cloudformation"`}},
		{"protected pointer removed",
			patchSet("nodepool-a", "LaunchTemplate", `{"Properties":{"LaunchTemplateData":{"UserData":null}}}`), nil,
			[]string{"removes it"}},
		{"under the protected pointer",
			patchSet("nodepool-a", "LaunchTemplate", `{"Properties":{"LaunchTemplateData":{"UserData":{"Fn::Base64":"evil"}}}}`), nil,
			[]string{"changes /Properties/LaunchTemplateData/UserData/Fn::Base64 under it"}},
		{"ancestor nulled",
			patchSet("nodepool-a", "LaunchTemplate", `{"Properties":{"LaunchTemplateData":null}}`), nil,
			[]string{"removes /Properties/LaunchTemplateData, which contains it"}},
		{"ancestor replaced",
			patchSet("nodepool-a", "LaunchTemplate", `{"Properties":"nope"}`), nil,
			[]string{`replaces /Properties, which contains it, with "nope"`}},
		{"protected array element replaced through its array",
			patchSet("nodepool-a", "LaunchTemplate", `{"Properties":{"TagSpecifications":[]}}`),
			[]construct.Protected{{Stack: "nodepool-a", LogicalID: "LaunchTemplate", Pointer: "/Properties/TagSpecifications/0/ResourceType"}},
			[]string{"replaces /Properties/TagSpecifications"}},
		{"whole resource protected",
			patchSet("nodepool-a", "ASG", `{"Properties":{"MaxSize":"9"}}`),
			[]construct.Protected{{Stack: "nodepool-a", LogicalID: "ASG", Pointer: ""}},
			[]string{"(the whole resource)", "changes /Properties/MaxSize"}},
		{"type change",
			patchSet("nodepool-a", "ASG", `{"Type":"AWS::EC2::Instance"}`), nil,
			[]string{"may not change the Type", `"AWS::AutoScaling::AutoScalingGroup"`, `"AWS::EC2::Instance"`}},
		{"type removed",
			patchSet("nodepool-a", "ASG", `{"Type":null}`), nil,
			[]string{"may not change the Type", "to nothing"}},
		{"missing resource",
			patchSet("nodepool-a", "LaunchTemplat", `{"Properties":{}}`), nil,
			[]string{`"LaunchTemplat"`, `"nodepool-a"`, "similar logical IDs: LaunchTemplate"}},
		{"missing stack",
			patchSet("nodepool-b", "LaunchTemplate", `{"Properties":{}}`), nil,
			[]string{`no plugin defines stack "nodepool-b"`, "similar stacks: nodepool-a", `exists in stack nodepool-a`}},
		{"not an object",
			patchSet("nodepool-a", "ASG", `["x"]`), nil,
			[]string{"not a JSON object"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := base()
			b.Protected = append(b.Protected, tc.extra...)
			out, diags := Merge([]Contribution{{"cloudformation", &b}, {"tweak", &tc.patch}})
			checkConflict(t, diags, "tweak", "constructs.patches[0]", append(tc.contains, `"tweak"`)...)
			// A refused patch is not applied.
			for id, body := range b.Stacks[0].Resources {
				if got := out.Stacks[0].Resources[id]; !jsonEqual(got, body) {
					t.Errorf("%s changed by a refused patch: %s", id, got)
				}
			}
		})
	}
}

func TestPatchAccepted(t *testing.T) {
	tests := []struct{ name, patch string }{
		{"sibling of the protected path", `{"Properties":{"LaunchTemplateData":{"InstanceType":"m5.large"}}}`},
		{"protected value set to what it is", `{"Properties":{"LaunchTemplateData":{"UserData":{"Fn::Base64":"#!/bin/bash fetch"}}}}`},
		{"same Type", `{"Type":"AWS::EC2::LaunchTemplate","Properties":{"LaunchTemplateData":{"ImageId":"ami-1"}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := base()
			p := patchSet("nodepool-a", "LaunchTemplate", tc.patch)
			out := mustMerge(t, []Contribution{{"cloudformation", &b}, {"tweak", &p}})
			var want map[string]any
			if err := json.Unmarshal([]byte(launchTemplate), &want); err != nil {
				t.Fatal(err)
			}
			got := resourceJSON(t, out, "nodepool-a", "LaunchTemplate")
			if !reflect.DeepEqual(got["Properties"].(map[string]any)["LaunchTemplateData"].(map[string]any)["UserData"],
				want["Properties"].(map[string]any)["LaunchTemplateData"].(map[string]any)["UserData"]) {
				t.Errorf("UserData changed: %v", got)
			}
		})
	}
}

func TestBadPatchesAllReported(t *testing.T) {
	b := base()
	p := construct.Set{Patches: []construct.Patch{
		{Stack: "nodepool-a", LogicalID: "Nope", Merge: raw(`{}`)},
		{Stack: "nodepool-a", LogicalID: "ASG", Merge: raw(`{"Properties":{"MaxSize":"5"}}`)},
		{Stack: "nodepool-a", LogicalID: "LaunchTemplate", Merge: raw(`{"Properties":{"LaunchTemplateData":null}}`)},
	}}
	out, diags := Merge([]Contribution{{"cloudformation", &b}, {"tweak", &p}})
	if len(diags) != 2 || diags[0].Path != "constructs.patches[0]" || diags[1].Path != "constructs.patches[2]" {
		t.Fatalf("diagnostics:\n%s", diags.Error())
	}
	if !strings.Contains(string(out.Stacks[0].Resources["ASG"]), `"MaxSize":"5"`) {
		t.Error("the good patch between two bad ones was not applied")
	}
}

func TestPatchOutputIsDeterministic(t *testing.T) {
	b := base()
	// Several new keys in one object: MergePatch alone would order them by
	// map iteration.
	p := patchSet("nodepool-a", "ASG", `{"Properties":{"K1":1,"K2":2,"K3":3,"K4":4,"K5":5,"K6":6,"K7":"a && b < c"}}`)
	first := mustMerge(t, []Contribution{{"cloudformation", &b}, {"tweak", &p}})
	want := string(first.Stacks[0].Resources["ASG"])
	if !strings.Contains(want, `"a && b < c"`) {
		t.Errorf("patched body escapes or loses a string: %s", want)
	}
	for i := 0; i < 30; i++ {
		out := mustMerge(t, []Contribution{{"cloudformation", &b}, {"tweak", &p}})
		if got := string(out.Stacks[0].Resources["ASG"]); got != want {
			t.Fatalf("patched body differs between runs:\n%s\n%s", want, got)
		}
	}
}

func TestParallelPatchingMatchesSequential(t *testing.T) {
	contribs := benchContributions(40, 30)
	// A few bad patches, so diagnostics order is checked too.
	bad := &construct.Set{Patches: []construct.Patch{
		{Stack: "nodepool-pool3", LogicalID: "LaunchTemplate", Merge: raw(`{"Properties":{"LaunchTemplateData":{"UserData":"x"}}}`)},
		{Stack: "nodepool-pool99", LogicalID: "ASG", Merge: raw(`{}`)},
		{Stack: "nodepool-pool5", LogicalID: "ASG", Merge: raw(`{"Type":"X"}`)},
	}}
	contribs = append(contribs, Contribution{Plugin: "bad", Set: bad})
	parOut, parDiags := Merge(contribs)
	if len(parDiags) != 3 {
		t.Fatalf("diagnostics:\n%s", parDiags.Error())
	}
	old := runtime.GOMAXPROCS(1)
	seqOut, seqDiags := Merge(contribs)
	runtime.GOMAXPROCS(old)
	if !reflect.DeepEqual(parOut, seqOut) || !reflect.DeepEqual(parDiags, seqDiags) {
		t.Error("parallel and sequential patching differ")
	}
}

func TestPatchesToStacksBuiltInRenderAreCarried(t *testing.T) {
	b := base()
	iam := construct.Set{Stacks: []construct.Stack{stack("iam", map[string]string{"ExtraPolicy": `{"Type":"AWS::IAM::ManagedPolicy","Properties":{"Path":"/"}}`})}}
	p := construct.Set{Patches: []construct.Patch{
		// The iam plugin makes WorkerRole in render: only it can apply this.
		{Stack: "iam", LogicalID: "WorkerRole", Merge: raw(`{"Properties":{"ManagedPolicyArns":["arn:aws:iam::aws:policy/X"]}}`)},
		// A resource of the iam stack contributed in initialise is patched now.
		{Stack: "iam", LogicalID: "ExtraPolicy", Merge: raw(`{"Properties":{"Path":"/kube-aws/"}}`)},
		{Stack: "iam", LogicalID: "ControllerRole", Merge: raw(`"not an object"`)},
	}}
	out, diags := MergeWith([]Contribution{{"cloudformation", &b}, {"addon", &iam}, {"tweak", &p}},
		Options{Late: []LateStacks{{Plugin: "iam", Stacks: []string{"iam"}}}})
	checkConflict(t, diags, "tweak", "constructs.patches[2]", "not a JSON object")
	want := append([]construct.Patch(nil), p.Patches[:1]...)
	want[0].Plugin = "tweak" // a carried patch names its plugin
	if !reflect.DeepEqual(out.Patches, want) {
		t.Errorf("carried patches = %+v, want %+v", out.Patches, want)
	}
	if got := resourceJSON(t, out, "iam", "ExtraPolicy")["Properties"].(map[string]any)["Path"]; got != "/kube-aws/" {
		t.Errorf("ExtraPolicy Path = %v", got)
	}
}
