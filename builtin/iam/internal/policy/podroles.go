package policy

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/awslabs/goformation/v4/cloudformation"
	"github.com/awslabs/goformation/v4/cloudformation/iam"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
)

// Values are the iam plugin's values in cluster.yaml.
type Values struct {
	// PodRoles are the user's own pod roles, merged with the plugins'.
	PodRoles []PodRoleValue `json:"podRoles,omitempty"`
}

// PodRoleValue is one pod role as cluster.yaml writes it.
type PodRoleValue struct {
	Name            string           `json:"name"`
	ServiceAccounts []string         `json:"serviceAccounts"`
	Statements      []StatementValue `json:"statements"`
}

// StatementValue is a policy statement as cluster.yaml writes it.
type StatementValue struct {
	Sid       string          `json:"sid,omitempty"`
	Effect    string          `json:"effect,omitempty"`
	Actions   []string        `json:"actions"`
	Resources []string        `json:"resources"`
	Condition json.RawMessage `json:"condition,omitempty"`
}

// Schema is the JSON Schema of Values. Its patterns are the merge's
// (construct.PodRoleNamePattern, construct.ServiceAccountPattern), so that
// cluster.yaml's mistakes are found here, with their file and line.
var Schema = strings.NewReplacer("NAME_PATTERN", jsonString(construct.PodRoleNamePattern),
	"SA_PATTERN", jsonString(construct.ServiceAccountPattern)).Replace(`{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "podRoles": {
      "type": "array",
      "description": "IAM roles that pods assume with their own service-account tokens (docs/security.md)",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["name", "serviceAccounts", "statements"],
        "properties": {
          "name": {"type": "string", "pattern": NAME_PATTERN, "description": "the role's name in the cluster; IAM name <clusterName>-pod-<name>"},
          "serviceAccounts": {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": SA_PATTERN}, "description": "namespace/name (or namespace/*) of the service accounts that may assume it"},
          "statements": {
            "type": "array", "minItems": 1,
            "items": {
              "type": "object",
              "additionalProperties": false,
              "required": ["actions", "resources"],
              "properties": {
                "sid": {"type": "string"},
                "effect": {"enum": ["Allow", "Deny"]},
                "actions": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "resources": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "condition": {"type": "object"}
              }
            }
          }
        }
      }
    }
  }
}`)

// jsonString is s as a JSON string literal.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// podRoles turns the user's pod roles into constructs, merged with every
// plugin's.
func podRoles(v Values) []construct.PodRole {
	var out []construct.PodRole
	for _, r := range v.PodRoles {
		pr := construct.PodRole{Name: r.Name, ServiceAccounts: r.ServiceAccounts, Reason: "plugins.iam.values.podRoles"}
		for _, st := range r.Statements {
			pr.Statements = append(pr.Statements, construct.IAMStatement{Sid: st.Sid, Effect: st.Effect, Actions: st.Actions, Resources: st.Resources, Condition: st.Condition})
		}
		out = append(out, pr)
	}
	return out
}

// maxRoleName is IAM's limit on a role's name.
const maxRoleName = 64

