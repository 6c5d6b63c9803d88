package protocol

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	pb "github.com/kube-aws/kube-aws/plugins/proto/v1"
)

// fullSet fills every field of every construct with a distinct value, so a
// converter that drops or swaps a field shows up as a difference.
func fullSet() *construct.Set {
	w := construct.Target{Role: construct.Worker, NodePool: "pool-a"}
	return &construct.Set{
		Stacks: []construct.Stack{{
			Name:        "network",
			Description: "the VPC",
			DependsOn:   []string{"iam"},
			Resources:   map[string]json.RawMessage{"VPC": json.RawMessage(`{"Type":"AWS::EC2::VPC"}`)},
			Outputs:     map[string]json.RawMessage{"VPCId": json.RawMessage(`{"Value":{"Ref":"VPC"}}`)},
			Parameters:  map[string]json.RawMessage{"Cidr": json.RawMessage(`{"Type":"String"}`)},
			Conditions:  map[string]json.RawMessage{"IsProd": json.RawMessage(`{"Fn::Equals":["a","a"]}`)},
			Mappings:    map[string]json.RawMessage{"AMI": json.RawMessage(`{"eu-west-1":{"id":"ami-1"}}`)},
			Tags:        map[string]string{"team": "infra"},
			ParameterSources: map[string]names.Source{
				"RoleName": names.From("iam", "ControllerRole"),
			},
			Plugin:   "cloudformation",
			Renderer: "network-renderer",
		}},
		Patches: []construct.Patch{{Stack: "network", LogicalID: "VPC", Merge: json.RawMessage(`{"Properties":{"EnableDnsSupport":true}}`),
			Operations: json.RawMessage(`[{"op":"add","path":"/Properties/Tags/-","value":{"Key":"a","Value":"b"}}]`), Plugin: "customise"}},
		Protected: []construct.Protected{{Stack: "nodepool-a", LogicalID: "LT", Pointer: "/Properties/LaunchTemplateData/UserData", Reason: "bootstrap", Plugin: "cloudformation"}},
		Units: []construct.Unit{{
			Target:  construct.Target{Role: construct.Worker, NodePool: "pool-b"},
			Name:    "agent.service",
			Content: "[Service]\nExecStart=/bin/agent\n",
			Enable:  true,
			DropIns: []construct.DropIn{{Name: "10-env.conf", Content: "[Service]\nEnvironment=A=1\n", Plugin: "env"}},
			Plugin:  "agent",
		}},
		Files: []construct.File{{Target: w, Path: "/etc/agent.conf", Mode: "0600", Owner: "root:root", Content: "secret=((secret:agent/token))", Sensitive: true, Format: "env", Plugin: "agent"}},
		APIServer: construct.APIServer{
			Flags:   []construct.Flag{{Name: "oidc-issuer-url", Value: "https://dex", Plugin: "dex"}},
			Volumes: []construct.Volume{{Name: "dex-ca", HostPath: "/etc/dex", MountPath: "/etc/dex", ReadOnly: true}},
		},
		KubeletFlags: []construct.TargetedFlag{{Target: w, Flag: construct.Flag{Name: "max-pods", Value: "110", Plugin: "pods"}}},
		NodeLabels:   []construct.NodeLabel{{Target: w, Key: "pool", Value: "a", Plugin: "labels"}},
		NodeTaints:   []construct.NodeTaint{{Target: w, Key: "dedicated", Value: "gpu", Effect: "NoSchedule", Plugin: "taints"}},
		PodMetadata:  []construct.PodMetadataAccess{{Target: w, Reason: "an agent pod reads the role's credentials", Plugin: "agent"}},
		PodRoles: []construct.PodRole{{
			Name: "autoscaler", ServiceAccounts: []string{"kube-system/cluster-autoscaler"},
			Statements: []construct.IAMStatement{{Target: w, Plugin: "cluster-autoscaler", Sid: "Scale", Effect: "Allow", Actions: []string{"autoscaling:SetDesiredCapacity"},
				Resources: []string{"arn:aws:autoscaling:*"}, Condition: json.RawMessage(`{"StringEquals":{"aws:ResourceTag/k":"v"}}`)}},
			Reason: "the autoscaler scales the pools", Plugin: "cluster-autoscaler",
		}},
		IAM: []construct.IAMStatement{{
			Target:    w,
			Sid:       "Route53",
			Effect:    "Allow",
			Actions:   []string{"route53:ChangeResourceRecordSets"},
			Resources: []string{"*"},
			Condition: json.RawMessage(`{"StringEquals":{"aws:RequestedRegion":"eu-west-1"}}`),
			Plugin:    "route53",
		}},
		HelmReleases: []construct.HelmRelease{{
			Name:       "dex",
			Namespace:  "kube-system",
			Chart:      construct.Chart{Path: "/charts/dex", Repository: "https://charts.example", Name: "dex", Version: "1.2.3"},
			Values:     json.RawMessage(`{"replicas":2}`),
			Plugin:     "dex",
			ValuesFrom: "plugins.dex.values.chart",
		}},
		Manifests: []construct.Manifest{{Name: "rbac", Content: "kind: ClusterRole\n", Plugin: "rbac"}},
		Artifacts: []construct.Artifact{{
			// Not a valid artifact (the merge checks that): every field is
			// set so that the round trip covers it.
			Target: w, Name: "etcd", Version: "v3.6.5", Kind: construct.Binary, Reference: "quay.io/coreos/etcd:v3.6.5",
			Files: []construct.ArtifactFile{{Name: "etcd", Path: "/usr/local/bin/etcd", Mode: "0755"}},
			Sources: map[string]construct.ArtifactSource{"amd64": {
				URL: "https://example/etcd.tar.gz", SHA256: "aa", Members: map[string]string{"etcd": "etcd-v3.6.5/etcd"},
				Mirrored: map[string]string{"etcd": "bb"}, Digest: "sha256:dd",
			}},
			Plugin: "etcd",
		}, {
			Target: w, Name: "pause", Version: "3.10.1", Kind: construct.Image, Reference: "registry.k8s.io/pause:3.10.1",
			Sources: map[string]construct.ArtifactSource{"arm64": {Digest: "sha256:cc"}},
		}},
	}
}

