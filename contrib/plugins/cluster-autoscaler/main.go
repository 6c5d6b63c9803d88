// Command cluster-autoscaler is a contrib kube-aws plugin for the Kubernetes
// cluster autoscaler on AWS: a pod role (IAM for service accounts) that may
// scale the node pools' auto scaling groups, the discovery tags on every node pool stack (CloudFormation
// propagates stack tags to the groups), and the autoscaler itself as a Helm
// release from a chart the plugin ships. It is built only on the public SDK.
package main

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/kubeversion"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
	"github.com/kube-aws/kube-aws/plugins/sdk/chartcache"
)

func main() { sdk.Serve(sdk.Typed[Values](plugin{})) }

// Name and Version identify the plugin.
const (
	Name    = "cluster-autoscaler"
	Version = "0.1.0"
)

//go:embed schema.json
var schema []byte

//go:embed all:charts/cluster-autoscaler
var chart embed.FS

// Tags the autoscaler discovers node groups by
// (--node-group-auto-discovery=asg:tag=...).
const (
	TagEnabled     = "k8s.io/cluster-autoscaler/enabled"
	tagOwnerPrefix = "k8s.io/cluster-autoscaler/"
)

// Values are the plugin's values (schema.json).
type Values struct {
	RunOn     string                     `json:"runOn,omitempty"`
	Image     string                     `json:"image,omitempty"`
	Replicas  int                        `json:"replicas,omitempty"`
	Namespace string                     `json:"namespace,omitempty"`
	ExtraArgs map[string]json.RawMessage `json:"extraArgs,omitempty"`
}

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         Name,
		Version:      Version,
		Description:  "contrib: cluster autoscaler (IAM for the node pools' auto scaling groups, discovery tags, Helm release)",
		ValuesSchema: schema,
	}
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[Values]) (*stage.Result, error) {
	c, v := in.Cluster, in.Values
	var diags diag.List
	v, d := withDefaults(v, c)
	diags = append(diags, d...)
	if len(c.NodePools) == 0 {
		diags = append(diags, diag.Warningf("plugin cluster-autoscaler is enabled but cluster.yaml has no node pools to scale").At("nodePools"))
	}
	if diags.HasFatal() {
		return &stage.Result{Diagnostics: diags}, nil
	}
	set := &construct.Set{}

	// Discovery tags on every node pool stack. The cloudformation built-in
	// names a pool's stack nodepool-<name>; contributing tags to it merges
	// with that stack rather than making a new one.
	for _, p := range c.NodePools {
		set.Stacks = append(set.Stacks, construct.Stack{
			Name: names.NodePoolStack(p.Name),
			Tags: map[string]string{TagEnabled: "true", tagOwnerPrefix + c.ClusterName: "owned"},
		})
	}

	target := construct.Target{Role: construct.Role(v.RunOn)}
	// The autoscaler calls Auto Scaling and EC2 with a pod role of its own
	// (IAM roles for service accounts): its service account names the role,
	// the controllers' webhook gives its pod a token STS trades for the
	// role's credentials, and no node's role holds these permissions or
	// lets pods reach the metadata service.
	set.PodRoles = []construct.PodRole{{
		Name:            Name,
		ServiceAccounts: []string{v.Namespace + "/" + Name},
		Reason:          "cluster-autoscaler scales the node pools' auto scaling groups",
		Statements: []construct.IAMStatement{
			{
				Sid: "ClusterAutoscalerDescribe", Effect: "Allow",
				Actions: []string{
					"autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeAutoScalingInstances",
					"autoscaling:DescribeLaunchConfigurations", "autoscaling:DescribeScalingActivities",
					"autoscaling:DescribeTags", "ec2:DescribeImages", "ec2:DescribeInstanceTypes",
					"ec2:DescribeLaunchTemplateVersions", "ec2:GetInstanceTypesFromInstanceRequirements",
				},
				Resources: []string{"*"},
			},
			{
				// Scaling is limited to the groups this cluster owns: the
				// owner tag is on every node pool's group and nowhere else.
				// Both actions act on a group, so the statement names groups
				// of the cluster's region (any name: pools' groups are named
				// by CloudFormation) and the tag picks this cluster's.
				Sid: "ClusterAutoscalerScale", Effect: "Allow",
				Actions: []string{"autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"},
				Resources: []string{fmt.Sprintf("arn:%s:autoscaling:%s:*:autoScalingGroup:*:autoScalingGroupName/*",
					config.Partition(c.Region), c.Region)},
				Condition: mustJSON(map[string]any{"StringEquals": map[string]string{
					"aws:ResourceTag/" + tagOwnerPrefix + c.ClusterName: "owned",
				}}),
			},
		},
	}}

	nodeSelector := map[string]string{}
	var tolerations []map[string]string
	if v.RunOn == string(construct.Controller) {
		// Controllers carry no role label of their own that a kubelet may
		// set (node-role.kubernetes.io/* is reserved), so the plugin adds
		// names.LabelRole (the kubernetes built-in adds the same) and
		// selects it, and tolerates the control-plane taint.
		set.NodeLabels = []construct.NodeLabel{{Target: target, Key: names.LabelRole, Value: string(construct.Controller)}}
		nodeSelector[names.LabelRole] = string(construct.Controller)
		tolerations = []map[string]string{{"key": names.TaintControlPlane, "operator": "Exists", "effect": "NoSchedule"}}
	}

	path, err := chartcache.Extract(chart, "charts/cluster-autoscaler", in.WorkDir, Name)
	if err != nil {
		return nil, err
	}
	extra := v.ExtraArgs
	if extra == nil {
		extra = map[string]json.RawMessage{}
	}
	vals, err := json.Marshal(map[string]any{
		"image":                     v.Image,
		"clusterName":               c.ClusterName,
		"region":                    c.Region,
		"replicas":                  v.Replicas,
		"extraArgs":                 extra,
		"nodeSelector":              nodeSelector,
		"tolerations":               orEmpty(tolerations),
		"serviceAccountAnnotations": map[string]string{names.PodRoleNameAnnotation: Name},
	})
	if err != nil {
		return nil, err
	}
	set.HelmReleases = []construct.HelmRelease{{
		Name: "cluster-autoscaler", Namespace: v.Namespace,
		Chart:  construct.Chart{Path: path, Name: "cluster-autoscaler", Version: "0.1.0"},
		Values: vals,
	}}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &stage.Result{Values: out, Constructs: set, Diagnostics: diags}, nil
}

// withDefaults fills in defaults; the image follows the cluster's Kubernetes
// minor version, as the autoscaler's releases do.
func withDefaults(v Values, c *config.Cluster) (Values, diag.List) {
	if v.RunOn == "" {
		v.RunOn = string(construct.Controller)
	}
	if v.Replicas == 0 {
		v.Replicas = 1
	}
	if v.Namespace == "" {
		v.Namespace = "kube-system"
	}
	if v.Image == "" {
		kv, err := kubeversion.Parse(c.KubernetesVersion)
		if err != nil {
			return v, diag.List{diag.Fatalf("plugin cluster-autoscaler cannot choose an image for kubernetesVersion %q: %v", c.KubernetesVersion, err).
				At("kubernetesVersion").WithHint("set plugins.cluster-autoscaler.values.image")}
		}
		v.Image = fmt.Sprintf("registry.k8s.io/autoscaling/cluster-autoscaler:v1.%d.0", kv.Minor)
	}
	return v, nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func orEmpty(s []map[string]string) []map[string]string {
	if s == nil {
		return []map[string]string{}
	}
	return s
}
