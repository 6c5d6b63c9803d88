package stacks

import (
	"encoding/json"
	"fmt"
	"github.com/kube-aws/kube-aws/builtin/internal/bootstrap"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/merge"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
)

func minimal() *config.Cluster {
	c := &config.Cluster{
		ClusterName:       "t",
		Region:            "us-east-1",
		AvailabilityZones: []string{"us-east-1a", "us-east-1b"},
		S3URI:             "s3://b/p",
		Network:           config.Network{VPCCIDR: "10.0.0.0/16", NATGateways: true},
		Controller:        config.MachineSet{Count: 2, InstanceType: "t3.medium"},
		Etcd:              config.MachineSet{Count: 3, InstanceType: "t3.medium"},
		NodePools:         []config.NodePool{{Name: "workers", InstanceType: "t3.large", MinSize: 1, MaxSize: 3, DesiredCapacity: 2}},
	}
	config.ApplyDefaults(c)
	return c
}

func existingVPC() *config.Cluster {
	c := minimal()
	c.Network = config.Network{VPCID: "vpc-1", Subnets: []config.Subnet{
		{Name: "pub-a", AvailabilityZone: "us-east-1a", ID: "subnet-pa"},
		{Name: "pub-a2", AvailabilityZone: "us-east-1a", ID: "subnet-pa2"},
		{Name: "pub-b", AvailabilityZone: "us-east-1b", ID: "subnet-pb"},
		{Name: "priv-a", AvailabilityZone: "us-east-1a", ID: "subnet-qa", Private: true},
		{Name: "priv-b", AvailabilityZone: "us-east-1b", ID: "subnet-qb", Private: true},
	}}
	c.APIEndpoint = config.APIEndpoint{DNSName: "api.example.com", HostedZoneID: "Z1"}
	c.NodePools = append(c.NodePools, config.NodePool{Name: "spot-arm", InstanceType: "m7g.large", MinSize: 0, MaxSize: 5,
		Spot: &config.Spot{MaxPrice: "0.05"}, Subnets: []string{"priv-b"},
		Labels: map[string]string{"lifecycle": "spot"}, Taints: []config.Taint{{Key: "spot", Value: "true", Effect: "NoSchedule"}}})
	return c
}

func initialise(t *testing.T, c *config.Cluster) *construct.Set {
	t.Helper()
	set, diags := Initialise(c, Values{})
	if diags.HasFatal() {
		t.Fatal(diags)
	}
	return set
}

