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

// Patches from two plugins that do not overlap both apply; patches that
// overlap are a conflict naming both plugins, the stack, the resource and
// the path, in either plugin order (the old rule, "the later plugin's patch
// applies last", let plugin order decide silently: issue 10, point 1).
func TestPatchesFromTwoPlugins(t *testing.T) {
	b := base()
	p1 := construct.Set{Patches: []construct.Patch{
		{Stack: "nodepool-a", LogicalID: "LaunchTemplate", Merge: raw(`{"Properties":{"LaunchTemplateData":{"InstanceType":"m5.large","Monitoring":{"Enabled":true}}}}`)},
		{Stack: "nodepool-a", LogicalID: "ASG", Merge: raw(`{"Properties":{"MaxSize":"3"}}`)},
	}}
	p2 := patchSet("nodepool-a", "LaunchTemplate", `{"Properties":{"LaunchTemplateData":{"ImageId":"ami-1"}}}`)
	out := mustMerge(t, []Contribution{{"cloudformation", &b}, {"p1", &p1}, {"p2", &p2}})
	data := resourceJSON(t, out, "nodepool-a", "LaunchTemplate")["Properties"].(map[string]any)["LaunchTemplateData"].(map[string]any)
	if data["InstanceType"] != "m5.large" || data["ImageId"] != "ami-1" || data["Monitoring"] == nil || data["UserData"] == nil {
		t.Errorf("launch template data %v", data)
	}
	asg := resourceJSON(t, out, "nodepool-a", "ASG")
	if got := asg["Properties"].(map[string]any); got["MaxSize"] != "3" || got["MinSize"] != "1" {
		t.Errorf("ASG properties = %v", got)
	}

	clashes := []struct {
		name     string
		a, b     construct.Patch
		contains []string
	}{
		{"same path, different values",
			construct.Patch{Merge: raw(`{"Properties":{"LaunchTemplateData":{"InstanceType":"m5.large"}}}`)},
			construct.Patch{Merge: raw(`{"Properties":{"LaunchTemplateData":{"InstanceType":"c5.xlarge"}}}`)},
			[]string{"/Properties/LaunchTemplateData/InstanceType", `"m5.large"`, `"c5.xlarge"`}},
		{"one removes what the other sets",
			construct.Patch{Merge: raw(`{"Properties":{"LaunchTemplateData":{"Monitoring":{"Enabled":true}}}}`)},
			construct.Patch{Merge: raw(`{"Properties":{"LaunchTemplateData":{"Monitoring":null}}}`)},
			[]string{"/Properties/LaunchTemplateData/Monitoring/Enabled", "removes /Properties/LaunchTemplateData/Monitoring"}},
		{"a list replaced whole by both",
			construct.Patch{Merge: raw(`{"Properties":{"TagSpecifications":[{"ResourceType":"volume"}]}}`)},
			construct.Patch{Merge: raw(`{"Properties":{"TagSpecifications":[{"ResourceType":"instance"}]}}`)},
			[]string{"/Properties/TagSpecifications"}},
		{"an operation and a merge patch",
			construct.Patch{Operations: raw(`[{"op":"replace","path":"/Properties/LaunchTemplateData/InstanceType","value":"m5.large"}]`)},
			construct.Patch{Merge: raw(`{"Properties":{"LaunchTemplateData":{"InstanceType":"c5.xlarge"}}}`)},
			[]string{"operation 0 (replace)", "the merge patch"}},
		{"an append and a replacement of the list",
			construct.Patch{Operations: raw(`[{"op":"add","path":"/Properties/TagSpecifications/-","value":{"ResourceType":"volume"}}]`)},
			construct.Patch{Merge: raw(`{"Properties":{"TagSpecifications":[]}}`)},
			[]string{"appends", "/Properties/TagSpecifications"}},
	}
	for _, tc := range clashes {
		t.Run(tc.name, func(t *testing.T) {
			for _, order := range [][2]string{{"p1", "p2"}, {"p2", "p1"}} {
				pa, pb := tc.a, tc.b
				pa.Stack, pa.LogicalID, pb.Stack, pb.LogicalID = "nodepool-a", "LaunchTemplate", "nodepool-a", "LaunchTemplate"
				sets := map[string]*construct.Set{"p1": {Patches: []construct.Patch{pa}}, "p2": {Patches: []construct.Patch{pb}}}
				b := base()
				_, diags := Merge([]Contribution{{"cloudformation", &b}, {order[0], sets[order[0]]}, {order[1], sets[order[1]]}})
				checkConflict(t, diags, order[1], "constructs.patches[0]",
					append(tc.contains, `plugins "`+order[0]+`" and "`+order[1]+`"`, `resource "LaunchTemplate"`, `stack "nodepool-a"`)...)
			}
		})
	}

	// The same value from both, or appends from both, decide nothing.
	same := patchSet("nodepool-a", "LaunchTemplate", `{"Properties":{"LaunchTemplateData":{"InstanceType":"m5.large"}}}`)
	same2 := construct.Set{Patches: []construct.Patch{{Stack: "nodepool-a", LogicalID: "LaunchTemplate",
		Operations: raw(`[{"op":"replace","path":"/Properties/LaunchTemplateData/InstanceType","value":"m5.large"}]`)}}}
	mustMerge(t, []Contribution{{"cloudformation", &b}, {"p1", &same}, {"p2", &same2}})
}

