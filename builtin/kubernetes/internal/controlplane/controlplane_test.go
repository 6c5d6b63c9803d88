package controlplane

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

func TestFlagsRefuseEmptyValues(t *testing.T) {
	got, err := flags("kube-scheduler", map[string]string{"b": "2", "a": "1"})
	if err != nil || strings.Join(got, " ") != "kube-scheduler --a=1 --b=2" {
		t.Errorf("flags = %v, %v; want the binary, then sorted flags", got, err)
	}
	if _, err := flags("kube-controller-manager", map[string]string{"cluster-cidr": ""}); err == nil ||
		!strings.Contains(err.Error(), "kube-controller-manager flag --cluster-cidr has an empty value") {
		t.Errorf("empty value: %v", err)
	}
}

// The controllers run the drainer (the drain settings are the hooks', not
// the plan's: a change of them replaces no controller), and may answer the termination hook of the cluster's own groups only, and
// write drain statuses under the cluster's prefix only.
func TestDrainer(t *testing.T) {
	tests := []struct {
		name    string
		cluster config.Cluster
		plan    nodeplan.DrainerPlan
		status  string // the S3 resource of the status statement
		fatal   string
	}{
		{"defaults", config.Cluster{ClusterName: "demo", Region: "us-east-1", S3URI: "s3://bucket/clusters/demo"},
			nodeplan.DrainerPlan{Kubeconfig: names.KubeconfigAdmin, Hook: names.DrainLifecycleHook},
			"arn:aws:s3:::bucket/clusters/demo/drains/*", ""},
		{"forced, no prefix, another partition", config.Cluster{ClusterName: "cn", Region: "cn-north-1", S3URI: "s3://bucket", Drain: config.Drain{Timeout: "90s", Force: true}},
			nodeplan.DrainerPlan{Kubeconfig: names.KubeconfigAdmin, Hook: names.DrainLifecycleHook},
			"arn:aws-cn:s3:::bucket/drains/*", ""},
		{"no s3URI", config.Cluster{ClusterName: "demo", Region: "us-east-1"},
			nodeplan.DrainerPlan{Kubeconfig: names.KubeconfigAdmin, Hook: names.DrainLifecycleHook}, "", "s3URI"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var set construct.Set
			diags, err := Drainer(&set, &tt.cluster)
			if err != nil {
				t.Fatal(err)
			}
			if (tt.fatal == "") != (len(diags) == 0) || (tt.fatal != "" && (!diags.HasFatal() || diags[0].Path != tt.fatal)) {
				t.Fatalf("diagnostics %v, want a fatal at %q", diags, tt.fatal)
			}
			var plan nodeplan.DrainerPlan
			if len(set.Files) != 1 || set.Files[0].Path != nodeplan.DrainerPath || set.Files[0].Target != controller {
				t.Fatalf("files %+v", set.Files)
			}
			if err := nodeplan.Decode([]byte(set.Files[0].Content), &plan); err != nil || plan != tt.plan {
				t.Errorf("plan %+v (%v), want %+v", plan, err, tt.plan)
			}
			if len(set.Units) != 1 || set.Units[0].Name != DrainerUnit || !set.Units[0].Enable || set.Units[0].Target != controller ||
				!strings.Contains(set.Units[0].Content, "ExecStart=/opt/kube-aws/bin/kube-aws-node drainer\n") || !strings.Contains(set.Units[0].Content, "Restart=always") {
				t.Errorf("units %+v", set.Units)
			}
			byID := map[string]construct.IAMStatement{}
			for _, st := range set.IAM {
				if st.Target != controller || st.Effect != "Allow" {
					t.Errorf("statement %+v", st)
				}
				byID[st.Sid] = st
			}
			hook := byID["KubeAwsDrainerHook"]
			var cond map[string]map[string]string
			if err := json.Unmarshal(hook.Condition, &cond); err != nil ||
				cond["StringEquals"]["autoscaling:ResourceTag/kubernetes.io/cluster/"+tt.cluster.ClusterName] != "owned" || len(cond["StringEquals"]) != 1 ||
				strings.Join(hook.Actions, " ") != "autoscaling:CompleteLifecycleAction autoscaling:RecordLifecycleActionHeartbeat" {
				t.Errorf("hook statement %+v (condition %s)", hook, hook.Condition)
			}
			if find := byID["KubeAwsDrainerFind"]; strings.Join(find.Actions, " ") != "autoscaling:DescribeAutoScalingGroups autoscaling:DescribeLifecycleHooks ec2:DescribeInstances" || find.Condition != nil {
				t.Errorf("find statement %+v", find)
			}
			if st, ok := byID["KubeAwsDrainerStatus"]; (tt.status == "") == ok || (ok && (strings.Join(st.Resources, " ") != tt.status || strings.Join(st.Actions, " ") != "s3:PutObject")) {
				t.Errorf("status statement %+v, want %s", st, tt.status)
			}
		})
	}
}

// Every controller runs the pod identity webhook, with the admin
// kubeconfig and the cluster CA.
func TestPodIdentityWebhook(t *testing.T) {
	var set construct.Set
	if err := PodIdentityWebhook(&set); err != nil {
		t.Fatal(err)
	}
	if len(set.Files) != 1 || set.Files[0].Path != nodeplan.PodIdentityWebhookPath || set.Files[0].Target != controller {
		t.Fatalf("files %+v", set.Files)
	}
	var plan nodeplan.PodIdentityWebhookPlan
	want := nodeplan.PodIdentityWebhookPlan{Kubeconfig: names.KubeconfigAdmin, CACert: names.PKICACert, CAKey: names.PKICAKey}
	if err := nodeplan.Decode([]byte(set.Files[0].Content), &plan); err != nil || plan != want {
		t.Errorf("plan %+v (%v), want %+v", plan, err, want)
	}
	if len(set.Units) != 1 || set.Units[0].Name != PodIdentityWebhookUnit || !set.Units[0].Enable || set.Units[0].Target != controller ||
		!strings.Contains(set.Units[0].Content, "ExecStart=/opt/kube-aws/bin/kube-aws-node pod-identity-webhook\n") || !strings.Contains(set.Units[0].Content, "Restart=always") {
		t.Errorf("units %+v", set.Units)
	}
	if len(set.IAM) != 0 {
		t.Errorf("IAM %+v: the webhook calls no AWS API but the instance metadata service", set.IAM)
	}
}