func stackOf(t *testing.T, set *construct.Set, name string) construct.Stack {
	t.Helper()
	for _, s := range set.Stacks {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no stack %s", name)
	return construct.Stack{}
}

// resource decodes a resource body into generic JSON for assertions.
func resource(t *testing.T, s construct.Stack, id string) map[string]any {
	t.Helper()
	raw, ok := s.Resources[id]
	if !ok {
		t.Fatalf("stack %s has no resource %s", s.Name, id)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestInitialiseNewVPC(t *testing.T) {
	set := initialise(t, minimal())
	var names []string
	for _, s := range set.Stacks {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, " "); got != "network etcd control-plane nodepool-workers" {
		t.Fatalf("stacks %q", got)
	}
	net := stackOf(t, set, "network")
	cidrs := map[string]string{}
	for id := range net.Resources {
		r := resource(t, net, id)
		if r["Type"] == "AWS::EC2::Subnet" {
			cidrs[id] = r["Properties"].(map[string]any)["CidrBlock"].(string)
		}
	}
	want := map[string]string{
		"SubnetPublicUsEast1a": "10.0.0.0/20", "SubnetPublicUsEast1b": "10.0.16.0/20",
		"SubnetPrivateUsEast1a": "10.0.128.0/20", "SubnetPrivateUsEast1b": "10.0.144.0/20",
	}
	if fmt.Sprint(cidrs) != fmt.Sprint(want) {
		t.Errorf("subnets %v, want %v", cidrs, want)
	}
	for _, id := range []string{"VPC", "InternetGateway", "InternetGatewayAttachment", "PublicRoute",
		"NatGatewayUsEast1a", "NatGatewayUsEast1b", "NatEIPUsEast1a", "PrivateRouteUsEast1b",
		"SubnetPrivateUsEast1aRouteTableAssociation"} {
		resource(t, net, id)
	}
	nat := resource(t, net, "NatGatewayUsEast1b")["Properties"].(map[string]any)
	if fmt.Sprint(nat["SubnetId"]) != "map[Ref:SubnetPublicUsEast1b]" {
		t.Errorf("NAT gateway of zone b sits in %v, want the public subnet of zone b", nat["SubnetId"])
	}
	for _, o := range []string{"VpcId", "SubnetPublicUsEast1aId", "PublicSubnetIds", "PrivateSubnetIds",
		"ControllerSecurityGroupId", "EtcdSecurityGroupId", "WorkerSecurityGroupId"} {
		if _, ok := net.Outputs[o]; !ok {
			t.Errorf("network output %s missing", o)
		}
	}
}

func TestMachineStacksAreWiredByParameters(t *testing.T) {
	set := initialise(t, minimal())
	cases := map[string]string{
		"etcd":             "iam.EtcdInstanceProfile",
		"control-plane":    "iam.ControllerInstanceProfile",
		"nodepool-workers": "iam.NodePoolWorkersInstanceProfile",
	}
	for name, src := range cases {
		s := stackOf(t, set, name)
		if s.ParameterSources["InstanceProfile"].String() != src {
			t.Errorf("%s: InstanceProfile from %q, want %q", name, s.ParameterSources["InstanceProfile"], src)
		}
		for p, src := range s.ParameterSources {
			if _, ok := s.Parameters[p]; !ok {
				t.Errorf("%s: source for undeclared parameter %s", name, p)
			}
			if strings.HasPrefix(src.String(), "network.") {
				if _, ok := stackOf(t, set, "network").Outputs[strings.TrimPrefix(src.String(), "network.")]; !ok {
					t.Errorf("%s: parameter %s from %s, which network does not output", name, p, src)
				}
			}
		}
		for _, p := range []string{"AssetsBucket", "AssetsPrefix", "UserDataKey", "NodeAgentKeyAmd64", "NodeAgentKeyArm64"} {
			if _, ok := s.Parameters[p]; !ok {
				t.Errorf("%s: parameter %s missing", name, p)
			}
			if _, wired := s.ParameterSources[p]; wired {
				t.Errorf("%s: %s must be left to deploy, not wired", name, p)
			}
		}
		// The launch template boots kube-aws-node with builtin/internal/bootstrap,
		// for the stack's role; controllers learn the API load balancer's name
		// and where the helm plugin's release list is.
		lt := resource(t, s, "LaunchTemplate")["Properties"].(map[string]any)["LaunchTemplateData"].(map[string]any)
		ud, _ := json.Marshal(lt["UserData"])
		role := map[string]string{"etcd": "etcd", "control-plane": "controller", "nodepool-workers": "nodepool-workers"}[name]
		var facts []bootstrap.Fact
		if role == "controller" {
			facts = []bootstrap.Fact{{Name: "apiLoadBalancerDNS", Parameter: "LoadBalancer.DNSName"}, {Name: "addonsKey", Parameter: "ChartsIndexKey"}}
		}
		script, err := bootstrap.Script("t", role, facts)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(map[string]any{"Fn::Base64": map[string]any{"Fn::Sub": script}})
		if string(ud) != string(want) {
			t.Errorf("%s: the launch template user data is not the bootstrap of role %s:\n%.300s", name, role, ud)
		}
		var prot []string
		for _, p := range set.Protected {
			if p.Stack == name {
				prot = append(prot, p.LogicalID+p.Pointer)
			}
		}
		sort.Strings(prot)
		if got := strings.Join(prot, " "); got != "LaunchTemplate/Properties/LaunchTemplateData/IamInstanceProfile LaunchTemplate/Properties/LaunchTemplateData/MetadataOptions LaunchTemplate/Properties/LaunchTemplateData/UserData" {
			t.Errorf("%s: protected %q", name, got)
		}
	}
	cp := stackOf(t, set, "control-plane")
	for _, id := range []string{"LoadBalancer", "TargetGroup", "Listener"} {
		resource(t, cp, id)
	}
	if _, ok := cp.Resources["APIEndpointRecord"]; ok {
		t.Error("a Route 53 record without apiEndpoint.hostedZoneId")
	}
}

func TestInitialiseExistingVPCSpotAndRoute53(t *testing.T) {
	set, diags := Initialise(existingVPC(), Values{})
	if diags.HasFatal() || len(diags) != 0 {
		t.Fatalf("diagnostics: %v", diags)
	}
	net := stackOf(t, set, "network")
	for id := range net.Resources {
		ty := resource(t, net, id)["Type"].(string)
		if ty != "AWS::EC2::SecurityGroup" && ty != "AWS::EC2::SecurityGroupIngress" {
			t.Errorf("existing VPC, but the network stack makes %s %s", ty, id)
		}
	}
	var vpc map[string]any
	_ = json.Unmarshal(net.Outputs["VpcId"], &vpc)
	if vpc["Value"] != "vpc-1" {
		t.Errorf("VpcId output %v", vpc)
	}
	cp := stackOf(t, set, "control-plane")
	lb := resource(t, cp, "LoadBalancer")["Properties"].(map[string]any)
	if subs, _ := json.Marshal(lb["Subnets"]); string(subs) != `[{"Ref":"SubnetPubAId"},{"Ref":"SubnetPubBId"}]` {
		t.Errorf("load balancer subnets %s, want one public subnet per zone", subs)
	}
	rec := resource(t, cp, "APIEndpointRecord")["Properties"].(map[string]any)
	if rec["HostedZoneId"] != "Z1" || rec["Name"] != "api.example.com" {
		t.Errorf("record %v", rec)
	}
	spot := stackOf(t, set, "nodepool-spot-arm")
	lt := resource(t, spot, "LaunchTemplate")["Properties"].(map[string]any)["LaunchTemplateData"].(map[string]any)
	if m, _ := json.Marshal(lt["InstanceMarketOptions"]); string(m) != `{"MarketType":"spot","SpotOptions":{"MaxPrice":"0.05","SpotInstanceType":"one-time"}}` {
		t.Errorf("spot options %s", m)
	}
	var img map[string]any
	_ = json.Unmarshal(spot.Parameters["ImageId"], &img)
	if !strings.HasSuffix(fmt.Sprint(img["Default"]), "arm64") {
		t.Errorf("Graviton pool boots %v", img["Default"])
	}
	if got := keys(spot.ParameterSources); strings.Join(got, " ") != "InstanceProfile SecurityGroupId SubnetPrivBId" {
		t.Errorf("spot pool parameters %v", got)
	}
	asg, _ := json.Marshal(resource(t, spot, "AutoScalingGroup")["Properties"].(map[string]any)["Tags"])
	for _, want := range []string{`"k8s.io/cluster-autoscaler/node-template/label/lifecycle","PropagateAtLaunch":false,"Value":"spot"`,
		`"k8s.io/cluster-autoscaler/node-template/taint/spot","PropagateAtLaunch":false,"Value":"true:NoSchedule"`} {
		if !strings.Contains(string(asg), want) {
			t.Errorf("ASG tags %s lack %s", asg, want)
		}
	}
	if _, ok := lt["InstanceMarketOptions"]; !ok {
		t.Error("no market options")
	}
	if w := stackOf(t, set, "nodepool-workers"); strings.Contains(string(w.Resources["LaunchTemplate"]), "InstanceMarketOptions") {
		t.Error("on-demand pool has market options")
	}
}

func TestInitialiseProblems(t *testing.T) {
	c := existingVPC()
	c.Etcd.Subnets = []string{"nope"}
	_, diags := Initialise(c, Values{})
	if !has(diags, diag.Fatal, `unknown subnet "nope"`, "etcd.subnets[0]") {
		t.Errorf("unknown subnet: %v", diags)
	}

	c = minimal()
	c.Network.NATGateways = false
	_, diags = Initialise(c, Values{})
	// core/config warns about it, with its line; the plugin says nothing,
	// so that the warning is printed once.
	if len(diags) != 0 {
		t.Errorf("no NAT: the plugin repeats core/config's warning: %v", diags)
	}

	c = existingVPC()
	c.APIEndpoint.DNSName = ""
	_, diags = Initialise(c, Values{})
	if !has(diags, diag.Fatal, "hostedZoneId", "apiEndpoint.dnsName") {
		t.Errorf("zone without name: %v", diags)
	}

	c = existingVPC()
	c.Network.Subnets[0].ID = ""
	_, diags = Initialise(c, Values{})
	if !has(diags, diag.Fatal, "has no id", "network.subnets[0].id") {
		t.Errorf("existing subnet without id: %v", diags)
	}
}

func has(l diag.List, sev diag.Severity, msg, path string) bool {
	for _, d := range l {
		if d.Severity == sev && strings.Contains(d.Message, msg) && d.Path == path {
			return true
		}
	}
	return false
}

// merged merges the plugin's initialise output with patches from another
// plugin the way kube-aws does (core/merge), with the iam stack rendered
// late by the iam plugin.
func merged(set *construct.Set, patches ...construct.Patch) (*construct.Set, diag.List) {
	return merge.MergeWith([]merge.Contribution{
		{Plugin: "cloudformation", Set: set},
		{Plugin: "tweak", Set: &construct.Set{Patches: patches}},
	}, merge.Options{Late: []merge.LateStacks{{Plugin: "iam", Stacks: []string{names.StackIAM}}}})
}

// Patches reach the rendered templates through the merge, which refuses
// the ones that touch a protected path; render applies none itself.
func TestRenderAppliesPatchesAndRefusesProtected(t *testing.T) {
	set := initialise(t, minimal())
	m, diags := merged(set, construct.Patch{Stack: "nodepool-workers", LogicalID: "AutoScalingGroup",
		Merge: json.RawMessage(`{"Properties":{"HealthCheckGracePeriod":600}}`)})
	files, _, rdiags := Render(minimal(), Values{}, nil, m)
	if diags = append(diags, rdiags...); diags.HasFatal() {
		t.Fatal(diags)
	}
	var pool []byte
	for _, f := range files {
		if f.Path == "stacks/nodepool-workers.json" {
			pool = f.Content
		}
	}
	if !strings.Contains(string(pool), `"HealthCheckGracePeriod": 600`) {
		t.Error("patch not applied")
	}
	if strings.Contains(string(set.Stacks[3].Resources["AutoScalingGroup"]), "HealthCheckGracePeriod") {
		t.Error("render modified its input")
	}

	_, diags = merged(set, construct.Patch{Stack: "etcd", LogicalID: "LaunchTemplate",
		Merge: json.RawMessage(`{"Properties":{"LaunchTemplateData":{"UserData":"evil"}}}`)})
	if !has(diags, diag.Fatal, `may not change protected path /Properties/LaunchTemplateData/UserData of resource "LaunchTemplate" in stack "etcd"`, "constructs.patches[0]") {
		t.Errorf("protected patch: %v", diags)
	}
	_, diags = merged(set, construct.Patch{Stack: "etcd", LogicalID: "LaunchTemplate",
		Merge: json.RawMessage(`{"Properties":{"LaunchTemplateData":null}}`)})
	if !diags.HasFatal() {
		t.Error("removing an ancestor of a protected path must be fatal")
	}
	_, diags = merged(set, construct.Patch{Stack: "ghost", LogicalID: "X", Merge: json.RawMessage(`{}`)})
	if !has(diags, diag.Fatal, `no plugin defines stack "ghost"`, "constructs.patches[0]") {
		t.Errorf("patch to a missing stack: %v", diags)
	}
}

func TestRenderSkipsIAMAndBuildsSpecs(t *testing.T) {
	c := minimal()
	c.Tags = map[string]string{"team": "a", "env": "prod"}
	set := initialise(t, c)
	set.Stacks = append(set.Stacks, construct.Stack{Name: "iam", Renderer: "iam", Resources: map[string]json.RawMessage{
		"R": json.RawMessage(`{"Type":"AWS::IAM::Role","Properties":{}}`)}})
	files, specs, diags := Render(c, Values{Tags: map[string]string{"env": "staging"}},
		map[string]Values{"workers": {Tags: map[string]string{"env": "staging", "pool": "w"}}}, set)
	if diags.HasFatal() {
		t.Fatal(diags)
	}
	for _, f := range files {
		if f.Path == "stacks/iam.json" {
			t.Error("cloudformation rendered the iam stack")
		}
	}
	for _, s := range specs {
		if s.Name == "nodepool-workers" {
			if strings.Join(s.DependsOn, ",") != "iam,network" {
				t.Errorf("depends on %v", s.DependsOn)
			}
			if s.Tags["env"] != "staging" || s.Tags["pool"] != "w" || s.Tags["team"] != "a" || s.Tags["kube-aws:stack"] != "nodepool-workers" {
				t.Errorf("tags %v", s.Tags)
			}
			if s.UploadByURL {
				t.Error("a small template marked for upload by URL")
			}
		} else if s.Tags["pool"] != "" || s.Tags["env"] != "staging" {
			t.Errorf("%s: tags %v", s.Name, s.Tags)
		}
	}
}

// limitStack is a stack of n resources, params parameters, outputs outputs
// and one property of pad bytes.
func limitStack(n, params, outputs, pad int) construct.Stack {
	s := construct.Stack{Name: "big", Resources: map[string]json.RawMessage{},
		Parameters: map[string]json.RawMessage{}, Outputs: map[string]json.RawMessage{}}
	for i := 0; i < n; i++ {
		s.Resources[fmt.Sprintf("Topic%d", i)] = json.RawMessage(`{"Type":"AWS::SNS::Topic"}`)
	}
	if pad > 0 {
		s.Resources["Topic0"] = cfn.MustRaw(map[string]any{"Type": "AWS::SNS::Topic",
			"Properties": map[string]any{"DisplayName": strings.Repeat("x", pad)}})
	}
	for i := 0; i < params; i++ {
		s.Parameters[fmt.Sprintf("P%d", i)] = json.RawMessage(`{"Type":"String"}`)
	}
	for i := 0; i < outputs; i++ {
		s.Outputs[fmt.Sprintf("O%d", i)] = json.RawMessage(`{"Value":"x"}`)
	}
	return s
}

func TestLimits(t *testing.T) {
	cases := []struct {
		name  string
		stack construct.Stack
		want  string
	}{
		{"resources", limitStack(501, 0, 0, 0), "stack big has 501 resources, over the CloudFormation limit of 500"},
		{"parameters", limitStack(1, 201, 0, 0), "stack big has 201 parameters, over the CloudFormation limit of 200"},
		{"outputs", limitStack(1, 0, 201, 0), "stack big has 201 outputs, over the CloudFormation limit of 200"},
		{"bytes", limitStack(1, 0, 0, 1_000_001), "stack big template is "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, diags := Render(minimal(), Values{}, nil, &construct.Set{Stacks: []construct.Stack{tc.stack}})
			if !has(diags, diag.Fatal, tc.want, "") {
				t.Errorf("want fatal %q, got %v", tc.want, diags)
			}
		})
	}
	// Exactly at every limit is fine.
	_, _, diags := Render(minimal(), Values{}, nil, &construct.Set{Stacks: []construct.Stack{limitStack(500, 200, 200, 0)}})
	if diags.HasFatal() {
		t.Fatalf("at the limits: %v", diags)
	}
}

// TestUploadByURL: a template over 51,200 bytes cannot go in the API call's
// TemplateBody and must be marked for TemplateURL; one at or under it not.
func TestUploadByURL(t *testing.T) {
	for _, tc := range []struct {
		pad  int
		want bool
	}{{0, false}, {51_200, true}} {
		files, specs, diags := Render(minimal(), Values{}, nil, &construct.Set{Stacks: []construct.Stack{limitStack(1, 0, 0, tc.pad)}})
		if diags.HasFatal() {
			t.Fatal(diags)
		}
		if specs[0].UploadByURL != tc.want || (len(files[0].Content) > cfn.MaxTemplateBody) != tc.want {
			t.Errorf("%d bytes: UploadByURL %v, want %v", len(files[0].Content), specs[0].UploadByURL, tc.want)
		}
	}
}

func TestClassicAPILoadBalancer(t *testing.T) {
	set, diags := Initialise(existingVPC(), Values{APILoadBalancer: "classic"})
	if diags.HasFatal() {
		t.Fatal(diags)
	}
	cp := stackOf(t, set, "control-plane")
	if ty := resource(t, cp, "LoadBalancer")["Type"]; ty != "AWS::ElasticLoadBalancing::LoadBalancer" {
		t.Errorf("load balancer type %v", ty)
	}
	if _, ok := cp.Resources["TargetGroup"]; ok {
		t.Error("a target group next to a classic load balancer")
	}
	asg, _ := json.Marshal(resource(t, cp, "AutoScalingGroup")["Properties"].(map[string]any)["LoadBalancerNames"])
	if string(asg) != `[{"Ref":"LoadBalancer"}]` {
		t.Errorf("controllers register with %s", asg)
	}
	rec, _ := json.Marshal(resource(t, cp, "APIEndpointRecord")["Properties"].(map[string]any)["AliasTarget"])
	if !strings.Contains(string(rec), "CanonicalHostedZoneNameID") {
		t.Errorf("alias target %s", rec)
	}
	_, diags = Initialise(minimal(), Values{APILoadBalancer: "alb"})
	if !has(diags, diag.Fatal, `apiLoadBalancer "alb"`, "plugins.cloudformation.values.apiLoadBalancer") {
		t.Errorf("unknown kind: %v", diags)
	}
}

func TestRenderRefusesSourceFromMissingStack(t *testing.T) {
	set := initialise(t, minimal())
	var kept []construct.Stack
	for _, s := range set.Stacks {
		if s.Name != "network" {
			kept = append(kept, s)
		}
	}
	set.Stacks = kept
	_, _, diags := Render(minimal(), Values{}, nil, set)
	if !has(diags, diag.Fatal, "stack etcd: parameter SecurityGroupId comes from stack network, which no plugin contributes", "") {
		t.Errorf("want a fatal for the missing network stack: %v", diags)
	}
}

// Issue 10, points 1 and 2, on the real control-plane stack: two plugins
// replacing the API load balancer's Tags is a conflict naming both, in
// either order; appending with RFC 6902 operations keeps the built-in's
// Name and cluster tags and both plugins' tags in the rendered template.
func TestTwoPluginsTagTheAPILoadBalancer(t *testing.T) {
	c := minimal()
	set := initialise(t, c)
	mergeTags := func(key string) *construct.Set {
		return &construct.Set{Patches: []construct.Patch{{Stack: names.StackControlPlane, LogicalID: names.APILoadBalancer,
			Merge: json.RawMessage(`{"Properties":{"Tags":[{"Key":"` + key + `","Value":"1"}]}}`)}}}
	}
	appendTag := func(key string) *construct.Set {
		return &construct.Set{Patches: []construct.Patch{{Stack: names.StackControlPlane, LogicalID: names.APILoadBalancer,
			Operations: json.RawMessage(`[{"op":"add","path":"/Properties/Tags/-","value":{"Key":"` + key + `","Value":"1"}}]`)}}}
	}
	run := func(a, b string, patch func(string) *construct.Set) ([]stage.File, diag.List) {
		m, diags := merge.MergeWith([]merge.Contribution{
			{Plugin: "cloudformation", Set: set}, {Plugin: a, Set: patch(a)}, {Plugin: b, Set: patch(b)},
		}, merge.Options{Late: []merge.LateStacks{{Plugin: "iam", Stacks: []string{names.StackIAM}}}})
		if diags.HasFatal() {
			return nil, diags
		}
		files, _, rd := Render(c, Values{}, nil, m)
		return files, rd
	}
	for _, order := range [][2]string{{"team", "cost"}, {"cost", "team"}} {
		_, diags := run(order[0], order[1], mergeTags)
		if len(diags) != 1 || diags[0].Plugin != order[1] || diags[0].Path != "constructs.patches[0]" ||
			!strings.Contains(diags[0].Message, `plugins "`+order[0]+`" and "`+order[1]+`" both patch /Properties/Tags of resource "LoadBalancer" in stack "control-plane"`) {
			t.Errorf("two plugins replacing the tags (%v): %v", order, diags)
		}

		files, diags := run(order[0], order[1], appendTag)
		if diags.HasFatal() {
			t.Fatal(diags)
		}
		var tmpl struct {
			Resources map[string]struct {
				Properties struct{ Tags []struct{ Key string } }
			}
		}
		for _, f := range files {
			if f.Path == "stacks/control-plane.json" {
				if err := json.Unmarshal(f.Content, &tmpl); err != nil {
					t.Fatal(err)
				}
			}
		}
		var keys []string
		for _, tg := range tmpl.Resources["LoadBalancer"].Properties.Tags {
			keys = append(keys, tg.Key)
		}
		want := "Name kubernetes.io/cluster/" + c.ClusterName + " " + order[0] + " " + order[1]
		if strings.Join(keys, " ") != want {
			t.Errorf("tags %v, want %s", keys, want)
		}
	}
}

// TestArmPoolsBootTheArm64Image: a1 and the Graviton families get the arm64
// image, everything else the x86_64 one (issue 11: a1.* got the x86_64 image).
func TestArmPoolsBootTheArm64Image(t *testing.T) {
	c := minimal()
	c.NodePools = []config.NodePool{
		{Name: "a1", InstanceType: "a1.large", MinSize: 1, MaxSize: 1, DesiredCapacity: 1},
		{Name: "graviton", InstanceType: "c7gn.large", MinSize: 1, MaxSize: 1, DesiredCapacity: 1},
		{Name: "intel", InstanceType: "m5.large", MinSize: 1, MaxSize: 1, DesiredCapacity: 1},
	}
	set := initialise(t, c)
	for pool, want := range map[string]string{"a1": defaultImageArm, "graviton": defaultImageArm, "intel": defaultImageX86} {
		var p struct{ Default string }
		if err := json.Unmarshal(stackOf(t, set, "nodepool-"+pool).Parameters[paramImageID], &p); err != nil || p.Default != want {
			t.Errorf("pool %s boots %q (%v), want %s", pool, p.Default, err, want)
		}
	}
}

// hopLimits reads the IMDSv2 token hop limit of every rendered launch
// template, by stack.
func hopLimits(t *testing.T, files []stage.File) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, f := range files {
		var tpl struct {
			Resources map[string]struct {
				Properties struct {
					LaunchTemplateData *struct {
						MetadataOptions struct {
							HttpTokens              string
							HttpPutResponseHopLimit int
						}
					}
				}
			}
		}
		if err := json.Unmarshal(f.Content, &tpl); err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		if d := tpl.Resources[names.LaunchTemplate].Properties.LaunchTemplateData; d != nil {
			if d.MetadataOptions.HttpTokens != "required" {
				t.Errorf("%s: HttpTokens %q, want required", f.Path, d.MetadataOptions.HttpTokens)
			}
			out[strings.TrimSuffix(strings.TrimPrefix(f.Path, "stacks/"), ".json")] = d.MetadataOptions.HttpPutResponseHopLimit
		}
	}
	return out
}

// Every machine's metadata service answers its node alone (hop limit 1),
// unless a plugin asks that the pods of its role or pool reach it (2); a
// request that opens nothing is fatal, naming its plugin.
func TestPodMetadataRequestsRaiseTheHopLimit(t *testing.T) {
	worker := func(pool string) construct.Target { return construct.Target{Role: construct.Worker, NodePool: pool} }
	tests := []struct {
		name  string
		reqs  []construct.PodMetadataAccess
		want  map[string]int
		fatal string
	}{
		{name: "none", want: map[string]int{"etcd": 1, "control-plane": 1, "nodepool-workers": 1, "nodepool-spot-arm": 1}},
		{
			name: "every pool",
			reqs: []construct.PodMetadataAccess{{Target: worker("")}},
			want: map[string]int{"etcd": 1, "control-plane": 1, "nodepool-workers": 2, "nodepool-spot-arm": 2},
		},
		{
			name: "one pool and the controllers",
			reqs: []construct.PodMetadataAccess{{Target: worker("spot-arm")}, {Target: construct.Target{Role: construct.Controller}}},
			want: map[string]int{"etcd": 1, "control-plane": 2, "nodepool-workers": 1, "nodepool-spot-arm": 2},
		},
		{
			name:  "a pool cluster.yaml lacks",
			reqs:  []construct.PodMetadataAccess{{Target: worker("gpu")}},
			fatal: "plugin pods asks that pods reach the metadata service of worker/gpu, which is no node pool of cluster.yaml",
		},
		{
			name:  "no such role",
			reqs:  []construct.PodMetadataAccess{{Target: construct.Target{Role: "bastion"}}},
			fatal: `plugin pods asks that pods reach the metadata service of role "bastion", which is none of controller, etcd, worker`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := existingVPC()
			set := initialise(t, c)
			m, diags := merge.MergeWith([]merge.Contribution{
				{Plugin: "cloudformation", Set: set},
				{Plugin: "pods", Set: &construct.Set{PodMetadata: tt.reqs}},
			}, merge.Options{Late: []merge.LateStacks{{Plugin: "iam", Stacks: []string{names.StackIAM}}}})
			if diags.HasFatal() {
				t.Fatal(diags)
			}
			before := string(stackOf(t, m, "nodepool-workers").Resources[names.LaunchTemplate])
			files, _, diags := Render(c, Values{}, nil, m)
			if tt.fatal != "" {
				if !has(diags, diag.Fatal, tt.fatal, "") {
					t.Errorf("diagnostics %v, want %q", diags, tt.fatal)
				}
				return
			}
			if diags.HasFatal() {
				t.Fatal(diags)
			}
			if got := hopLimits(t, files); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("hop limits %v, want %v", got, tt.want)
			}
			if after := string(stackOf(t, m, "nodepool-workers").Resources[names.LaunchTemplate]); after != before {
				t.Error("render modified the merged set")
			}
		})
	}
}