// The case of issue 10: the built-in makes the API load balancer with two
// tags; two plugins each add one with an RFC 6902 append, and all four
// come out, whatever the plugin order, while a protected list is refused.
func TestOperationsAppendToAList(t *testing.T) {
	lb := construct.Set{Stacks: []construct.Stack{stack("control-plane", map[string]string{
		"LoadBalancer": `{"Type":"AWS::ElasticLoadBalancingV2::LoadBalancer","Properties":{"Tags":[{"Key":"Name","Value":"demo-api"},{"Key":"kubernetes.io/cluster/demo","Value":"owned"}]}}`,
	})}}
	tag := func(k string) construct.Set {
		return construct.Set{Patches: []construct.Patch{{Stack: "control-plane", LogicalID: "LoadBalancer",
			Operations: raw(`[{"op":"add","path":"/Properties/Tags/-","value":{"Key":"` + k + `","Value":"1"}}]`)}}}
	}
	a, b := tag("team"), tag("cost-center")
	for _, c := range [][]Contribution{
		{{"cloudformation", &lb}, {"a", &a}, {"b", &b}},
		{{"cloudformation", &lb}, {"b", &b}, {"a", &a}},
	} {
		out := mustMerge(t, c)
		var keys []string
		for _, tg := range resourceJSON(t, out, "control-plane", "LoadBalancer")["Properties"].(map[string]any)["Tags"].([]any) {
			keys = append(keys, tg.(map[string]any)["Key"].(string))
		}
		if len(keys) != 4 || keys[0] != "Name" || keys[1] != "kubernetes.io/cluster/demo" {
			t.Errorf("tags %v, want the built-in's two then both plugins'", keys)
		}
	}

	prot := lb
	prot.Protected = []construct.Protected{{Stack: "control-plane", LogicalID: "LoadBalancer", Pointer: "/Properties/Tags", Reason: "owned tags"}}
	_, diags := Merge([]Contribution{{"cloudformation", &prot}, {"a", &a}})
	checkConflict(t, diags, "a", "constructs.patches[0]", "may not change protected path /Properties/Tags", ": the patch's operation 0 (add) appends", "owned tags")

	bad := construct.Set{Patches: []construct.Patch{{Stack: "control-plane", LogicalID: "LoadBalancer",
		Operations: raw(`[{"op":"test","path":"/Properties/Scheme","value":"internal"}]`)}}}
	_, diags = Merge([]Contribution{{"cloudformation", &lb}, {"a", &bad}})
	checkConflict(t, diags, "a", "constructs.patches[0]", "could not apply its operations", "/Properties/Scheme")

	for _, ops := range []string{`{"op":"add"}`, `[{"op":"frobnicate","path":"/a"}]`, `[{"op":"add","path":"a","value":1}]`, `[{"op":"replace","path":"/a"}]`, `[]`} {
		bad := construct.Set{Patches: []construct.Patch{{Stack: "control-plane", LogicalID: "LoadBalancer", Operations: raw(ops)}}}
		_, diags = Merge([]Contribution{{"cloudformation", &lb}, {"a", &bad}})
		checkConflict(t, diags, "a", "constructs.patches[0]", `plugin "a" patches resource "LoadBalancer"`)
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
			[]string{"/Properties/LaunchTemplateData/UserData", `: the patch sets it to "evil" (protected by plugin`, "bootstrap userdata", `"cloudformation"`}},
		{"protected pointer removed",
			patchSet("nodepool-a", "LaunchTemplate", `{"Properties":{"LaunchTemplateData":{"UserData":null}}}`), nil,
			[]string{": the patch removes it (protected"}},
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
