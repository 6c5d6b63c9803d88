// Package iam is the built-in plugin that owns the cluster's IAM: its
// initialise contributes the statements kube-aws's own machines need, and
// its render writes stacks/iam.json with a role, inline policy and instance
// profile per role (controller, etcd, each node pool) merging every plugin's
// statements. It renders the iam stack late (Info().LateStacks): other
// plugins' additions and patches to the stack reach it in render, and it
// folds them in with core/merge.Late. The logic lives in internal/policy.
package iam

import (
	"context"
	"encoding/json"

	"github.com/kube-aws/kube-aws/builtin/iam/internal/policy"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// Plugin is the iam plugin as kube-aws serves it (cmd/kube-aws-builtins).
func Plugin() sdk.Plugin { return served }

var served = sdk.Typed[sdk.NoValues](plugin{})

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         policy.Plugin,
		Version:      version.Version,
		Description:  "IAM roles, policies and instance profiles of the controllers, etcd and each node pool",
		ValuesSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
		LateStacks:   []string{names.StackIAM},
	}
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[sdk.NoValues]) (*stage.Result, error) {
	set, diags := policy.Initialise(in.Cluster)
	return &stage.Result{Constructs: set, Diagnostics: diags}, nil
}

func (plugin) Render(_ context.Context, in *sdk.Input[sdk.NoValues]) (*stage.Result, error) {
	files, specs, diags := policy.Render(in.Cluster, in.Constructs)
	return &stage.Result{Files: files, Stacks: specs, Diagnostics: diags}, nil
}