func fullInput() *stage.Input {
	return &stage.Input{
		Stage:  stage.Deploy,
		Config: json.RawMessage(`{"clusterName":"c1"}`),
		Values: map[string]stage.PluginValues{"dex": {
			Values:    json.RawMessage(`{"issuer":"https://dex"}`),
			NodePools: map[string]json.RawMessage{"pool-a": json.RawMessage(`{"x":1}`)},
		}},
		Capabilities: map[string]string{"cni": "calico"},
		Constructs:   fullSet(),
		Rendered: &stage.Rendered{
			Dir:    "/tmp/rendered",
			Files:  []stage.ManifestFile{{Path: "stacks/network.json", SHA256: "abc", Size: 42, Plugin: "cloudformation", Version: "1.0.0"}},
			Stacks: []stage.StackSpec{fullStackSpec()},
		},
		Deploy:  fullDeploy(),
		Secrets: map[string]string{"dex/token": "s3cr3t"},
		WorkDir: "/work/cluster",
		AWS: &stage.AWSSettings{Profile: "prod", Region: "eu-west-1", EndpointURL: "http://127.0.0.1:5000",
			Timeout: 45 * time.Minute, Yes: true, ForceUnlock: true, AllowIssuerChange: true},
	}
}

func fullStackSpec() stage.StackSpec {
	return stage.StackSpec{
		Name:             "network",
		Template:         "stacks/network.json",
		DependsOn:        []string{"iam"},
		ParameterSources: map[string]names.Source{"Role": names.From("iam", "Role")},
		UploadByURL:      true,
		Tags:             map[string]string{"a": "b"},
	}
}

func fullDeploy() *stage.DeployResult {
	return &stage.DeployResult{
		Stacks:  []stage.StackStatus{{Name: "network", ID: "arn:aws:cloudformation:1", Status: "CREATE_COMPLETE", Outputs: map[string]string{"VPCId": "vpc-1"}, Changed: true}},
		Outputs: map[string]string{"apiEndpoint": "https://k8s"},
	}
}

func fullDiag() diag.Diagnostic {
	return diag.Diagnostic{Severity: diag.Fatal, Plugin: "dex", Stage: "render", Path: "plugins.dex.values.issuer", File: "cluster.yaml", Line: 12, Column: 5, Message: "bad issuer", Hint: "use https", Code: diag.CodeNeedsConfirmation, ReportedBy: "helm", ConflictsWith: "kube2iam"}
}

