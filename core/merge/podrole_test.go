package merge

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
)

func TestPodRoles(t *testing.T) {
	scale := construct.IAMStatement{Sid: "Scale", Effect: "Allow", Actions: []string{"autoscaling:SetDesiredCapacity"}, Resources: []string{"*"}}
	role := func(name string, sas ...string) construct.PodRole {
		return construct.PodRole{Name: name, ServiceAccounts: sas, Statements: []construct.IAMStatement{scale}, Reason: "r"}
	}
	other := role("ca", "kube-system/other")
	badCond := role("ca", "kube-system/ca")
	badCond.Statements = []construct.IAMStatement{{Effect: "Allow", Actions: []string{"s3:GetObject"}, Resources: []string{"*"}, Condition: json.RawMessage(`[1]`)}}
	noStatements := role("ca", "kube-system/ca")
	noStatements.Statements = nil
	tests := []struct {
		name  string
		a, b  []construct.PodRole
		want  []string // name:plugin:service accounts
		fatal string
	}{
		{name: "one", b: []construct.PodRole{role("ca", "kube-system/ca")}, want: []string{"ca:beta:kube-system/ca"}},
		{name: "same from both plugins is kept once", a: []construct.PodRole{role("ca", "kube-system/ca")}, b: []construct.PodRole{role("ca", "kube-system/ca")},
			want: []string{"ca:alpha:kube-system/ca"}},
		{name: "in name order within a plugin", a: []construct.PodRole{role("zz", "a/b"), role("aa", "a/*")}, want: []string{"aa:alpha:a/*", "zz:alpha:a/b"}},
		{name: "different definitions conflict", a: []construct.PodRole{role("ca", "kube-system/ca")}, b: []construct.PodRole{other},
			fatal: `pod role ca is defined differently by plugins "alpha" and "beta": "alpha" lets kube-system/ca assume it`},
		{name: "bad name", a: []construct.PodRole{role("Cluster_Autoscaler", "a/b")}, fatal: "a pod role's name is 1-40 lower-case letters"},
		{name: "no service accounts", a: []construct.PodRole{role("ca")}, fatal: "with no service accounts"},
		{name: "service account without namespace", a: []construct.PodRole{role("ca", "cluster-autoscaler")}, fatal: `service account "cluster-autoscaler", which is not namespace/name`},
		{name: "no statements", a: []construct.PodRole{noStatements}, fatal: "with no statements"},
		{name: "condition not an object", a: []construct.PodRole{badCond}, fatal: "has a condition that is not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, diags := Merge(two(construct.Set{PodRoles: tt.a}, construct.Set{PodRoles: tt.b}))
			if tt.fatal != "" {
				if !diags.HasFatal() || !strings.Contains(diags.Error(), tt.fatal) {
					t.Fatalf("diagnostics %v, want a fatal containing %q", diags, tt.fatal)
				}
				return
			}
			if diags.HasFatal() {
				t.Fatal(diags)
			}
			var got []string
			for _, r := range out.PodRoles {
				got = append(got, r.Name+":"+r.Plugin+":"+strings.Join(r.ServiceAccounts, ","))
				for _, st := range r.Statements {
					if st.Plugin != r.Plugin {
						t.Errorf("role %s: statement's plugin %q, want %q", r.Name, st.Plugin, r.Plugin)
					}
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("merged roles %q, want %q", got, tt.want)
			}
		})
	}
}
