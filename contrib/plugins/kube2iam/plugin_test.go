package main

import (
	"context"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/contrib/internal/contribtest"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

func initialise(t *testing.T, values string) *stage.Result {
	t.Helper()
	req := contribtest.Request(t, stage.Initialise, nil, Name, schema, values, t.TempDir())
	res, err := sdk.Call(context.Background(), sdk.Typed[Values](plugin{}), req)
	if err != nil {
		t.Fatalf("initialise: %v", err)
	}
	return res
}

func TestWorkerRolesMayAssumeTheConfiguredRoles(t *testing.T) {
	res := initialise(t, `{"roleARNs": ["arn:aws:iam::123456789012:role/k8s-*", "arn:aws:iam::123456789012:role/reader"]}`)
	if res.Diagnostics.HasFatal() {
		t.Fatal(res.Diagnostics)
	}
	iam := res.Constructs.IAM
	if len(iam) != 1 {
		t.Fatalf("want one statement for every worker pool, got %+v", iam)
	}
	st := iam[0]
	if st.Target != (construct.Target{Role: construct.Worker}) || st.Sid != Sid || st.Effect != "Allow" ||
		strings.Join(st.Actions, ",") != "sts:AssumeRole" ||
		strings.Join(st.Resources, ",") != "arn:aws:iam::123456789012:role/k8s-*,arn:aws:iam::123456789012:role/reader" {
		t.Errorf("statement %+v", st)
	}
	if len(res.Constructs.NodeLabels) != 0 {
		t.Errorf("no pools chosen, yet labels %+v", res.Constructs.NodeLabels)
	}
}

func TestNodePoolsNarrowIAMAndDaemonSet(t *testing.T) {
	res := initialise(t, `{"roleARNs": ["arn:aws:iam::123456789012:role/app"], "nodePools": ["general"]}`)
	s := res.Constructs
	if len(s.IAM) != 1 || s.IAM[0].Target != (construct.Target{Role: construct.Worker, NodePool: "general"}) {
		t.Errorf("IAM %+v", s.IAM)
	}
	if len(s.NodeLabels) != 1 || s.NodeLabels[0].Key != PoolLabel || s.NodeLabels[0].Target.NodePool != "general" {
		t.Errorf("labels %+v", s.NodeLabels)
	}
	ds := contribtest.RenderChart(t, s.HelmReleases[0], "1.31.4")["kube2iam/templates/daemonset.yaml"]
	if !strings.Contains(ds, "nodeSelector:\n        "+PoolLabel+": \"true\"") {
		t.Errorf("DaemonSet does not select the labelled nodes:\n%s", ds)
	}
}

func TestUnknownNodePoolIsFatalWithPath(t *testing.T) {
	res := initialise(t, `{"roleARNs": ["arn:aws:iam::123456789012:role/app"], "nodePools": ["general", "nope"]}`)
	if !res.Diagnostics.HasFatal() || res.Diagnostics[0].Path != "plugins.kube2iam.values.nodePools[1]" ||
		!strings.Contains(res.Diagnostics[0].Message, `"nope"`) {
		t.Errorf("diagnostics %v", res.Diagnostics)
	}
}

func TestDaemonSetReleaseRenders(t *testing.T) {
	res := initialise(t, `{"roleARNs": ["arn:aws:iam::123456789012:role/app"], "hostInterface": "cali+", "baseRoleARN": "arn:aws:iam::123456789012:role/"}`)
	rels := res.Constructs.HelmReleases
	if len(rels) != 1 || rels[0].Name != "kube2iam" || rels[0].Namespace != "kube-system" {
		t.Fatalf("releases %+v", rels)
	}
	out := contribtest.RenderChart(t, rels[0], "1.31.4")
	ds := out["kube2iam/templates/daemonset.yaml"]
	for _, want := range []string{"kind: DaemonSet", "hostNetwork: true", "--host-interface=cali+",
		"--base-role-arn=arn:aws:iam::123456789012:role/", "image: jtblin/kube2iam:0.11.2"} {
		if !strings.Contains(ds, want) {
			t.Errorf("DaemonSet lacks %q:\n%s", want, ds)
		}
	}
	if strings.Contains(ds, "nodeSelector") {
		t.Errorf("every pool chosen, yet a nodeSelector:\n%s", ds)
	}
	if !strings.Contains(out["kube2iam/templates/rbac.yaml"], "kind: ClusterRole") {
		t.Errorf("no RBAC: %v", contribtest.Keys(out))
	}
}

// kube2iam answers pods itself from the node's network (its DaemonSet is
// hostNetwork: the test above), so it leaves the metadata service closed to
// pods: a pod on the pod network never needs the node's credentials.
func TestAsksNoPodMetadataAccess(t *testing.T) {
	for _, values := range []string{
		`{"roleARNs": ["arn:aws:iam::123456789012:role/app"]}`,
		`{"roleARNs": ["arn:aws:iam::123456789012:role/app"], "nodePools": ["general"]}`,
	} {
		if got := initialise(t, values).Constructs.PodMetadata; len(got) != 0 {
			t.Errorf("%s: pod metadata requests %+v, want none", values, got)
		}
	}
}

// TestNamespaceLabelledForPodSecurity: kube2iam is privileged on the
// node's network, which Pod Security baseline (the cluster's default)
// refuses outside kube-system, the namespace exempt from it: in any other
// namespace the plugin labels it privileged.
func TestNamespaceLabelledForPodSecurity(t *testing.T) {
	tests := []struct {
		values   string
		manifest string // "" means none
	}{
		{`{"roleARNs": ["arn:aws:iam::123456789012:role/app"]}`, ""},
		{`{"roleARNs": ["arn:aws:iam::123456789012:role/app"], "namespace": "kube-system"}`, ""},
		{`{"roleARNs": ["arn:aws:iam::123456789012:role/app"], "namespace": "iam"}`, "name: iam\n  labels:\n    pod-security.kubernetes.io/enforce: privileged\n"},
	}
	for _, tt := range tests {
		res := initialise(t, tt.values)
		if res.Diagnostics.HasFatal() {
			t.Fatal(res.Diagnostics)
		}
		ms := res.Constructs.Manifests
		switch {
		case tt.manifest == "" && len(ms) != 0:
			t.Errorf("%s: manifests %+v, want none: kube-system is exempt", tt.values, ms)
		case tt.manifest != "" && (len(ms) != 1 || !strings.Contains(ms[0].Content, "kind: Namespace") || !strings.Contains(ms[0].Content, tt.manifest)):
			t.Errorf("%s: manifests %+v, want the namespace labelled privileged", tt.values, ms)
		}
	}
}

func TestBadValuesRejectedWithTheirPath(t *testing.T) {
	contribtest.ExpectRejected(t, Name, schema, `{}`, "plugins.kube2iam.values", "roleARNs")
	contribtest.ExpectRejected(t, Name, schema, `{"roleARNs": []}`, "plugins.kube2iam.values.roleARNs", "")
	contribtest.ExpectRejected(t, Name, schema, `{"roleARNs": ["arn:aws:iam::123:role/x"]}`, "plugins.kube2iam.values.roleARNs[0]", "match pattern")
	contribtest.ExpectRejected(t, Name, schema, `{"roleARNs": ["arn:aws:iam::123456789012:role/x"], "namespace": "Kube_System"}`, "plugins.kube2iam.values.namespace", "")
	if d := contribtest.Validate(t, Name, schema, `{"roleARNs": ["arn:aws:iam::123456789012:role/x"], "nodePools": ["a"]}`); len(d) > 0 {
		t.Errorf("good values rejected: %v", d)
	}
}

// TestNodePoolOverrides: a pool that disables the plugin gets neither the
// permission nor kube2iam, and a pool's own roleARNs are its own.
func TestNodePoolOverrides(t *testing.T) {
	y := strings.Replace(contribtest.ClusterYAML, "    desiredCapacity: 0\n", "    desiredCapacity: 0\n    plugins:\n      kube2iam:\n        enabled: false\n", 1)
	req := contribtest.Request(t, stage.Initialise, contribtest.Cluster(t, y), Name, schema, `{"roleARNs": ["arn:aws:iam::123456789012:role/app"]}`, t.TempDir())
	res, err := sdk.Call(context.Background(), sdk.Typed[Values](plugin{}), req)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Constructs
	if len(s.IAM) != 1 || s.IAM[0].Target.NodePool != "general" || len(s.NodeLabels) != 1 || s.NodeLabels[0].Target.NodePool != "general" {
		t.Errorf("want IAM and label on pool general only: %+v %+v", s.IAM, s.NodeLabels)
	}

	y = strings.Replace(contribtest.ClusterYAML, "    desiredCapacity: 0\n",
		"    desiredCapacity: 0\n    plugins:\n      kube2iam:\n        values: {roleARNs: [\"arn:aws:iam::123456789012:role/gpu\"]}\n", 1)
	req = contribtest.Request(t, stage.Initialise, contribtest.Cluster(t, y), Name, schema, `{"roleARNs": ["arn:aws:iam::123456789012:role/app"]}`, t.TempDir())
	res, err = sdk.Call(context.Background(), sdk.Typed[Values](plugin{}), req)
	if err != nil {
		t.Fatal(err)
	}
	s = res.Constructs
	got := map[string]string{}
	for _, st := range s.IAM {
		got[st.Target.String()] = strings.Join(st.Resources, ",")
	}
	if got["worker/general"] != "arn:aws:iam::123456789012:role/app" || got["worker/gpu-spot"] != "arn:aws:iam::123456789012:role/gpu" || len(got) != 2 {
		t.Errorf("per-pool statements %v", got)
	}
	if len(s.NodeLabels) != 0 {
		t.Errorf("every pool runs kube2iam, yet labels %+v", s.NodeLabels)
	}
}
