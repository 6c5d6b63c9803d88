package merge

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
)

var (
	controller = construct.Target{Role: construct.Controller}
	worker     = construct.Target{Role: construct.Worker}
	pool1      = construct.Target{Role: construct.Worker, NodePool: "pool1"}
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func stack(name string, resources map[string]string) construct.Stack {
	s := construct.Stack{Name: name, Resources: map[string]json.RawMessage{}}
	for k, v := range resources {
		s.Resources[k] = raw(v)
	}
	return s
}

func two(a, b construct.Set) []Contribution {
	return []Contribution{{Plugin: "alpha", Set: &a}, {Plugin: "beta", Set: &b}}
}

// mustMerge merges and fails on any diagnostic.
func mustMerge(t *testing.T, c []Contribution) *construct.Set {
	t.Helper()
	out, diags := Merge(c)
	if len(diags) > 0 {
		t.Fatalf("unexpected diagnostics:\n%s", diags.Error())
	}
	return out
}

func resourceJSON(t *testing.T, s *construct.Set, stackName, id string) map[string]any {
	t.Helper()
	for _, st := range s.Stacks {
		if st.Name != stackName {
			continue
		}
		b, ok := st.Resources[id]
		if !ok {
			t.Fatalf("stack %s has no resource %s", stackName, id)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("resource %s/%s: %v", stackName, id, err)
		}
		return v
	}
	t.Fatalf("no stack %s", stackName)
	return nil
}

// checkConflict asserts diags is exactly one well-formed merge fatal.
func checkConflict(t *testing.T, diags diag.List, plugin, path string, contains ...string) {
	t.Helper()
	if len(diags) != 1 {
		t.Fatalf("want 1 diagnostic, got %d:\n%s", len(diags), diags.Error())
	}
	d := diags[0]
	if d.Severity != diag.Fatal || d.Stage != "initialise" {
		t.Errorf("severity/stage = %s/%s, want fatal/initialise", d.Severity, d.Stage)
	}
	if d.Plugin != plugin {
		t.Errorf("plugin = %q, want %q", d.Plugin, plugin)
	}
	if d.Path != path {
		t.Errorf("path = %q, want %q", d.Path, path)
	}
	if d.Hint == "" {
		t.Errorf("no hint in %s", d)
	}
	for _, c := range contains {
		if !strings.Contains(d.Message, c) {
			t.Errorf("message does not contain %q:\n%s", c, d.Message)
		}
	}
}

func TestStacksMergeSectionBySection(t *testing.T) {
	a := construct.Set{Stacks: []construct.Stack{{
		Name:       "network",
		DependsOn:  []string{"iam", "etcd"},
		Resources:  map[string]json.RawMessage{"VPC": raw(`{"Type":"AWS::EC2::VPC"}`)},
		Outputs:    map[string]json.RawMessage{"VPCId": raw(`{"Value":{"Ref":"VPC"}}`)},
		Parameters: map[string]json.RawMessage{"Cidr": raw(`{"Type":"String"}`)},
		Tags:       map[string]string{"owner": "ops"},
	}}}
	b := construct.Set{Stacks: []construct.Stack{{
		Name:             "network",
		Description:      "the network",
		DependsOn:        []string{"etcd", "dns"},
		Resources:        map[string]json.RawMessage{"Flow": raw(`{"Type":"AWS::EC2::FlowLog"}`)},
		Conditions:       map[string]json.RawMessage{"HasFlow": raw(`{"Fn::Equals":["a","a"]}`)},
		Mappings:         map[string]json.RawMessage{"Regions": raw(`{"eu-west-1":{"ami":"x"}}`)},
		Tags:             map[string]string{"team": "net"},
		ParameterSources: map[string]names.Source{"Role": names.From("iam", "RoleArn")},
	}, {Name: "addon", Description: "extra", Resources: map[string]json.RawMessage{"Q": raw(`{"Type":"AWS::SQS::Queue"}`)}}}}
	c := construct.Set{Stacks: []construct.Stack{{Name: "network", Description: "ignored: the first description wins"}}}
	out := mustMerge(t, []Contribution{{"alpha", &a}, {"beta", &b}, {"gamma", &c}})
	if len(out.Stacks) != 2 || out.Stacks[0].Name != "network" || out.Stacks[1].Name != "addon" {
		t.Fatalf("stacks = %+v", out.Stacks)
	}
	n := out.Stacks[0]
	if n.Description != "the network" {
		t.Errorf("description = %q", n.Description)
	}
	if want := []string{"iam", "etcd", "dns"}; !reflect.DeepEqual(n.DependsOn, want) {
		t.Errorf("dependsOn = %v, want %v", n.DependsOn, want)
	}
	for sec, got := range map[string]int{"resources": len(n.Resources), "outputs": len(n.Outputs), "parameters": len(n.Parameters),
		"conditions": len(n.Conditions), "mappings": len(n.Mappings), "tags": len(n.Tags), "parameterSources": len(n.ParameterSources)} {
		want := 1
		if sec == "resources" || sec == "tags" {
			want = 2
		}
		if got != want {
			t.Errorf("%s has %d entries, want %d", sec, got, want)
		}
	}
}

func TestConflicts(t *testing.T) {
	net := func(mod func(*construct.Stack)) construct.Set {
		s := construct.Stack{Name: "network"}
		mod(&s)
		return construct.Set{Stacks: []construct.Stack{s}}
	}
	tests := []struct {
		name     string
		a, b     construct.Set
		path     string
		contains []string
	}{
		{
			name: "resource",
			a: net(func(s *construct.Stack) {
				s.Resources = map[string]json.RawMessage{"VPC": raw(`{"Type":"AWS::EC2::VPC","Properties":{"CidrBlock":"10.0.0.0/16"}}`)}
			}),
			b: net(func(s *construct.Stack) {
				s.Resources = map[string]json.RawMessage{"VPC": raw(`{"Type":"AWS::EC2::VPC","Properties":{"CidrBlock":"10.1.0.0/16"}}`)}
			}),
			path: "constructs.stacks[network].resources.VPC", contains: []string{"/Properties/CidrBlock", `"10.0.0.0/16"`, `"10.1.0.0/16"`},
		},
		{
			name: "output",
			a:    net(func(s *construct.Stack) { s.Outputs = map[string]json.RawMessage{"Id": raw(`{"Value":{"Ref":"VPC"}}`)} }),
			b: net(func(s *construct.Stack) {
				s.Outputs = map[string]json.RawMessage{"Id": raw(`{"Value":{"Ref":"OtherVPC"}}`)}
			}),
			path: "constructs.stacks[network].outputs.Id", contains: []string{`"VPC"`, `"OtherVPC"`},
		},
		{
			name: "parameter",
			a:    net(func(s *construct.Stack) { s.Parameters = map[string]json.RawMessage{"Cidr": raw(`{"Type":"String"}`)} }),
			b:    net(func(s *construct.Stack) { s.Parameters = map[string]json.RawMessage{"Cidr": raw(`{"Type":"Number"}`)} }),
			path: "constructs.stacks[network].parameters.Cidr", contains: []string{`"String"`, `"Number"`},
		},
		{
			name: "condition",
			a: net(func(s *construct.Stack) {
				s.Conditions = map[string]json.RawMessage{"C": raw(`{"Fn::Equals":["a","a"]}`)}
			}),
			b: net(func(s *construct.Stack) {
				s.Conditions = map[string]json.RawMessage{"C": raw(`{"Fn::Equals":["a","b"]}`)}
			}),
			path: "constructs.stacks[network].conditions.C", contains: []string{"/Fn::Equals/1"},
		},
		{
			name: "mapping",
			a:    net(func(s *construct.Stack) { s.Mappings = map[string]json.RawMessage{"M": raw(`{"r":{"ami":"x"}}`)} }),
			b: net(func(s *construct.Stack) {
				s.Mappings = map[string]json.RawMessage{"M": raw(`{"r":{"ami":"y"},"s":{}}`)}
			}),
			path: "constructs.stacks[network].mappings.M", contains: []string{`"x"`, `"y"`},
		},
		{
			name: "tag",
			a:    net(func(s *construct.Stack) { s.Tags = map[string]string{"owner": "ops"} }),
			b:    net(func(s *construct.Stack) { s.Tags = map[string]string{"owner": "dev"} }),
			path: "constructs.stacks[network].tags.owner", contains: []string{`"ops"`, `"dev"`},
		},
		{
			name: "parameter source",
			a:    net(func(s *construct.Stack) { s.ParameterSources = map[string]names.Source{"Role": names.From("iam", "A")} }),
			b:    net(func(s *construct.Stack) { s.ParameterSources = map[string]names.Source{"Role": names.From("iam", "B")} }),
			path: "constructs.stacks[network].parameterSources.Role", contains: []string{`"iam.A"`, `"iam.B"`},
		},
		{
			name: "unit content",
			a:    construct.Set{Units: []construct.Unit{{Target: controller, Name: "x.service", Content: "[Service]\nExecStart=/a\n"}}},
			b:    construct.Set{Units: []construct.Unit{{Target: controller, Name: "x.service", Content: "[Service]\nExecStart=/b\n"}}},
			path: "constructs.units[controller:x.service]", contains: []string{"line 2", "ExecStart=/a", "ExecStart=/b"},
		},
		{
			name: "unit enable",
			a:    construct.Set{Units: []construct.Unit{{Target: worker, Name: "x.service", Content: "c", Enable: true}}},
			b:    construct.Set{Units: []construct.Unit{{Target: worker, Name: "x.service", Content: "c"}}},
			path: "constructs.units[worker:x.service]", contains: []string{"enable", "true", "false"},
		},
		{
			name: "drop-in",
			a:    construct.Set{Units: []construct.Unit{{Target: worker, Name: "kubelet.service", DropIns: []construct.DropIn{{Name: "10-x.conf", Content: "A=1"}}}}},
			b:    construct.Set{Units: []construct.Unit{{Target: worker, Name: "kubelet.service", DropIns: []construct.DropIn{{Name: "10-x.conf", Content: "A=2"}}}}},
			path: "constructs.units[worker:kubelet.service].dropIns[10-x.conf]", contains: []string{"A=1", "A=2"},
		},
		{
			name: "file content",
			a:    construct.Set{Files: []construct.File{{Target: pool1, Path: "/etc/x", Content: "one"}}},
			b:    construct.Set{Files: []construct.File{{Target: pool1, Path: "/etc/x", Content: "two"}}},
			path: "constructs.files[worker/pool1:/etc/x]", contains: []string{`"one"`, `"two"`},
		},
		{
			name: "file mode and owner",
			a:    construct.Set{Files: []construct.File{{Target: controller, Path: "/etc/x", Content: "c", Mode: "0644", Owner: "root"}}},
			b:    construct.Set{Files: []construct.File{{Target: controller, Path: "/etc/x", Content: "c", Mode: "0600", Owner: "core"}}},
			path: "constructs.files[controller:/etc/x]", contains: []string{`"0644"`, `"0600"`, `"root"`, `"core"`},
		},
		{
			name: "file sensitive",
			a:    construct.Set{Files: []construct.File{{Target: controller, Path: "/etc/key", Content: "((secret:a/x))", Sensitive: true}}},
			b:    construct.Set{Files: []construct.File{{Target: controller, Path: "/etc/key", Content: "((secret:b/y))"}}},
			path: "constructs.files[controller:/etc/key]", contains: []string{"sensitive, not shown", "sensitive: \"alpha\" sets true"},
		},
		{
			name: "single-valued API server flag",
			a:    construct.Set{APIServer: construct.APIServer{Flags: []construct.Flag{{Name: "service-cluster-ip-range", Value: "10.3.0.0/24"}}}},
			b:    construct.Set{APIServer: construct.APIServer{Flags: []construct.Flag{{Name: "--service-cluster-ip-range", Value: "10.4.0.0/24"}}}},
			path: "constructs.apiServer.flags[service-cluster-ip-range]", contains: []string{`"10.3.0.0/24"`, `"10.4.0.0/24"`},
		},
		{
			name: "feature gate set both ways",
			a:    construct.Set{APIServer: construct.APIServer{Flags: []construct.Flag{{Name: "feature-gates", Value: "A=true,B=true"}}}},
			b:    construct.Set{APIServer: construct.APIServer{Flags: []construct.Flag{{Name: "feature-gates", Value: "B=false"}}}},
			path: "constructs.apiServer.flags[feature-gates]", contains: []string{`"B=true"`, `"B=false"`},
		},
		{
			name: "admission plugin enabled and disabled",
			a:    construct.Set{APIServer: construct.APIServer{Flags: []construct.Flag{{Name: "enable-admission-plugins", Value: "NodeRestriction"}}}},
			b:    construct.Set{APIServer: construct.APIServer{Flags: []construct.Flag{{Name: "disable-admission-plugins", Value: "NodeRestriction"}}}},
			path: "constructs.apiServer.flags[disable-admission-plugins]", contains: []string{"NodeRestriction"},
		},
		{
			name: "single-valued kubelet flag",
			a:    construct.Set{KubeletFlags: []construct.TargetedFlag{{Target: pool1, Flag: construct.Flag{Name: "max-pods", Value: "110"}}}},
			b:    construct.Set{KubeletFlags: []construct.TargetedFlag{{Target: pool1, Flag: construct.Flag{Name: "max-pods", Value: "58"}}}},
			path: "constructs.kubeletFlags[worker/pool1:max-pods]", contains: []string{`"110"`, `"58"`},
		},
		{
			name: "kubelet node-labels key",
			a:    construct.Set{KubeletFlags: []construct.TargetedFlag{{Target: worker, Flag: construct.Flag{Name: "node-labels", Value: "tier=web"}}}},
			b:    construct.Set{KubeletFlags: []construct.TargetedFlag{{Target: worker, Flag: construct.Flag{Name: "node-labels", Value: "tier=db"}}}},
			path: "constructs.kubeletFlags[worker:node-labels]", contains: []string{`"tier=web"`, `"tier=db"`},
		},
		{
			name: "API server volume",
			a:    construct.Set{APIServer: construct.APIServer{Volumes: []construct.Volume{{Name: "audit", HostPath: "/var/log/a", MountPath: "/a"}}}},
			b:    construct.Set{APIServer: construct.APIServer{Volumes: []construct.Volume{{Name: "audit", HostPath: "/var/log/b", MountPath: "/a"}}}},
			path: "constructs.apiServer.volumes[audit]", contains: []string{"/var/log/a", "/var/log/b"},
		},
		{
			name: "node label",
			a:    construct.Set{NodeLabels: []construct.NodeLabel{{Target: pool1, Key: "tier", Value: "web"}}},
			b:    construct.Set{NodeLabels: []construct.NodeLabel{{Target: pool1, Key: "tier", Value: "db"}}},
			path: "constructs.nodeLabels[worker/pool1:tier]", contains: []string{`"web"`, `"db"`},
		},
		{
			name: "node taint",
			a:    construct.Set{NodeTaints: []construct.NodeTaint{{Target: pool1, Key: "gpu", Value: "a", Effect: "NoSchedule"}}},
			b:    construct.Set{NodeTaints: []construct.NodeTaint{{Target: pool1, Key: "gpu", Value: "b", Effect: "NoSchedule"}}},
			path: "constructs.nodeTaints[worker/pool1:gpu:NoSchedule]", contains: []string{`"a"`, `"b"`},
		},
		{
			name: "IAM Sid",
			a:    construct.Set{IAM: []construct.IAMStatement{{Target: controller, Sid: "S3", Effect: "Allow", Actions: []string{"s3:GetObject"}, Resources: []string{"*"}}}},
			b:    construct.Set{IAM: []construct.IAMStatement{{Target: controller, Sid: "S3", Effect: "Allow", Actions: []string{"s3:*"}, Resources: []string{"*"}}}},
			path: "constructs.iam[controller:S3]", contains: []string{"s3:GetObject", "s3:*"},
		},
		{
			name: "Helm release chart",
			a:    construct.Set{HelmReleases: []construct.HelmRelease{{Name: "dex", Namespace: "auth", Chart: construct.Chart{Repository: "https://charts.dexidp.io", Name: "dex", Version: "0.1.0"}}}},
			b:    construct.Set{HelmReleases: []construct.HelmRelease{{Name: "dex", Namespace: "auth", Chart: construct.Chart{Repository: "https://charts.dexidp.io", Name: "dex", Version: "0.2.0"}}}},
			path: "constructs.helmReleases[auth/dex]", contains: []string{"0.1.0", "0.2.0"},
		},
		{
			name: "Helm release values",
			a:    construct.Set{HelmReleases: []construct.HelmRelease{{Name: "dex", Namespace: "auth", Values: raw(`{"replicas":1}`)}}},
			b:    construct.Set{HelmReleases: []construct.HelmRelease{{Name: "dex", Namespace: "auth", Values: raw(`{"replicas":2}`)}}},
			path: "constructs.helmReleases[auth/dex]", contains: []string{"/replicas", "1", "2"},
		},
		{
			name: "manifest",
			a:    construct.Set{Manifests: []construct.Manifest{{Name: "ns", Content: "kind: Namespace\nname: a\n"}}},
			b:    construct.Set{Manifests: []construct.Manifest{{Name: "ns", Content: "kind: Namespace\nname: b\n"}}},
			path: "constructs.manifests[ns]", contains: []string{"name: a", "name: b"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := Merge(two(tc.a, tc.b))
			checkConflict(t, diags, "beta", tc.path, append(tc.contains, `"alpha"`, `"beta"`)...)
			// Order never decides: the other way round is the same conflict.
			_, diags = Merge(two(tc.b, tc.a))
			checkConflict(t, diags, "beta", tc.path, `"alpha"`, `"beta"`)
		})
	}
}

func TestIdenticalDuplicatesAccepted(t *testing.T) {
	tests := []struct {
		name string
		a, b construct.Set
	}{
		{"resource, semantically equal JSON",
			construct.Set{Stacks: []construct.Stack{stack("s", map[string]string{"R": `{"Type":"T","Properties":{"A":1,"B":[1.0,"x"]}}`})}},
			construct.Set{Stacks: []construct.Stack{stack("s", map[string]string{"R": `{ "Properties": {"B": [1e0, "x"], "A": 10e-1}, "Type": "T" }`})}}},
		{"tags and parameter sources",
			construct.Set{Stacks: []construct.Stack{{Name: "s", Tags: map[string]string{"a": "1"}, ParameterSources: map[string]names.Source{"P": names.From("iam", "R")}}}},
			construct.Set{Stacks: []construct.Stack{{Name: "s", Tags: map[string]string{"a": "1"}, ParameterSources: map[string]names.Source{"P": names.From("iam", "R")}}}}},
		{"unit and drop-in",
			construct.Set{Units: []construct.Unit{{Target: worker, Name: "u.service", Content: "c", Enable: true, DropIns: []construct.DropIn{{Name: "d.conf", Content: "x"}}}}},
			construct.Set{Units: []construct.Unit{{Target: worker, Name: "u.service", Content: "c", Enable: true, DropIns: []construct.DropIn{{Name: "d.conf", Content: "x"}}}}}},
		{"file with the same mode spelled differently",
			construct.Set{Files: []construct.File{{Target: worker, Path: "/p", Mode: "0644", Content: "c"}}},
			construct.Set{Files: []construct.File{{Target: worker, Path: "/p", Mode: "644", Content: "c"}}}},
		{"flags",
			construct.Set{APIServer: construct.APIServer{Flags: []construct.Flag{{Name: "v", Value: "2"}}}, KubeletFlags: []construct.TargetedFlag{{Target: worker, Flag: construct.Flag{Name: "max-pods", Value: "58"}}}},
			construct.Set{APIServer: construct.APIServer{Flags: []construct.Flag{{Name: "v", Value: "2"}}}, KubeletFlags: []construct.TargetedFlag{{Target: worker, Flag: construct.Flag{Name: "max-pods", Value: "58"}}}}},
		{"volume, label, taint",
			construct.Set{APIServer: construct.APIServer{Volumes: []construct.Volume{{Name: "v", HostPath: "/h", MountPath: "/m"}}}, NodeLabels: []construct.NodeLabel{{Target: worker, Key: "k", Value: "v"}}, NodeTaints: []construct.NodeTaint{{Target: worker, Key: "k", Effect: "NoSchedule"}}},
			construct.Set{APIServer: construct.APIServer{Volumes: []construct.Volume{{Name: "v", HostPath: "/h", MountPath: "/m"}}}, NodeLabels: []construct.NodeLabel{{Target: worker, Key: "k", Value: "v"}}, NodeTaints: []construct.NodeTaint{{Target: worker, Key: "k", Effect: "NoSchedule"}}}},
		{"helm release, no values and empty values",
			construct.Set{HelmReleases: []construct.HelmRelease{{Name: "r", Namespace: "n", Chart: construct.Chart{Path: "/c"}}}},
			construct.Set{HelmReleases: []construct.HelmRelease{{Name: "r", Namespace: "n", Chart: construct.Chart{Path: "/c"}, Values: raw(`{}`)}}}},
		{"helm release, the later plugin naming itself",
			construct.Set{HelmReleases: []construct.HelmRelease{{Name: "r", Namespace: "n", Chart: construct.Chart{Path: "/c"}}}},
			construct.Set{HelmReleases: []construct.HelmRelease{{Name: "r", Namespace: "n", Chart: construct.Chart{Path: "/c"}, Plugin: "beta"}}}},
		{"manifest",
			construct.Set{Manifests: []construct.Manifest{{Name: "m", Content: "kind: X"}}},
			construct.Set{Manifests: []construct.Manifest{{Name: "m", Content: "kind: X"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := mustMerge(t, two(tc.a, tc.b))
			single := mustMerge(t, []Contribution{{"alpha", &tc.a}})
			if !reflect.DeepEqual(out, single) {
				t.Errorf("merging an identical duplicate changed the result:\n got %+v\nwant %+v", out, single)
			}
		})
	}
}

func TestAdmissionPluginsMergeAsOrderedSet(t *testing.T) {
	f := func(v string) construct.Set {
		return construct.Set{APIServer: construct.APIServer{Flags: []construct.Flag{{Name: "enable-admission-plugins", Value: v}}}}
	}
	a, b, c := f("NodeRestriction,PodSecurity"), f("PodSecurity, ResourceQuota,NodeRestriction,"), f("AlwaysPullImages")
	out := mustMerge(t, []Contribution{{"a", &a}, {"b", &b}, {"c", &c}})
	want := []construct.Flag{{Name: "enable-admission-plugins", Value: "NodeRestriction,PodSecurity,ResourceQuota,AlwaysPullImages", Plugin: "a"}}
	if !reflect.DeepEqual(out.APIServer.Flags, want) {
		t.Errorf("flags = %+v, want %+v", out.APIServer.Flags, want)
	}
}

func TestKubeletListFlagsPerTarget(t *testing.T) {
	a := construct.Set{KubeletFlags: []construct.TargetedFlag{
		{Target: pool1, Flag: construct.Flag{Name: "node-labels", Value: "a=1"}},
		{Target: worker, Flag: construct.Flag{Name: "node-labels", Value: "a=2"}}, // another target: no conflict
		{Target: pool1, Flag: construct.Flag{Name: "register-with-taints", Value: "gpu=true:NoSchedule"}},
	}}
	b := construct.Set{KubeletFlags: []construct.TargetedFlag{
		{Target: pool1, Flag: construct.Flag{Name: "node-labels", Value: "b=1,a=1"}},
		{Target: pool1, Flag: construct.Flag{Name: "register-with-taints", Value: "gpu=true:NoExecute"}}, // same key, other effect
	}}
	out := mustMerge(t, two(a, b))
	got := map[string]string{}
	for _, f := range out.KubeletFlags {
		got[f.Target.String()+" "+f.Name] = f.Value
	}
	want := map[string]string{
		"worker/pool1 node-labels":          "a=1,b=1",
		"worker node-labels":                "a=2",
		"worker/pool1 register-with-taints": "gpu=true:NoSchedule,gpu=true:NoExecute",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kubelet flags = %v, want %v", got, want)
	}
}

func TestUnitDropInsMergeIntoUnit(t *testing.T) {
	a := construct.Set{Units: []construct.Unit{{Target: worker, Name: "kubelet.service", DropIns: []construct.DropIn{{Name: "20-b.conf", Content: "b"}}}}}
	b := construct.Set{Units: []construct.Unit{{Target: worker, Name: "kubelet.service", Content: "[Service]", DropIns: []construct.DropIn{{Name: "10-a.conf", Content: "a"}}}}}
	c := construct.Set{Units: []construct.Unit{
		{Target: worker, Name: "kubelet.service", Enable: true, DropIns: []construct.DropIn{{Name: "20-b.conf", Content: "b"}}},
		{Target: controller, Name: "kubelet.service", DropIns: []construct.DropIn{{Name: "30-c.conf", Content: "c"}}},
	}}
	out := mustMerge(t, []Contribution{{"a", &a}, {"b", &b}, {"c", &c}})
	// Each unit and drop-in names the plugin that contributed it.
	want := []construct.Unit{
		{Target: worker, Name: "kubelet.service", Content: "[Service]", Enable: true, Plugin: "b",
			DropIns: []construct.DropIn{{Name: "10-a.conf", Content: "a", Plugin: "b"}, {Name: "20-b.conf", Content: "b", Plugin: "a"}}},
		{Target: controller, Name: "kubelet.service", Plugin: "c", DropIns: []construct.DropIn{{Name: "30-c.conf", Content: "c", Plugin: "c"}}},
	}
	if !reflect.DeepEqual(out.Units, want) {
		t.Errorf("units = %+v\nwant %+v", out.Units, want)
	}
}

func TestIAMConcatenatedWithoutDuplicates(t *testing.T) {
	s := func(sid, action string) construct.IAMStatement {
		return construct.IAMStatement{Target: controller, Sid: sid, Effect: "Allow", Actions: []string{action}, Resources: []string{"*"}}
	}
	cond := s("", "ec2:Describe*")
	cond.Condition = raw(`{"StringEquals":{"a":"b","c":"d"}}`)
	cond2 := cond
	cond2.Condition = raw(`{"StringEquals":{"c":"d","a":"b"}}`)
	a := construct.Set{IAM: []construct.IAMStatement{s("", "s3:GetObject"), s("Logs", "logs:*"), cond}}
	b := construct.Set{IAM: []construct.IAMStatement{s("", "kms:Decrypt"), s("Logs", "logs:*"), s("", "s3:GetObject"), cond2}}
	out := mustMerge(t, two(a, b))
	var got []string
	for _, st := range out.IAM {
		got = append(got, st.Sid+":"+st.Actions[0])
	}
	want := []string{":s3:GetObject", "Logs:logs:*", ":ec2:Describe*", ":kms:Decrypt"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("IAM = %v, want %v", got, want)
	}
}

// TestHelmReleasesNameTheirPlugin: every merged release says which plugin
// contributed it, whatever the plugin itself put in Plugin, so that the helm
// plugin can name the owner of a broken chart.
func TestHelmReleasesNameTheirPlugin(t *testing.T) {
	a := construct.Set{HelmReleases: []construct.HelmRelease{
		{Name: "dex", Namespace: "auth", Chart: construct.Chart{Path: "/dex"}},
		{Name: "shared", Namespace: "n", Chart: construct.Chart{Path: "/s"}, Plugin: "not-me"},
	}}
	b := construct.Set{HelmReleases: []construct.HelmRelease{
		{Name: "shared", Namespace: "n", Chart: construct.Chart{Path: "/s"}},
		{Name: "ingress", Namespace: "ingress", Chart: construct.Chart{Repository: "https://charts.example", Name: "ingress-nginx", Version: "1.0.0"}},
	}}
	out := mustMerge(t, two(a, b))
	var got []string
	for _, h := range out.HelmReleases {
		got = append(got, h.Name+":"+h.Plugin)
	}
	// An identical release from two plugins belongs to the first.
	want := []string{"dex:alpha", "shared:alpha", "ingress:beta"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("releases = %v, want %v", got, want)
	}
	if a.HelmReleases[1].Plugin != "not-me" || b.HelmReleases[0].Plugin != "" {
		t.Errorf("merge changed its inputs: %+v %+v", a.HelmReleases, b.HelmReleases)
	}
}

func TestEveryConflictIsReported(t *testing.T) {
	a := construct.Set{
		Stacks:       []construct.Stack{stack("s", map[string]string{"A": `{"Type":"X"}`, "B": `{"Type":"X"}`})},
		HelmReleases: []construct.HelmRelease{{Name: "r", Namespace: "n", Chart: construct.Chart{Path: "/a"}}},
	}
	b := construct.Set{
		Stacks:       []construct.Stack{stack("s", map[string]string{"A": `{"Type":"Y"}`, "B": `{"Type":"Y"}`})},
		HelmReleases: []construct.HelmRelease{{Name: "r", Namespace: "n", Chart: construct.Chart{Path: "/b"}}},
	}
	c := b
	_, diags := Merge([]Contribution{{"a", &a}, {"b", &b}, {"c", &c}})
	var paths []string
	for _, d := range diags {
		paths = append(paths, d.Plugin+" "+d.Path)
	}
	want := []string{
		"b constructs.stacks[s].resources.A", "b constructs.stacks[s].resources.B", "b constructs.helmReleases[n/r]",
		"c constructs.stacks[s].resources.A", "c constructs.stacks[s].resources.B", "c constructs.helmReleases[n/r]",
	}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("diagnostics at %v, want %v", paths, want)
	}
}

func TestSamePluginTwice(t *testing.T) {
	a := construct.Set{Units: []construct.Unit{{Target: worker, Name: "u", Content: "1"}, {Target: worker, Name: "u", Content: "2"}}}
	_, diags := Merge([]Contribution{{"a", &a}})
	checkConflict(t, diags, "a", "constructs.units[worker:u]", `plugin "a" twice`)
}

func TestInvalidBodies(t *testing.T) {
	a := construct.Set{
		Stacks: []construct.Stack{{Name: "s",
			Resources: map[string]json.RawMessage{"R": raw(`"not an object"`), "Ok": raw(`{"Type":"T"}`)},
			Outputs:   map[string]json.RawMessage{"O": raw(`{broken`)},
		}},
		IAM:          []construct.IAMStatement{{Target: controller, Effect: "Allow", Condition: raw(`[1]`)}},
		HelmReleases: []construct.HelmRelease{{Name: "r", Namespace: "n", Values: raw(`"x"`)}},
		Protected:    []construct.Protected{{Stack: "s", LogicalID: "Ok", Pointer: "Properties"}},
	}
	out, diags := Merge([]Contribution{{"a", &a}})
	if len(diags) != 5 {
		t.Fatalf("want 5 diagnostics, got:\n%s", diags.Error())
	}
	for _, d := range diags {
		if d.Plugin != "a" || d.Severity != diag.Fatal {
			t.Errorf("bad diagnostic %s", d)
		}
	}
	if _, ok := out.Stacks[0].Resources["R"]; ok {
		t.Error("an invalid resource was merged")
	}
}

func TestDeterministicAndInputsUntouched(t *testing.T) {
	mk := func() []Contribution {
		a := construct.Set{
			Stacks:    []construct.Stack{stack("z", map[string]string{"R": `{"Type":"T","Properties":{"A":1}}`}), stack("a", map[string]string{"Q": `{"Type":"T"}`})},
			Units:     []construct.Unit{{Target: worker, Name: "z.service", Content: "z"}, {Target: controller, Name: "a.service", Content: "a", DropIns: []construct.DropIn{{Name: "2", Content: "x"}, {Name: "1", Content: "y"}}}},
			Files:     []construct.File{{Target: worker, Path: "/z"}, {Target: worker, Path: "/a"}},
			APIServer: construct.APIServer{Flags: []construct.Flag{{Name: "z", Value: "1"}, {Name: "feature-gates", Value: "B=true,A=true"}}},
		}
		b := construct.Set{
			Stacks:    []construct.Stack{stack("z", map[string]string{"S": `{"Type":"T"}`})},
			Patches:   []construct.Patch{{Stack: "z", LogicalID: "R", Merge: raw(`{"Properties":{"A":2,"B":3}}`)}},
			Protected: []construct.Protected{{Stack: "a", LogicalID: "Q", Pointer: "/Type"}},
			APIServer: construct.APIServer{Flags: []construct.Flag{{Name: "feature-gates", Value: "C=true,A=true"}}},
		}
		return two(a, b)
	}
	in := mk()
	before, _ := json.Marshal([]*construct.Set{in[0].Set, in[1].Set})
	out1, d1 := Merge(in)
	out2, d2 := Merge(in)
	after, _ := json.Marshal([]*construct.Set{in[0].Set, in[1].Set})
	if string(before) != string(after) {
		t.Errorf("Merge modified its inputs:\nbefore %s\nafter  %s", before, after)
	}
	if !reflect.DeepEqual(out1, out2) || !reflect.DeepEqual(d1, d2) {
		t.Error("two merges of the same input differ")
	}
	if len(d1) > 0 {
		t.Fatalf("unexpected diagnostics: %s", d1.Error())
	}
	// Plugin order, then name within a plugin.
	var names []string
	for _, s := range out1.Stacks {
		names = append(names, s.Name)
	}
	for _, u := range out1.Units {
		names = append(names, u.Name)
	}
	for _, f := range out1.Files {
		names = append(names, f.Path)
	}
	if want := []string{"a", "z", "a.service", "z.service", "/a", "/z"}; !reflect.DeepEqual(names, want) {
		t.Errorf("order = %v, want %v", names, want)
	}
	if want := []construct.Flag{{Name: "feature-gates", Value: "B=true,A=true,C=true", Plugin: "alpha"}, {Name: "z", Value: "1", Plugin: "alpha"}}; !reflect.DeepEqual(out1.APIServer.Flags, want) {
		t.Errorf("flags = %v, want %v", out1.APIServer.Flags, want)
	}
	if out1.Patches != nil {
		t.Error("applied patches are carried in the merged set")
	}
	if len(out1.Protected) != 1 {
		t.Errorf("protected = %v", out1.Protected)
	}
	// The merged set shares no memory with the inputs.
	out1.Stacks[1].Resources["S"][0] = 'X'
	if string(in[1].Set.Stacks[0].Resources["S"]) != `{"Type":"T"}` {
		t.Error("the merged set aliases an input resource body")
	}
}

func TestNilAndEmptyContributions(t *testing.T) {
	out, diags := Merge([]Contribution{{Plugin: "a"}, {Plugin: "b", Set: &construct.Set{}}})
	if len(diags) != 0 || !out.IsEmpty() {
		t.Errorf("got %+v %v", out, diags)
	}
	out, diags = Merge(nil)
	if len(diags) != 0 || out == nil || !out.IsEmpty() {
		t.Errorf("got %+v %v", out, diags)
	}
}

// TestPodMetadataRequestsKeepEveryPlugin: requests that pods reach the
// metadata service never conflict; the merged set keeps one per target and
// plugin, each naming its plugin, so the user sees every plugin that opened
// a role.
func TestPodMetadataRequestsKeepEveryPlugin(t *testing.T) {
	pool := construct.Target{Role: construct.Worker, NodePool: "general"}
	tests := []struct {
		name string
		a, b []construct.PodMetadataAccess
		want []string
	}{
		{name: "none", want: nil},
		{
			name: "one plugin",
			b:    []construct.PodMetadataAccess{{Target: worker, Reason: "r"}},
			want: []string{"worker:beta:r"},
		},
		{
			name: "same target from both plugins",
			a:    []construct.PodMetadataAccess{{Target: worker, Reason: "a", Plugin: "not-me"}},
			b:    []construct.PodMetadataAccess{{Target: worker, Reason: "b"}},
			want: []string{"worker:alpha:a", "worker:beta:b"},
		},
		{
			name: "repeated by one plugin",
			a:    []construct.PodMetadataAccess{{Target: pool, Reason: "a"}, {Target: pool, Reason: "again"}, {Target: controller}},
			want: []string{"worker/general:alpha:a", "controller:alpha:"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := mustMerge(t, two(construct.Set{PodMetadata: tt.a}, construct.Set{PodMetadata: tt.b}))
			var got []string
			for _, r := range out.PodMetadata {
				got = append(got, r.Target.String()+":"+r.Plugin+":"+r.Reason)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("requests = %v, want %v", got, tt.want)
			}
		})
	}
}
