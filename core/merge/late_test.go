package merge

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
)

var iamLate = Options{Late: []LateStacks{{Plugin: "iam", Stacks: []string{"iam"}}}}

// A late stack stays in the merged set as one entry per contributing
// plugin, naming its renderer, so the renderer can fold them in with the
// owner of each; a late stack nobody contributed to is there all the same.
func TestLateStacksKeepTheirContributors(t *testing.T) {
	a := construct.Set{Stacks: []construct.Stack{
		stack("iam", map[string]string{"Policy": `{"Type":"AWS::IAM::ManagedPolicy"}`}),
		stack("network", map[string]string{"VPC": `{"Type":"AWS::EC2::VPC"}`}),
	}}
	b := construct.Set{Stacks: []construct.Stack{{Name: "iam", Tags: map[string]string{"team": "x"}}}}
	out, diags := MergeWith(two(a, b), iamLate)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	var got []string
	for _, s := range out.Stacks {
		got = append(got, s.Name+"/"+s.Plugin+"/"+s.Renderer)
	}
	if strings.Join(got, " ") != "iam/alpha/iam iam/beta/iam network/alpha/" {
		t.Errorf("stacks %v", got)
	}
	if out.Stacks[0].Resources["Policy"] == nil || out.Stacks[0].Tags != nil || out.Stacks[1].Tags["team"] != "x" || out.Stacks[1].Resources != nil {
		t.Errorf("entries %+v", out.Stacks[:2])
	}

	out, diags = MergeWith(nil, iamLate)
	if len(diags) > 0 || len(out.Stacks) != 1 || !reflect.DeepEqual(out.Stacks[0], construct.Stack{Name: "iam", Plugin: "iam", Renderer: "iam"}) {
		t.Errorf("no contribution: %+v %v", out.Stacks, diags)
	}

	_, diags = MergeWith(nil, Options{Late: []LateStacks{{Plugin: "iam", Stacks: []string{"iam"}}, {Plugin: "other", Stacks: []string{"iam"}}}})
	if len(diags) != 1 || !strings.Contains(diags[0].Message, `plugins "iam" and "other"`) || diags[0].Plugin != "other" {
		t.Errorf("two renderers: %v", diags)
	}
}

// Late folds the contributions and the carried patches into the stack the
// renderer built, with the merge's own rules: a resource defined
// differently names both plugins, a patch to a missing resource or a
// protected path is refused, and the diagnostics are the render stage's.
func TestLate(t *testing.T) {
	built := stack("iam", map[string]string{
		"WorkerRole":     `{"Type":"AWS::IAM::Role","Properties":{"Path":"/"}}`,
		"ControllerRole": `{"Type":"AWS::IAM::Role","Properties":{"Path":"/"}}`,
	})
	addon := construct.Set{Stacks: []construct.Stack{stack("iam", map[string]string{"Extra": `{"Type":"AWS::IAM::ManagedPolicy"}`})}}
	tweak := construct.Set{Patches: []construct.Patch{
		{Stack: "iam", LogicalID: "WorkerRole", Merge: raw(`{"Properties":{"ManagedPolicyArns":["arn:x"]}}`)},
	}}
	prot := construct.Set{Protected: []construct.Protected{{Stack: "iam", LogicalID: "ControllerRole", Pointer: "/Properties/Path", Reason: "kept"}}}
	set, diags := MergeWith([]Contribution{{"iam", &prot}, {"addon", &addon}, {"tweak", &tweak}}, iamLate)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	out, diags := Late(built, "iam", set)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if out.Plugin != "iam" || out.Renderer != "" || out.Resources["Extra"] == nil ||
		!strings.Contains(string(out.Resources["WorkerRole"]), `"ManagedPolicyArns":["arn:x"]`) {
		t.Errorf("late stack %+v", out)
	}

	// A contribution the renderer also builds, differently; a patch to a
	// resource that is not there; a patch to a protected path.
	clash := construct.Set{Stacks: []construct.Stack{stack("iam", map[string]string{"WorkerRole": `{"Type":"AWS::IAM::Role","Properties":{"Path":"/x/"}}`})}}
	bad := construct.Set{Patches: []construct.Patch{
		{Stack: "iam", LogicalID: "NodePoolRole", Merge: raw(`{"Properties":{}}`)},
		{Stack: "iam", LogicalID: "ControllerRole", Merge: raw(`{"Properties":{"Path":"/evil/"}}`)},
	}}
	set, diags = MergeWith([]Contribution{{"iam", &prot}, {"clash", &clash}, {"bad", &bad}}, iamLate)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	_, diags = Late(built, "iam", set)
	want := []struct{ plugin, path, text string }{
		{"clash", "constructs.stacks[iam].resources.WorkerRole", `plugins "iam" and "clash"`},
		{"bad", "constructs.patches[0]", `stack "iam" has no such resource`},
		{"bad", "constructs.patches[1]", `protected by plugin "iam"`},
	}
	if len(diags) != len(want) {
		t.Fatalf("diagnostics:\n%s", diags.Error())
	}
	for i, w := range want {
		d := diags[i]
		if d.Plugin != w.plugin || d.Path != w.path || d.Stage != "render" || d.Severity != diag.Fatal || !strings.Contains(d.Message, w.text) {
			t.Errorf("diagnostic %d: %s; want plugin %s, path %s, render, %q", i, d, w.plugin, w.path, w.text)
		}
	}

	// The renderer's own bodies are taken as they are, but another
	// plugin's broken body is still refused and blamed on it; the
	// renderer's stack is not written either way.
	junk := stack("iam", map[string]string{"Junk": `{"Type":`})
	junk.Plugin, junk.Renderer = "junk", "iam"
	out, diags = Late(built, "iam", &construct.Set{Stacks: []construct.Stack{junk}})
	if len(diags) != 1 || diags[0].Plugin != "junk" || diags[0].Path != "constructs.stacks[iam].resources.Junk" ||
		!strings.Contains(diags[0].Message, "not a JSON object") {
		t.Fatalf("a broken body of another plugin: %s", diags.Error())
	}
	if _, ok := out.Resources["Junk"]; ok || len(out.Resources) != 2 {
		t.Errorf("late stack with a refused body: %v", out.Resources)
	}
	out.Resources["Extra"] = json.RawMessage(`{}`)
	if len(built.Resources) != 2 {
		t.Errorf("Late's stack shares the renderer's map: %v", built.Resources)
	}
}
