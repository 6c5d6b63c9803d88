package names

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLogicalName(t *testing.T) {
	for in, want := range map[string]string{"spot-pool": "SpotPool", "general": "General", "a1-b2-c3": "A1B2C3",
		"eu-west-1a": "EuWest1a", "a_b.c": "ABC", "x": "X"} {
		if got := LogicalName(in); got != want {
			t.Errorf("LogicalName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNames(t *testing.T) {
	// Names follow LogicalName in every output.
	if SubnetOutput("public-eu-west-1a") != "SubnetPublicEuWest1aId" {
		t.Errorf("SubnetOutput: %s", SubnetOutput("public-eu-west-1a"))
	}
	if InstanceProfileOutput(RoleWorker, "spot-pool") != "NodePoolSpotPoolInstanceProfile" ||
		InstanceProfileOutput(RoleController, "") != "ControllerInstanceProfile" ||
		InstanceProfileOutput(RoleEtcd, "") != "EtcdInstanceProfile" {
		t.Error("instance profile output names changed: the machine stacks' ParameterSources depend on them")
	}
	for stack, want := range map[string]string{"control-plane": "userdata/controller.yaml", "etcd": "userdata/etcd.yaml",
		"nodepool-a": "userdata/nodepool-a.yaml", "network": ""} {
		if got := UserDataFile(stack); got != want {
			t.Errorf("UserDataFile(%s) = %q, want %q", stack, got, want)
		}
	}
}

// A source travels as "<stack>.<output>" and parses back; a text that is
// not one survives to be reported, and is not Valid.
func TestSource(t *testing.T) {
	tests := []struct {
		text  string
		want  Source
		valid bool
	}{
		{"network.VpcId", From(StackNetwork, OutputVpcID), true},
		{"iam.NodePoolAInstanceProfile", From(StackIAM, "NodePoolAInstanceProfile"), true},
		{"VpcId", Source{Output: "VpcId"}, false},
		{"network.", Source{Stack: "network"}, false},
		{".VpcId", Source{Output: "VpcId"}, false},
	}
	for _, tt := range tests {
		var got Source
		if err := json.Unmarshal([]byte(`"`+tt.text+`"`), &got); err != nil {
			t.Fatal(err)
		}
		if got != tt.want || (got.Valid() == nil) != tt.valid {
			t.Errorf("%q: %+v valid=%v, want %+v valid=%v", tt.text, got, got.Valid(), tt.want, tt.valid)
		}
		if tt.valid {
			b, _ := json.Marshal(map[string]Source{"p": got})
			if string(b) != `{"p":"`+tt.text+`"}` {
				t.Errorf("%q encodes as %s", tt.text, b)
			}
		}
	}
}

// The encryption context deploy encrypts under, the IAM condition that
// admits it and the machines' context are one value: their wire form is
// pinned here, since ciphertext made under one must decrypt under the
// others.
func TestEncryptionContext(t *testing.T) {
	ec, _ := json.Marshal(EncryptionContext("demo", "nodepool-spot"))
	if string(ec) != `{"kube-aws:cluster":"demo","kube-aws:role":"nodepool-spot"}` {
		t.Errorf("context %s", ec)
	}
	cond, _ := json.Marshal(EncryptionContextCondition("demo", "controller"))
	if string(cond) != `{"kms:EncryptionContext:kube-aws:cluster":"demo","kms:EncryptionContext:kube-aws:role":"controller"}` {
		t.Errorf("condition %s", cond)
	}
}

func TestNodePoolNames(t *testing.T) {
	tests := []struct {
		name string
		pool string
		ok   bool
	}{
		{NodePoolRole("spot-pool"), "spot-pool", true},
		{NodePoolStack("a"), "a", true},
		{"nodepool-", "", false},
		{"controller", "", false},
		{"xnodepool-a", "", false},
	}
	for _, tt := range tests {
		if pool, ok := NodePoolOf(tt.name); ok != tt.ok || (ok && pool != tt.pool) {
			t.Errorf("NodePoolOf(%q) = %q, %v; want %q, %v", tt.name, pool, ok, tt.pool, tt.ok)
		}
	}
	if NodePoolRole("a") != NodePoolStack("a") || UserDataName(NodePoolStack("a")) != NodePoolRole("a") {
		t.Error("a pool's role, stack and userdata names differ")
	}
}

// Deploy lifts each cluster output from one stack output name (and the
// VPC's id from its cluster output's spelling too); nothing else.
func TestClusterOutput(t *testing.T) {
	for out, want := range map[string]string{
		"APIEndpoint": "APIEndpoint", "LoadBalancerDNS": "APILoadBalancerDNS", "VpcId": "VPCId", "VPCId": "VPCId",
		"APIEndpointURL": "", "APIServerURL": "", "AutoScalingGroupName": "",
	} {
		if got := ClusterOutput(out); got != want {
			t.Errorf("ClusterOutput(%q) = %q, want %q", out, got, want)
		}
	}
}

func TestGeneratedSecretFile(t *testing.T) {
	if got := GeneratedSecretFile("dex", "client-secret"); got != "credentials/dex/client-secret" {
		t.Errorf("got %s", got)
	}
}

// Every row of BuiltinResources names its resource by an exported constant
// or function of this package: a constant whose value is the row's logical
// ID, or a function whose result for a sample name matches the row's
// pattern (<Subnet>, <Zone>, <Pool>, <Role> and <i> stand for the parts
// that come from cluster.yaml).
func TestBuiltinResourcesNameTheirConstants(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	consts, funcs := map[string]string{}, map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					funcs[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					vs, ok := sp.(*ast.ValueSpec)
					if !ok || d.Tok != token.CONST {
						continue
					}
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								consts[n.Name], _ = strconv.Unquote(lit.Value)
							}
						}
					}
				}
			}
		}
	}
	samples := map[string]string{
		"names.SubnetResource(subnet)":              SubnetResource("public-us-east-1a"),
		"names.SubnetRouteTableAssociation(subnet)": SubnetRouteTableAssociation("private-us-east-1b"),
		"names.PrivateRouteTable(zone)":             PrivateRouteTable("us-east-1a"),
		"names.NatEIP(zone)":                        NatEIP("us-east-1a"),
		"names.NatGateway(zone)":                    NatGateway("us-east-1a"),
		"names.PrivateRoute(zone)":                  PrivateRoute("us-east-1a"),
		"names.EtcdDataVolume(i)":                   EtcdDataVolume(2),
		"names.EtcdMemberGroup(i)":                  EtcdMemberGroup(2),
		"names.RoleResource(role, pool)":            RoleResource(RoleWorker, "spot-pool"),
		"names.InstanceProfileResource(role, pool)": InstanceProfileResource(RoleController, ""),
		"names.PodRoleResource(role)":               PodRoleResource("cluster-autoscaler"),
	}
	for _, r := range BuiltinResources() {
		name, _, isCall := strings.Cut(strings.TrimPrefix(r.Go, "names."), "(")
		switch {
		case !strings.HasPrefix(r.Go, "names."):
			t.Errorf("%s: Go %q is not of this package", r.LogicalID, r.Go)
		case isCall && !funcs[name]:
			t.Errorf("%s: %s is not a function of this package", r.LogicalID, r.Go)
		case isCall:
			got, ok := samples[r.Go]
			if !ok || !matchPattern(r.LogicalID, got) {
				t.Errorf("%s: %s gives %q, which the pattern %s does not match", r.LogicalID, r.Go, got, r.LogicalID)
			}
		case consts[name] != r.LogicalID:
			t.Errorf("%s: %s is %q", r.LogicalID, r.Go, consts[name])
		}
		if r.Stack == "" || r.Type == "" || r.MadeBy == "" {
			t.Errorf("%+v: stack, type and maker are all needed", r)
		}
	}
}
