// Command cloudformation is the built-in plugin that owns the cluster's
// CloudFormation: in initialise it contributes the base stacks (network,
// etcd, control-plane, one nodepool-<name> per node pool) as constructs, and
// in render it writes every merged Stack construct except iam to
// stacks/<name>.json. The logic lives in internal/stacks; this file only
// adapts it to the plugin SDK.
package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kube-aws/kube-aws/builtin/cloudformation/internal/stacks"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

func main() { sdk.Serve(plugin{}) }

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         "cloudformation",
		Version:      version.Version,
		Description:  "CloudFormation stacks of the cluster: network, etcd, control plane and node pools",
		Stages:       []stage.Name{stage.Initialise, stage.Render},
		ValuesSchema: json.RawMessage(stacks.ValuesSchema),
	}
}

func (plugin) Initialise(_ context.Context, req *sdk.Request) (*stage.Result, error) {
	c, err := req.Cluster()
	if err != nil {
		return nil, err
	}
	var v stacks.Values
	if err := req.DecodeValues(&v); err != nil {
		return nil, err
	}
	set, diags := stacks.Initialise(c, v)
	return &stage.Result{Constructs: set, Diagnostics: diags}, nil
}

func (plugin) Render(_ context.Context, req *sdk.Request) (*stage.Result, error) {
	c, err := req.Cluster()
	if err != nil {
		return nil, err
	}
	var v stacks.Values
	if err := req.DecodeValues(&v); err != nil {
		return nil, err
	}
	pools := map[string]stacks.Values{}
	for name, raw := range req.Values[req.Plugin].NodePools {
		var pv stacks.Values
		if err := json.Unmarshal(raw, &pv); err != nil {
			return nil, fmt.Errorf("decoding values of plugin %s for node pool %s: %w", req.Plugin, name, err)
		}
		pools[name] = pv
	}
	files, specs, diags := stacks.Render(c, v, pools, req.Constructs)
	return &stage.Result{Files: files, Stacks: specs, Diagnostics: diags}, nil
}
