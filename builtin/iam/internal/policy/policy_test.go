package policy

import (
	"encoding/json"
	"testing"

	"github.com/awslabs/goformation/v4/cloudformation/iam"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/construct"
)

// TestPolicyDocumentIsTheEncodedMap: the policy written from its
// statements' JSON is, byte for byte, what encoding the document as data
// gave, alone (for the size check) and inside a role's resource (HTML
// characters escaped there, numbers as written, keys sorted).
func TestPolicyDocumentIsTheEncodedMap(t *testing.T) {
	for _, tc := range []struct {
		name       string
		statements []construct.IAMStatement
	}{
		{"one", []construct.IAMStatement{
			{Sid: "Read", Effect: "Allow", Actions: []string{"s3:GetObject"}, Resources: []string{"arn:aws:s3:::b/k/*"}},
		}},
		{"several, with a condition, HTML characters and non-ASCII", []construct.IAMStatement{
			{Sid: "A", Actions: []string{"s3:GetObject", "s3:PutObject"}, Resources: []string{"arn:aws:s3:::b/<a>&b/*", "arn:aws:s3:::b/é\u2028"}},
			{Effect: "Deny", Actions: []string{"*"}, Resources: []string{"*"},
				Condition: json.RawMessage(`{"NumericLessThan": {"aws:MultiFactorAuthAge": 3600.50}, "StringEquals": {"z": "1", "a": "<&>"}}`)},
			{Sid: "Last", Actions: []string{"kms:Decrypt"}, Resources: []string{"arn:aws:kms:eu-west-1:123456789012:key/1"},
				Condition: json.RawMessage(`{"StringEquals":{"kms:EncryptionContext:role":"etcd"}}`)},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bodies []any
			var keys []json.RawMessage
			for _, st := range tc.statements {
				body, diags := statement(st)
				if diags.HasFatal() {
					t.Fatal(diags)
				}
				key, err := cfn.Marshal(body, false)
				if err != nil {
					t.Fatal(err)
				}
				bodies = append(bodies, body)
				keys = append(keys, key)
			}
			asData := map[string]any{"Version": "2012-10-17", "Statement": bodies}
			want, err := cfn.Marshal(asData, false)
			if err != nil {
				t.Fatal(err)
			}
			got := policyDocument(keys)
			if string(got) != string(want) {
				t.Fatalf("policy document:\n got %s\nwant %s", got, want)
			}
			role := func(doc any) string {
				return string(cfn.MustRaw(&iam.Role{Path: "/", Policies: []iam.Role_Policy{{PolicyName: "p", PolicyDocument: doc}}}))
			}
			if g, w := role(got), role(asData); g != w {
				t.Fatalf("role resource:\n got %s\nwant %s", g, w)
			}
		})
	}
}
