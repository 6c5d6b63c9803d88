package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/contrib/internal/contribtest"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
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

func TestDiscoveryTagsOnEveryNodePoolStack(t *testing.T) {
	res := initialise(t, "", `{}`)
	if res.Diagnostics.HasFatal() {
		t.Fatal(res.Diagnostics)
	}
	got := map[string]map[string]string{}
	for _, s := range res.Constructs.Stacks {
		got[s.Name] = s.Tags
		if len(s.Resources) > 0 || len(s.Outputs) > 0 {
			t.Errorf("stack %s: only tags expected, got resources or outputs", s.Name)
		}
	}
	for _, name := range []string{"nodepool-general", "nodepool-gpu-spot"} {
		tags := got[name]
		if tags[TagEnabled] != "true" || tags["k8s.io/cluster-autoscaler/demo"] != "owned" {
			t.Errorf("stack %s tags %v", name, tags)
		}
	}
	if len(got) != 2 {
		t.Errorf("want the two node pool stacks only, got %v", contribtest.Keys(got))
	}
}

func TestIAMForTheNodePoolsGroups(t *testing.T) {
	res := initialise(t, "", `{}`)
	if len(res.Constructs.IAM) != 0 {
		t.Errorf("IAM statements on a machine role %+v: the autoscaler's permissions are its pod role's", res.Constructs.IAM)
	}
	roles := res.Constructs.PodRoles
	if len(roles) != 1 || roles[0].Name != "cluster-autoscaler" || len(roles[0].ServiceAccounts) != 1 ||
		roles[0].ServiceAccounts[0] != "kube-system/cluster-autoscaler" || len(roles[0].Statements) != 2 {
		t.Fatalf("pod roles %+v", roles)
	}
	byAction := map[string]construct.IAMStatement{}
	for _, st := range roles[0].Statements {
		for _, a := range st.Actions {
			byAction[a] = st
		}
	}
	for _, a := range []string{"autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup", "autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeTags"} {
		if _, ok := byAction[a]; !ok {
			t.Errorf("no statement allows %s", a)
		}
	}
	scale := byAction["autoscaling:SetDesiredCapacity"]
	var cond map[string]map[string]string
	if err := json.Unmarshal(scale.Condition, &cond); err != nil || cond["StringEquals"]["aws:ResourceTag/k8s.io/cluster-autoscaler/demo"] != "owned" {
		t.Errorf("scaling is not limited to the cluster's groups: %s", scale.Condition)
	}
	if len(scale.Resources) != 1 || scale.Resources[0] != "arn:aws:autoscaling:us-east-1:*:autoScalingGroup:*:autoScalingGroupName/*" {
		t.Errorf("scaling is on %v, want the auto scaling groups of the cluster's region", scale.Resources)
	}
	// Controllers get a label the release selects.
	if len(res.Constructs.NodeLabels) != 1 || res.Constructs.NodeLabels[0].Key != names.LabelRole {
		t.Errorf("labels %+v", res.Constructs.NodeLabels)
	}
}

func TestRunOnWorkers(t *testing.T) {
	res := initialise(t, "", `{"runOn": "worker"}`)
	if len(res.Constructs.IAM) != 0 || len(res.Constructs.PodRoles) != 1 {
		t.Errorf("IAM %+v, pod roles %+v: want the pod role alone wherever it runs", res.Constructs.IAM, res.Constructs.PodRoles)
	}
	if len(res.Constructs.NodeLabels) != 0 {
		t.Errorf("labels %+v", res.Constructs.NodeLabels)
	}
	dep := contribtest.RenderChart(t, res.Constructs.HelmReleases[0], "1.31.4")["cluster-autoscaler/templates/deployment.yaml"]
	if strings.Contains(dep, "nodeSelector") || strings.Contains(dep, "tolerations") {
		t.Errorf("worker deployment pinned:\n%s", dep)
	}
}

