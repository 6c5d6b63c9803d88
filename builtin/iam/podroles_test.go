package iam

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/builtin/iam/internal/policy"
	"github.com/kube-aws/kube-aws/core/config/values"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// A pod role trusts the cluster's OIDC provider for exactly its service
// accounts and the STS audience: what AWS checks before it hands a pod the
// role's credentials.
func TestPodRoleTrust(t *testing.T) {
	res := run(t, "full", nil, pluginPodRoles...)
	if res.Diagnostics.HasFatal() {
		t.Fatal(res.Diagnostics)
	}
	tmpl := template(t, res)
	resources := tmpl["Resources"].(map[string]any)
	issuer := tmpl["Outputs"].(map[string]any)["ServiceAccountIssuer"].(map[string]any)["Value"].(string)
	provider := strings.TrimPrefix(issuer, "https://")
	if !strings.HasPrefix(issuer, "https://") || !strings.HasSuffix(issuer, "/oidc") {
		t.Fatalf("issuer %q", issuer)
	}
	if got := resources["OIDCProvider"].(map[string]any)["Properties"].(map[string]any)["Url"]; got != issuer {
		t.Errorf("OIDC provider's Url %v, want the issuer %s", got, issuer)
	}
	tests := []struct {
		id, roleName, op string
		subjects         []any
	}{
		{"PodRoleAutoscaler", "prod-pod-autoscaler", "StringEquals", []any{"system:serviceaccount:kube-system:cluster-autoscaler"}},
		{"PodRoleLogs", "prod-pod-logs", "StringLike", []any{"system:serviceaccount:logging:*", "system:serviceaccount:kube-system:fluent-bit"}},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			r, ok := resources[tt.id].(map[string]any)
			if !ok {
				t.Fatalf("no resource %s", tt.id)
			}
			props := r["Properties"].(map[string]any)
			if props["RoleName"] != tt.roleName {
				t.Errorf("RoleName %v, want %s", props["RoleName"], tt.roleName)
			}
			st := props["AssumeRolePolicyDocument"].(map[string]any)["Statement"].([]any)
			if len(st) != 1 {
				t.Fatalf("trust statements: %d", len(st))
			}
			s := st[0].(map[string]any)
			if fed := s["Principal"].(map[string]any)["Federated"].(map[string]any)["Ref"]; fed != "OIDCProvider" {
				t.Errorf("federated principal %v", fed)
			}
			cond := s["Condition"].(map[string]any)
			if aud := cond["StringEquals"].(map[string]any)[provider+":aud"]; aud != "sts.amazonaws.com" {
				t.Errorf("aud condition %v", aud)
			}
			sub, _ := cond[tt.op].(map[string]any)[provider+":sub"].([]any)
			if len(sub) != len(tt.subjects) {
				t.Fatalf("sub condition (%s) %v, want %v", tt.op, sub, tt.subjects)
			}
			for i := range sub {
				if sub[i] != tt.subjects[i] {
					t.Errorf("sub %d: %v, want %v", i, sub[i], tt.subjects[i])
				}
			}
			if _, ok := tmpl["Outputs"].(map[string]any)[tt.id+"Arn"]; !ok {
				t.Errorf("no output %sArn", tt.id)
			}
		})
	}
}

