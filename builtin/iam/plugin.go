// Package iam is the built-in plugin that owns the cluster's IAM: its
// initialise contributes the statements kube-aws's own machines need, and
// its render writes stacks/iam.json with a role, inline policy and instance
// profile per role (controller, etcd, each node pool) merging every plugin's
// statements, the IAM OIDC provider of the cluster's service-account issuer
// and a role per pod role (construct.PodRole; its values' podRoles). It renders the iam stack late (Info().LateStacks): other
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

var served = sdk.Typed[policy.Values](plugin{})

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         policy.Plugin,
		Version:      version.Version,
		Description:  "IAM roles, policies and instance profiles of the controllers, etcd and each node pool; pod roles and the OIDC provider they trust",
		ValuesSchema: json.RawMessage(policy.Schema),
		LateStacks:   []string{names.StackIAM},
	}
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[policy.Values]) (*stage.Result, error) {
	set, diags := policy.Initialise(in.Cluster, in.Values)
	return &stage.Result{Constructs: set, Diagnostics: diags}, nil
}

func (plugin) Render(_ context.Context, in *sdk.Input[policy.Values]) (*stage.Result, error) {
	files, specs, diags := policy.Render(in.Cluster, in.Constructs)
	return &stage.Result{Files: files, Stacks: specs, Diagnostics: diags}, nil
}