func TestReleaseRenders(t *testing.T) {
	res := initialise(t, "", `{"extraArgs": {"scale-down-unneeded-time": "5m", "max-node-provision-time": "10m"}}`)
	rels := res.Constructs.HelmReleases
	if len(rels) != 1 || rels[0].Namespace != "kube-system" {
		t.Fatalf("releases %+v", rels)
	}
	out := contribtest.RenderChart(t, rels[0], "1.31.4")
	dep := out["cluster-autoscaler/templates/deployment.yaml"]
	for _, want := range []string{
		"image: registry.k8s.io/autoscaling/cluster-autoscaler:v1.31.0",
		"--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/demo",
		"--max-node-provision-time=10m\n            - --scale-down-unneeded-time=5m",
		`value: "us-east-1"`,
		names.LabelRole + ": controller",
		"key: " + names.TaintControlPlane,
	} {
		if !strings.Contains(dep, want) {
			t.Errorf("deployment lacks %q:\n%s", want, dep)
		}
	}
	if !strings.Contains(out["cluster-autoscaler/templates/rbac.yaml"], "kind: ClusterRole") {
		t.Errorf("no RBAC rendered")
	}
}

func TestImageFollowsKubernetesVersion(t *testing.T) {
	y := strings.Replace(contribtest.ClusterYAML, `kubernetesVersion: "1.31.4"`, `kubernetesVersion: "1.29.2"`, 1)
	res := initialise(t, y, `{}`)
	var v Values
	if err := json.Unmarshal(res.Values, &v); err != nil || v.Image != "registry.k8s.io/autoscaling/cluster-autoscaler:v1.29.0" {
		t.Errorf("values %s", res.Values)
	}
}

func TestNoNodePoolsWarns(t *testing.T) {
	y := contribtest.ClusterYAML[:strings.Index(contribtest.ClusterYAML, "nodePools:")]
	res := initialise(t, y, `{}`)
	if len(res.Diagnostics) != 1 || res.Diagnostics[0].Severity != diag.Warning {
		t.Errorf("diagnostics %v", res.Diagnostics)
	}
}

func TestBadValuesRejectedWithTheirPath(t *testing.T) {
	contribtest.ExpectRejected(t, Name, schema, `{"runOn": "etcd"}`, "plugins.cluster-autoscaler.values.runOn", "")
	contribtest.ExpectRejected(t, Name, schema, `{"replicas": 5}`, "plugins.cluster-autoscaler.values.replicas", "")
	contribtest.ExpectRejected(t, Name, schema, `{"extraArgs": {"--bad": "x"}}`, "plugins.cluster-autoscaler.values.extraArgs.--bad", `unknown key "--bad" in /extraArgs`)
	contribtest.ExpectRejected(t, Name, schema, `{"extraArgs": {"expander": ["a"]}}`, "plugins.cluster-autoscaler.values.extraArgs.expander", "")
	if d := contribtest.Validate(t, Name, schema, `{"runOn": "worker", "extraArgs": {"expander": "least-waste", "scan-interval": 10}}`); len(d) > 0 {
		t.Errorf("good values rejected: %v", d)
	}
}

// The autoscaler's pod gets its pod role's credentials with its own token:
// its service account names the role, and no machine role's pods are let
// reach the metadata service.
func TestServiceAccountNamesItsPodRole(t *testing.T) {
	for _, values := range []string{`{}`, `{"runOn": "worker"}`, `{"namespace": "autoscaling"}`} {
		t.Run(values, func(t *testing.T) {
			res := initialise(t, "", values)
			if got := res.Constructs.PodMetadata; len(got) != 0 {
				t.Errorf("pod metadata requests %+v, want none", got)
			}
			rbac := contribtest.RenderChart(t, res.Constructs.HelmReleases[0], "1.31.4")["cluster-autoscaler/templates/rbac.yaml"]
			if !strings.Contains(rbac, "annotations:\n    "+names.PodRoleNameAnnotation+": cluster-autoscaler\n") {
				t.Errorf("the service account does not name the pod role:\n%s", rbac)
			}
			ns := res.Constructs.HelmReleases[0].Namespace
			if sa := res.Constructs.PodRoles[0].ServiceAccounts; len(sa) != 1 || sa[0] != ns+"/cluster-autoscaler" {
				t.Errorf("the role trusts %v, want the release's service account %s/cluster-autoscaler", sa, ns)
			}
		})
	}
}