func fullResult() *stage.Result {
	return &stage.Result{
		Values:     json.RawMessage(`{"issuer":"https://dex"}`),
		Constructs: fullSet(),
		Files:      []stage.File{{Path: "stacks/dex.json", Content: []byte(`{}`), Mode: "0644", Plugin: "dex"}},
		Stacks:     []stage.StackSpec{fullStackSpec()},
		Deploy:     fullDeploy(),
		Diff: &stage.DiffResult{
			Stacks: []stage.StackDiff{{Stack: "network", StackName: "c1-network", Status: "UPDATE_COMPLETE", Action: stage.ActionUpdate,
				Changes: []stage.ResourceChange{{Action: "Modify", LogicalID: "VPC", PhysicalID: "vpc-1", ResourceType: "AWS::EC2::VPC", Replacement: "False"}}}},
			Orphans: []string{"c1-nodepool-old"},
			Changed: true,
			Machines: []stage.MachineDiff{{Stack: "nodepool-a", Role: "nodepool-a", Group: "c1-nodepool-a-Group-1", InstanceID: "i-1",
				Address: "10.0.0.5", Reasons: []string{"kubernetesVersion 1.33.13 -> 1.34.4", "plugin dex changed"}}},
		},
		Destroy:     &stage.DestroyResult{Deleted: []string{"network"}, Absent: []string{"iam"}, Orphans: []string{"c1-nodepool-old"}},
		Diagnostics: diag.List{fullDiag(), {Severity: diag.Warning, Message: "deprecated"}},
		AdminCredential: &stage.Credential{CACert: []byte("-----BEGIN CERTIFICATE-----\nCA"),
			Cert: []byte("-----BEGIN CERTIFICATE-----\nADMIN"), Key: []byte("-----BEGIN PRIVATE KEY-----\nKEY")},
	}
}

func fullInfo() stage.PluginInfo {
	return stage.PluginInfo{
		Name:             "dex",
		Version:          "1.0.0",
		Description:      "OIDC",
		ProtocolVersions: []int{1, 2},
		Stages:           []stage.Name{stage.Initialise, stage.Render},
		ValuesSchema:     json.RawMessage(`{"type":"object"}`),
		Capabilities:     []string{"oidc"},
		LateStacks:       []string{"iam"},
		ReachesAWS:       true,
	}
}

func fullEvent() stage.Event {
	d := fullDiag()
	return stage.Event{Kind: stage.EventDiagnostic, Level: "warn", Message: "m", Current: 3, Total: 7, Diagnostic: &d}
}

// wire sends a message through its binary encoding, as the real protocol does.
func wire[M proto.Message](t *testing.T, m M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// assertAllSet fails when any field reachable from v is its zero value, so
// the fixtures above cannot silently miss a field that core gains later.
func assertAllSet(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			t.Errorf("fixture leaves %s nil: fill it so the round trip covers it", path)
			return
		}
		assertAllSet(t, path, v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			assertAllSet(t, path+"."+f.Name, v.Field(i))
		}
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			t.Errorf("fixture leaves %s empty: fill it so the round trip covers it", path)
			return
		}
		if v.Kind() == reflect.Slice {
			if v.Type().Elem().Kind() != reflect.Uint8 {
				assertAllSet(t, path+"[0]", v.Index(0))
			}
		} else {
			iter := v.MapRange()
			iter.Next()
			assertAllSet(t, path+"["+iter.Key().String()+"]", iter.Value())
		}
	default:
		if v.IsZero() && v.Kind() != reflect.Bool {
			t.Errorf("fixture leaves %s zero: fill it so the round trip covers it", path)
		}
		if v.Kind() == reflect.Bool && !v.Bool() {
			t.Errorf("fixture leaves %s false: set it so the round trip covers it", path)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	in := fullInput()
	res := fullResult()
	info := fullInfo()
	ev := fullEvent()
	d := fullDiag()
	set := fullSet()

	tests := []struct {
		name      string
		fixture   any
		roundTrip func(t *testing.T) (want, got any)
	}{
		{"construct.Set", set, func(t *testing.T) (any, any) {
			return set, SetFromPB(wire(t, SetToPB(set)))
		}},
		{"stage.Input", in, func(t *testing.T) (any, any) {
			got, id := InputFromPB(wire(t, InputToPB(in, 7)))
			if id != 7 {
				t.Errorf("host service id: got %d, want 7", id)
			}
			return in, got
		}},
		{"stage.Result", res, func(t *testing.T) (any, any) {
			return res, ResultFromPB(wire(t, ResultToPB(res)))
		}},
		{"stage.PluginInfo", info, func(t *testing.T) (any, any) {
			return info, InfoFromPB(wire(t, InfoToPB(info)))
		}},
		{"stage.Event", ev, func(t *testing.T) (any, any) {
			return ev, EventFromPB(wire(t, EventToPB(ev)))
		}},
		{"diag.Diagnostic", d, func(t *testing.T) (any, any) {
			return d, DiagnosticFromPB(wire(t, DiagnosticToPB(d)))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertAllSet(t, tc.name, reflect.ValueOf(tc.fixture))
			want, got := tc.roundTrip(t)
			if !reflect.DeepEqual(want, got) {
				wj, _ := json.MarshalIndent(want, "", " ")
				gj, _ := json.MarshalIndent(got, "", " ")
				t.Errorf("round trip changed the value\nwant %s\ngot  %s", wj, gj)
			}
			// Secrets are json:"-", so compare them explicitly for Input.
			if w, ok := want.(*stage.Input); ok {
				if !reflect.DeepEqual(w.Secrets, got.(*stage.Input).Secrets) {
					t.Errorf("secrets lost: %v", got.(*stage.Input).Secrets)
				}
			}
		})
	}
}