func TestPodRoleErrors(t *testing.T) {
	long := construct.PodRole{Name: strings.Repeat("a", 40), ServiceAccounts: []string{"a/b"}, Plugin: "p",
		Statements: []construct.IAMStatement{{Effect: "Allow", Actions: []string{"s3:GetObject"}, Resources: []string{"arn:aws:s3:::b/*"}}}}
	badEffect := construct.PodRole{Name: "x", ServiceAccounts: []string{"a/b"}, Plugin: "p",
		Statements: []construct.IAMStatement{{Effect: "Permit", Actions: []string{"s3:GetObject"}, Resources: []string{"arn:aws:s3:::b/*"}}}}
	_, c := loadFixture(t, "full")
	c.ClusterName = strings.Repeat("c", 30)
	longCluster, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		role construct.PodRole
		want string
	}{
		{"name too long for IAM", long, "would be the IAM role " + c.ClusterName + "-pod-" + long.Name + ", 75 characters, over IAM's limit of 64"},
		{"bad effect", badEffect, `effect "Permit", want Allow or Deny`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := sdk.Call(context.Background(), served, &sdk.Request{Plugin: "iam",
				Input: &stage.Input{Stage: stage.Render, Config: longCluster, Constructs: &construct.Set{PodRoles: []construct.PodRole{tt.role}}}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Diagnostics.HasFatal() || !strings.Contains(res.Diagnostics.Error(), tt.want) {
				t.Fatalf("diagnostics %v, want a fatal containing %q", res.Diagnostics, tt.want)
			}
		})
	}
}

// cluster.yaml's pod roles (plugins.iam.values.podRoles) become pod role
// constructs, merged with every plugin's.
func TestPodRolesFromValues(t *testing.T) {
	cfg, _ := loadFixture(t, "minimal")
	values := json.RawMessage(`{"podRoles":[{"name":"reader","serviceAccounts":["apps/reader"],
		"statements":[{"actions":["s3:GetObject"],"resources":["arn:aws:s3:::data/*"],"condition":{"Bool":{"aws:SecureTransport":"true"}}}]}]}`)
	res, err := sdk.Call(context.Background(), served, &sdk.Request{Input: &stage.Input{Stage: stage.Initialise, Config: cfg, Values: map[string]stage.PluginValues{"iam": {Values: values}}}, Plugin: "iam"})
	if err != nil || res.Diagnostics.HasFatal() {
		t.Fatalf("initialise: %v %v", err, res.Diagnostics)
	}
	roles := res.Constructs.PodRoles
	if len(roles) != 1 || roles[0].Name != "reader" || roles[0].ServiceAccounts[0] != "apps/reader" ||
		len(roles[0].Statements) != 1 || !strings.Contains(string(roles[0].Statements[0].Condition), "SecureTransport") {
		t.Fatalf("pod roles from values: %+v", roles)
	}
}

// A mistake in cluster.yaml's pod roles is caught by the values' schema,
// where the user sees the file and line.
func TestPodRoleValuesSchema(t *testing.T) {
	_, c := loadFixture(t, "minimal")
	good := `{"podRoles":[{"name":"reader","serviceAccounts":["apps/reader","logging/*"],"statements":[{"actions":["s3:GetObject"],"resources":["*"]}]}]}`
	for _, tt := range []struct {
		name, values, path string
	}{
		{"good", good, ""},
		{"service account without namespace", strings.Replace(good, `"apps/reader"`, `"reader"`, 1), "plugins.iam.values.podRoles[0].serviceAccounts[0]"},
		{"name with capitals", strings.Replace(good, `"name":"reader"`, `"name":"Reader"`, 1), "plugins.iam.values.podRoles[0].name"},
		{"no statements", strings.Replace(good, `"statements":[{"actions":["s3:GetObject"],"resources":["*"]}]`, `"statements":[]`, 1), "plugins.iam.values.podRoles[0].statements"},
		{"unknown key", strings.Replace(good, `"name":"reader"`, `"name":"reader","trust":"x"`, 1), "plugins.iam.values.podRoles[0].trust"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ds := values.Validate(c, "iam", json.RawMessage(policy.Schema), stage.PluginValues{Values: json.RawMessage(tt.values)}, nil)
			if tt.path == "" {
				if len(ds) != 0 {
					t.Fatalf("good values refused: %v", ds)
				}
				return
			}
			for _, d := range ds {
				if d.Path == tt.path && d.Severity == diag.Fatal {
					return
				}
			}
			t.Errorf("want a fatal at %s, got %v", tt.path, ds)
		})
	}
}
