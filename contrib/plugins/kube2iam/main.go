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
	"strings"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
	"github.com/kube-aws/kube-aws/plugins/sdk/chartcache"
)

func main() { sdk.Serve(sdk.Typed[Values](plugin{})) }

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

// poolChoice is the node pools kube2iam runs on, and the roles each may
// assume (a pool may override roleARNs in its own values).
type poolChoice struct {
	pools []struct {
		name     string
		roleARNs []string
	}
	// narrowed: some pool is left out (values.nodePools, or the pool
	// disables the plugin); differs: some pool has its own roleARNs.
	narrowed, differs bool
}

// selectPools decides where kube2iam runs from values.nodePools and each
// pool's effective values as kube-aws computed them (nil when it sent none).
func selectPools(c *config.Cluster, v Values, pools map[string]json.RawMessage) poolChoice {
	var out poolChoice
	chosen := map[string]bool{}
	for _, p := range v.NodePools {
		chosen[p] = true
	}
	out.narrowed = len(v.NodePools) > 0
	for _, p := range c.NodePools {
		if len(v.NodePools) > 0 && !chosen[p.Name] {
			continue
		}
		arns := v.RoleARNs
		if pools != nil {
			raw, ok := pools[p.Name]
			if !ok {
				out.narrowed = true // nodePools[].plugins.kube2iam.enabled: false
				continue
			}
			var own Values
			if err := json.Unmarshal(raw, &own); err == nil && len(own.RoleARNs) > 0 {
				arns = own.RoleARNs
			}
			if strings.Join(arns, "\x00") != strings.Join(v.RoleARNs, "\x00") {
				out.differs = true
			}
		}
		out.pools = append(out.pools, struct {
			name     string
			roleARNs []string
		}{p.Name, arns})
	}
	return out
}

func statement(t construct.Target, arns []string) construct.IAMStatement {
	return construct.IAMStatement{
		Target: t, Sid: Sid, Effect: "Allow",
		Actions: []string{"sts:AssumeRole"}, Resources: append([]string(nil), arns...),
	}
}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         Name,
		Version:      Version,
		Description:  "contrib: kube2iam (worker IAM to assume pod roles, and its DaemonSet as a Helm release)",
		ValuesSchema: schema,
	}
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[Values]) (*stage.Result, error) {
	c, v := in.Cluster, in.Values
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
	// roles (each pool's role is behind the iam stack's
	// NodePool<Name>InstanceProfile output).
	sel := selectPools(c, v, in.Request.Values[Name].NodePools)
	nodeSelector := map[string]string{}
	if !sel.narrowed && !sel.differs {
		set.IAM = []construct.IAMStatement{statement(construct.Target{Role: construct.Worker}, v.RoleARNs)}
	} else {
		for _, p := range sel.pools {
			set.IAM = append(set.IAM, statement(construct.Target{Role: construct.Worker, NodePool: p.name}, p.roleARNs))
		}
	}
	if sel.narrowed {
		// Only some pools may assume the roles, so the DaemonSet runs only
		// there: the plugin labels those nodes and selects them.
		nodeSelector[PoolLabel] = "true"
		for _, p := range sel.pools {
			set.NodeLabels = append(set.NodeLabels, construct.NodeLabel{
				Target: construct.Target{Role: construct.Worker, NodePool: p.name}, Key: PoolLabel, Value: "true"})
		}
	}

	path, err := chartcache.Extract(chart, "charts/kube2iam", in.WorkDir, Name)
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
	// kube2iam runs privileged on the node's network (its iptables rules
	// redirect the metadata API): outside kube-system, the one namespace
	// Pod Security exempts, its namespace is labelled privileged.
	if v.Namespace != "kube-system" {
		set.Manifests = []construct.Manifest{{Name: "kube2iam-namespace.yaml", Content: sdk.PrivilegedNamespace(v.Namespace)}}
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &stage.Result{Values: out, Constructs: set, Diagnostics: diags}, nil
}