// Empty values come back as nil and nil pointers stay nil: a plugin that
// returns nothing must not grow empty constructs on the way.
func TestRoundTripEmpty(t *testing.T) {
	if got := SetFromPB(SetToPB(nil)); got != nil {
		t.Errorf("nil set came back as %#v", got)
	}
	r := ResultFromPB(wire(t, ResultToPB(&stage.Result{})))
	if !reflect.DeepEqual(r, &stage.Result{}) {
		t.Errorf("empty result came back as %#v", r)
	}
	r = ResultFromPB(wire(t, ResultToPB(nil)))
	if !reflect.DeepEqual(r, &stage.Result{}) {
		t.Errorf("nil result came back as %#v", r)
	}
	empty := &construct.Set{}
	if got := SetFromPB(wire(t, SetToPB(empty))); !reflect.DeepEqual(got, empty) {
		t.Errorf("empty set came back as %#v", got)
	}
	in, _ := InputFromPB(wire(t, InputToPB(&stage.Input{Stage: stage.Render}, 0)))
	if !reflect.DeepEqual(in, &stage.Input{Stage: stage.Render}) {
		t.Errorf("minimal input came back as %#v", in)
	}
}

// Every field of the wire messages must be reachable from a core type: a
// field added to plugin.proto without a converter is caught here.
func TestEveryProtoFieldIsSet(t *testing.T) {
	msgs := []proto.Message{
		InputToPB(fullInput(), 7),
		ResultToPB(fullResult()),
		InfoToPB(fullInfo()),
		EventToPB(fullEvent()),
	}
	for _, m := range msgs {
		checkProtoSet(t, string(m.ProtoReflect().Descriptor().FullName()), m)
	}
	_ = pb.File_plugin_proto
}

// transportFields are set by the protocol's own sending and serving, not
// by a converter of a core type: TestASetIsSentOncePerProcess covers them.
var transportFields = map[string]bool{
	"kubeaws.plugin.v1.StageRequest.constructs_id":       true,
	"kubeaws.plugin.v1.PluginInfo.accepts_constructs_id": true,
}

func checkProtoSet(t *testing.T, path string, m proto.Message) {
	t.Helper()
	r := m.ProtoReflect()
	fields := r.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		p := path + "." + string(f.Name())
		if f.ContainingOneof() != nil || transportFields[p] {
			continue
		}
		if !r.Has(f) {
			t.Errorf("%s is never set by the converters", p)
			continue
		}
		switch {
		case f.IsList() && f.Message() != nil:
			checkProtoSet(t, p+"[0]", r.Get(f).List().Get(0).Message().Interface())
		case f.IsMap() && f.MapValue().Message() != nil:
			r.Get(f).Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
				checkProtoSet(t, p+"[]", v.Message().Interface())
				return false
			})
		case !f.IsList() && !f.IsMap() && f.Message() != nil:
			checkProtoSet(t, p, r.Get(f).Message().Interface())
		}
	}
}
