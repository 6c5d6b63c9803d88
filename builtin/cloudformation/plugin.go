// Package cloudformation is the built-in plugin that owns the cluster's
// CloudFormation: in initialise it contributes the base stacks (network,
// etcd, control-plane, one nodepool-<name> per node pool) as constructs, and
// in render it writes every merged Stack construct that no plugin renders
// late to stacks/<name>.json. The logic lives in internal/stacks; this file
// only adapts it to the plugin SDK.
package cloudformation

import (
	"context"
	"encoding/json"

	"github.com/kube-aws/kube-aws/builtin/cloudformation/internal/stacks"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// Plugin is the cloudformation plugin as kube-aws serves it (cmd/kube-aws-builtins).
func Plugin() sdk.Plugin { return served }

var served = sdk.Typed[stacks.Values](plugin{})

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         "cloudformation",
		Version:      version.Version,
		Description:  "CloudFormation stacks of the cluster: network, etcd, control plane and node pools",
		ValuesSchema: json.RawMessage(stacks.ValuesSchema),
	}
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[stacks.Values]) (*stage.Result, error) {
	set, diags := stacks.Initialise(in.Cluster, in.Values)
	return &stage.Result{Constructs: set, Diagnostics: diags}, nil
}

func (plugin) Render(_ context.Context, in *sdk.Input[stacks.Values]) (*stage.Result, error) {
	pools, err := in.NodePools()
	if err != nil {
		return nil, err
	}
	files, specs, diags := stacks.Render(in.Cluster, in.Values, pools, in.Constructs)
	return &stage.Result{Files: files, Stacks: specs, Diagnostics: diags}, nil
}
