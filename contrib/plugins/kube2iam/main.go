// Command kube2iam is a contrib kube-aws plugin for kube2iam, which gives
// pods their own IAM roles (seed 004's "Additional Worker IAM Permissions /
// kube2iam" example): the worker roles get sts:AssumeRole on the roles pods
// may use, and kube2iam's DaemonSet is installed as a Helm release from a
// chart the plugin ships. It is built only on the public SDK.
package main

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"

	"github.com/kube-aws/kube-aws/contrib/internal/chartcache"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

func main() { sdk.Serve(plugin{}) }

// Name and Version identify the plugin.
const (
	Name    = "kube2iam"
	Version = "0.1.0"
)

//go:embed schema.json
var schema []byte

//go:embed all:charts/kube2iam
var chart embed.FS

// Sid names the statement in the worker policies. IAM Sids are unique per
// policy, so it carries the plugin's name to stay clear of other plugins'.
const Sid = "Kube2iamAssumeRole"

// PoolLabel marks the nodes of the chosen pools when values.nodePools
// narrows kube2iam to some pools.
const PoolLabel = "kube2iam.kube-aws.io/enabled"

// Values are the plugin's values (schema.json).
type Values struct {
	RoleARNs      []string `json:"roleARNs"`
	NodePools     []string `json:"nodePools,omitempty"`
	BaseRoleARN   string   `json:"baseRoleARN,omitempty"`
	DefaultRole   string   `json:"defaultRole,omitempty"`
	HostInterface string   `json:"hostInterface,omitempty"`
	Namespace     string   `json:"namespace,omitempty"`
	Image         string   `json:"image,omitempty"`
}

func (v Values) withDefaults() Values {
	if v.HostInterface == "" {
		v.HostInterface = "cni0"
	}
	if v.Namespace == "" {
		v.Namespace = "kube-system"
	}
	if v.Image == "" {
		v.Image = "jtblin/kube2iam:0.11.2"
	}
	return v
}

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         Name,
		Version:      Version,
		Description:  "contrib: kube2iam (worker IAM to assume pod roles, and its DaemonSet as a Helm release)",
		ValuesSchema: schema,
	}
}

func (plugin) Initialise(_ context.Context, req *sdk.Request) (*stage.Result, error) {
	c, err := req.Cluster()
	if err != nil {
		return nil, err
	}
	var v Values
	if err := req.DecodeValues(&v); err != nil {
		return nil, err
	}
	v = v.withDefaults()
	var diags diag.List
	if len(v.RoleARNs) == 0 {
		diags = append(diags, diag.Fatalf("plugin kube2iam needs values.roleARNs: the IAM roles pods may assume").
			At("plugins.kube2iam.values.roleARNs").
			WithHint("list role ARNs, wildcards allowed: roleARNs: [arn:aws:iam::123456789012:role/k8s-*]"))
	}
	pools := map[string]bool{}
	for _, p := range c.NodePools {
		pools[p.Name] = true
	}
	for i, p := range v.NodePools {
		if !pools[p] {
			diags = append(diags, diag.Fatalf("plugin kube2iam: node pool %q is not in cluster.yaml", p).
				At(c.ValuesPath(Name, "", fmt.Sprintf("/nodePools/%d", i))).
				WithHint("name a pool from nodePools[].name, or leave nodePools empty for every pool"))
		}
	}
	if diags.HasFatal() {
		return &stage.Result{Diagnostics: diags}, nil
	}

	set := &construct.Set{}
	// kube2iam runs on every worker and calls AssumeRole with the node's
	// own credentials; the roles' trust policies must admit the worker
	// roles (the iam stack outputs NodePool<Name>RoleArn).
	targets := []construct.Target{{Role: construct.Worker}}
	if len(v.NodePools) > 0 {
		targets = targets[:0]
		for _, p := range v.NodePools {
			targets = append(targets, construct.Target{Role: construct.Worker, NodePool: p})
		}
	}
	nodeSelector := map[string]string{}
	if len(v.NodePools) > 0 {
		// Only the chosen pools may assume the roles, so the DaemonSet
		// runs only there: the plugin labels those nodes and selects them.
		nodeSelector[PoolLabel] = "true"
		for _, t := range targets {
			set.NodeLabels = append(set.NodeLabels, construct.NodeLabel{Target: t, Key: PoolLabel, Value: "true"})
		}
	}
	for _, t := range targets {
		set.IAM = append(set.IAM, construct.IAMStatement{
			Target: t, Sid: Sid, Effect: "Allow",
			Actions: []string{"sts:AssumeRole"}, Resources: append([]string(nil), v.RoleARNs...),
		})
	}

	path, err := chartcache.Extract(chart, "charts/kube2iam", req.WorkDir, Name)
	if err != nil {
		return nil, err
	}
	vals, err := json.Marshal(map[string]any{
		"image":         v.Image,
		"hostInterface": v.HostInterface,
		"baseRoleARN":   v.BaseRoleARN,
		"defaultRole":   v.DefaultRole,
		"port":          8181,
		"nodeSelector":  nodeSelector,
	})
	if err != nil {
		return nil, err
	}
	set.HelmReleases = []construct.HelmRelease{{
		Name: "kube2iam", Namespace: v.Namespace,
		Chart:  construct.Chart{Path: path, Name: "kube2iam", Version: "0.1.0"},
		Values: vals,
	}}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &stage.Result{Values: out, Constructs: set, Diagnostics: diags}, nil
}