// The hop limit is kube-aws's: a patch cannot open the metadata service.
func TestPatchCannotOpenTheMetadataService(t *testing.T) {
	set := initialise(t, minimal())
	_, diags := merged(set, construct.Patch{Stack: "nodepool-workers", LogicalID: "LaunchTemplate",
		Merge: json.RawMessage(`{"Properties":{"LaunchTemplateData":{"MetadataOptions":{"HttpPutResponseHopLimit":2}}}}`)})
	if !has(diags, diag.Fatal, `may not change protected path /Properties/LaunchTemplateData/MetadataOptions of resource "LaunchTemplate" in stack "nodepool-workers"`, "constructs.patches[0]") {
		t.Errorf("diagnostics %v", diags)
	}
}

// TestInternalAPILoadBalancerDoesNotPreserveClientAddresses: behind an
// internal network load balancer a controller's own connection to the API
// endpoint can be sent back to it, and AWS never answers it while client
// addresses are preserved; an internet-facing one keeps its clients'
// addresses. A classic load balancer has no target group.
func TestInternalAPILoadBalancerDoesNotPreserveClientAddresses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		private bool
		want    string
	}{
		{"internet-facing", false, "null"},
		{"internal", true, `[{"Key":"preserve_client_ip.enabled","Value":"false"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := existingVPC()
			c.APIEndpoint.Private = tc.private
			cp := stackOf(t, initialise(t, c), "control-plane")
			scheme := resource(t, cp, "LoadBalancer")["Properties"].(map[string]any)["Scheme"]
			if wantScheme := map[bool]string{false: "internet-facing", true: "internal"}[tc.private]; scheme != wantScheme {
				t.Fatalf("scheme %v, want %s", scheme, wantScheme)
			}
			attrs, _ := json.Marshal(resource(t, cp, "TargetGroup")["Properties"].(map[string]any)["TargetGroupAttributes"])
			if string(attrs) != tc.want {
				t.Errorf("target group attributes %s, want %s", attrs, tc.want)
			}
		})
	}
}

// TestAPIHealthCheckWithinAWSLimits: both kinds of API load balancer check
// /readyz with the same settings, within what AWS takes: an interval of 5 to
// 300 s, a timeout of at least 2 s below it, thresholds of 2 to 10.
func TestAPIHealthCheckWithinAWSLimits(t *testing.T) {
	num := func(v any) int {
		switch x := v.(type) {
		case float64:
			return int(x)
		case string:
			n, err := strconv.Atoi(x)
			if err != nil {
				t.Fatalf("%q is not a number", x)
			}
			return n
		}
		t.Fatalf("%v (%T) is not a number", v, v)
		return 0
	}
	for _, kind := range []string{"network", "classic"} {
		t.Run(kind, func(t *testing.T) {
			set, diags := Initialise(existingVPC(), Values{APILoadBalancer: kind})
			if diags.HasFatal() {
				t.Fatal(diags)
			}
			cp := stackOf(t, set, "control-plane")
			var interval, timeout, healthy, unhealthy int
			if kind == "network" {
				p := resource(t, cp, "TargetGroup")["Properties"].(map[string]any)
				interval, timeout = num(p["HealthCheckIntervalSeconds"]), num(p["HealthCheckTimeoutSeconds"])
				healthy, unhealthy = num(p["HealthyThresholdCount"]), num(p["UnhealthyThresholdCount"])
			} else {
				h := resource(t, cp, "LoadBalancer")["Properties"].(map[string]any)["HealthCheck"].(map[string]any)
				interval, timeout = num(h["Interval"]), num(h["Timeout"])
				healthy, unhealthy = num(h["HealthyThreshold"]), num(h["UnhealthyThreshold"])
			}
			if got := [4]int{interval, timeout, healthy, unhealthy}; got != [4]int{apiHealth.interval, apiHealth.timeout, apiHealth.healthy, apiHealth.unhealthy} {
				t.Errorf("interval, timeout, thresholds %v, want apiHealth's %+v", got, apiHealth)
			}
			if interval < 5 || interval > 300 || timeout < 2 || timeout >= interval || healthy < 2 || healthy > 10 || unhealthy < 2 || unhealthy > 10 {
				t.Errorf("outside AWS's limits: interval %d, timeout %d, thresholds %d/%d", interval, timeout, healthy, unhealthy)
			}
		})
	}
}
