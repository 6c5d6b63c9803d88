package cloudformation

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/merge"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// fixtures are the cluster configurations the golden and determinism tests
// run on; lintFixtures adds a private API endpoint (its load balancer's
// target group attributes) and cluster.yaml.example, which must always
// render a cfn-lint-clean cluster (its golden files would churn with every
// edit of the example, so it has none).
var (
	fixtures     = []string{"minimal", "full", "moto"}
	lintFixtures = []string{"minimal", "full", "moto", "private", "example"}
)

// fixtureFile is where a fixture's cluster.yaml lives.
func fixtureFile(name string) string {
	if name == "example" {
		return filepath.Join("..", "..", "cluster.yaml.example")
	}
	return filepath.Join("testdata", name+".yaml")
}

// loadFixture reads testdata/<name>.yaml strictly: a typo in a fixture must
// fail the test, not silently drop a setting.
func loadFixture(t *testing.T, name string) (json.RawMessage, *config.Cluster) {
	t.Helper()
	file := fixtureFile(name)
	y, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Load the way kube-aws does before any stage: strict parse, defaults,
	// validation; the plugins receive the result as JSON.
	c, diags := config.Parse(file, y)
	config.ApplyDefaults(c)
	diags = append(diags, config.Validate(c, file)...)
	if diags.HasFatal() {
		t.Fatalf("%s: %v", name, diags)
	}
	j, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return j, c
}

// request builds the stage input the host would send.
func request(t *testing.T, cfg json.RawMessage, c *config.Cluster, st stage.Name, set *construct.Set) *sdk.Request {
	t.Helper()
	values, diags := config.EffectiveValues(c, filepath.Dir(c.SourceFile()))
	if diags.HasFatal() {
		t.Fatal(diags)
	}
	in := &stage.Input{Stage: st, Config: cfg, Constructs: set, Values: values}
	return &sdk.Request{Input: in, Plugin: "cloudformation"}
}

// otherPlugins stands for what other plugins contribute in initialise in the
// "full" fixture: a whole extra stack wired to the network stack, and a
// patch to a node pool's auto scaling group. Render must carry both.
func otherPlugins() *construct.Set {
	return &construct.Set{
		Stacks: []construct.Stack{{
			Name:        "bastion",
			Description: "bastion host (test plugin)",
			Parameters: map[string]json.RawMessage{
				"VpcId": json.RawMessage(`{"Type":"AWS::EC2::VPC::Id"}`),
			},
			ParameterSources: map[string]names.Source{"VpcId": names.From("network", "VpcId")},
			Resources: map[string]json.RawMessage{
				"BastionSecurityGroup": json.RawMessage(`{"Type":"AWS::EC2::SecurityGroup","Properties":{"GroupDescription":"bastion","VpcId":{"Ref":"VpcId"},"SecurityGroupIngress":[{"IpProtocol":"tcp","FromPort":22,"ToPort":22,"CidrIp":"192.0.2.0/24"}]}}`),
			},
			Outputs: map[string]json.RawMessage{
				"BastionSecurityGroupId": json.RawMessage(`{"Value":{"Fn::GetAtt":["BastionSecurityGroup","GroupId"]}}`),
			},
			Tags: map[string]string{"plugin": "bastion"},
		}},
		Patches: []construct.Patch{{
			Stack:     "nodepool-general",
			LogicalID: "AutoScalingGroup",
			Merge:     json.RawMessage(`{"Properties":{"HealthCheckGracePeriod":300,"MetricsCollection":[{"Granularity":"1Minute"}]}}`),
		}},
	}
}

// merged merges the plugin's constructs with other plugins' as the host
// does (core/merge), with the iam stack rendered late by the iam plugin.
func merged(t *testing.T, sets ...*construct.Set) *construct.Set {
	t.Helper()
	var contribs []merge.Contribution
	for i, set := range sets {
		contribs = append(contribs, merge.Contribution{Plugin: []string{"cloudformation", "others"}[i], Set: set})
	}
	out, diags := merge.MergeWith(contribs, merge.Options{Late: []merge.LateStacks{{Plugin: "iam", Stacks: []string{names.StackIAM}}}})
	if diags.HasFatal() {
		t.Fatal(diags)
	}
	return out
}

// renderFixture runs the plugin's initialise and render on a fixture exactly
// as the host would call them, and fails on any fatal diagnostic.
func renderFixture(t *testing.T, name string) *stage.Result {
	t.Helper()
	cfg, c := loadFixture(t, name)
	ctx := context.Background()
	init, err := sdk.Call(ctx, served, request(t, cfg, c, stage.Initialise, nil))
	if err != nil {
		t.Fatalf("%s: initialise: %v", name, err)
	}
	if init.Diagnostics.HasFatal() {
		t.Fatalf("%s: initialise: %v", name, init.Diagnostics)
	}
	set := merged(t, init.Constructs)
	if name == "full" {
		set = merged(t, init.Constructs, otherPlugins())
	}
	res, err := sdk.Call(ctx, served, request(t, cfg, c, stage.Render, set))
	if err != nil {
		t.Fatalf("%s: render: %v", name, err)
	}
	if res.Diagnostics.HasFatal() {
		t.Fatalf("%s: render: %v", name, res.Diagnostics)
	}
	return res
}