// renderPodIdentity adds the OIDC provider that trusts the cluster's
// service-account issuer, and a role per pod role trusting it for exactly
// that role's service accounts, to the iam stack.
func renderPodIdentity(c *config.Cluster, set *construct.Set, s *construct.Stack) diag.List {
	issuer, d := config.ServiceAccountIssuer(c)
	if d != nil {
		return diag.List{*d}
	}
	provider := strings.TrimPrefix(issuer, "https://")
	// No ThumbprintList: AWS verifies an issuer hosted in S3 with its own
	// library of trusted certificate authorities, and a thumbprint pinned
	// here would break at S3's next certificate rotation.
	s.Resources[names.OIDCProvider] = cfn.MustRaw(&iam.OIDCProvider{Url: issuer, ClientIdList: []string{names.PodRoleAudience}})
	s.Outputs[names.OutputOIDCProviderArn] = cfn.MustRaw(cloudformation.Output{
		Value: cfn.Ref(names.OIDCProvider), Description: "IAM OIDC provider of the cluster's service-account issuer: the federated principal pod roles trust"})
	s.Outputs[names.OutputServiceAccountIssuer] = cfn.MustRaw(cloudformation.Output{
		Value: issuer, Description: "Issuer of the cluster's service-account tokens (OIDC discovery at <issuer>/.well-known/openid-configuration)"})

	var diags diag.List
	for i, r := range set.PodRoles {
		at := fmt.Sprintf("podRoles[%d]", i)
		name := names.PodRoleName(c.ClusterName, r.Name)
		if len(name) > maxRoleName {
			diags = append(diags, diag.Fatalf("pod role %q would be the IAM role %s, %d characters, over IAM's limit of %d", r.Name, name, len(name), maxRoleName).
				At(at).About(r.Plugin).WithHint("shorten the role's name or clusterName"))
			continue
		}
		var statements []any
		for j, st := range r.Statements {
			body, d := statement(st)
			for _, x := range d {
				diags = append(diags, x.At(fmt.Sprintf("%s.statements[%d]", at, j)).About(r.Plugin))
			}
			if !d.HasFatal() {
				statements = append(statements, body)
			}
		}
		subject := "StringEquals"
		var subs []any
		for _, sa := range r.ServiceAccounts {
			ns, n, _ := strings.Cut(sa, "/")
			if strings.Contains(n, "*") {
				subject = "StringLike"
			}
			subs = append(subs, "system:serviceaccount:"+ns+":"+n)
		}
		// The audience is always checked for equality; the subject with
		// StringLike only when a namespace's every account is allowed.
		cond := map[string]any{"StringEquals": map[string]any{provider + ":aud": names.PodRoleAudience}}
		if subject == "StringEquals" {
			cond["StringEquals"].(map[string]any)[provider+":sub"] = subs
		} else {
			cond["StringLike"] = map[string]any{provider + ":sub": subs}
		}
		trust := map[string]any{
			"Version": "2012-10-17",
			"Statement": []any{map[string]any{
				"Effect":    "Allow",
				"Principal": map[string]any{"Federated": cfn.RefObj(names.OIDCProvider)},
				"Action":    []any{"sts:AssumeRoleWithWebIdentity"},
				"Condition": cond,
			}},
		}
		doc := map[string]any{"Version": "2012-10-17", "Statement": statements}
		if compact, _ := cfn.Marshal(doc, false); len(compact) > MaxInlinePolicyBytes {
			diags = append(diags, diag.Fatalf("pod role %q's policy is %d bytes, over IAM's limit of %d for a role's inline policies", r.Name, len(compact), MaxInlinePolicyBytes).
				At(at).About(r.Plugin).WithHint("merge statements, or use wildcards in action names"))
		}
		id := names.PodRoleResource(r.Name)
		if _, dup := s.Resources[id]; dup {
			diags = append(diags, diag.Fatalf("pod role %q has the logical ID %s of another resource of the iam stack", r.Name, id).At(at).About(r.Plugin).
				WithHint("rename the role"))
			continue
		}
		s.Resources[id] = cfn.MustRaw(&iam.Role{
			RoleName:                 name,
			Description:              truncateDescription(fmt.Sprintf("kube-aws %s: pod role %s (%s), assumed by %s", c.ClusterName, r.Name, r.Plugin, strings.Join(r.ServiceAccounts, ", "))),
			Path:                     "/",
			AssumeRolePolicyDocument: trust,
			Policies:                 []iam.Role_Policy{{PolicyName: "kube-aws-pod-" + r.Name, PolicyDocument: doc}},
		})
		s.Outputs[names.PodRoleArnOutput(r.Name)] = cfn.MustRaw(cloudformation.Output{
			Value: cfn.GetAtt(id, "Arn"), Description: "ARN of pod role " + r.Name + " (annotation " + names.PodRoleARNAnnotation + ")"})
	}
	return diags
}

// truncateDescription keeps a role's description within IAM's 1000
// characters, whatever the number of service accounts.
func truncateDescription(s string) string {
	if len(s) <= 1000 {
		return s
	}
	return s[:997] + "..."
}
