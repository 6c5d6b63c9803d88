// Package userdata is the built-in kube-aws plugin that renders the cloud-init
// userdata of every machine: userdata/controller.yaml, userdata/etcd.yaml and
// userdata/nodepool-<name>.yaml, from the units, drop-ins, files, kubelet
// flags, labels, taints, API server flags and manifests every plugin
// contributed. It implements only render: it owns no constructs of its own.
// The logic is in internal/cloudconfig.
package userdata

import (
	"context"

	"github.com/kube-aws/kube-aws/builtin/userdata/internal/cloudconfig"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// Plugin is the userdata plugin as kube-aws serves it (cmd/kube-aws-builtins).
func Plugin() sdk.Plugin { return sdk.Typed[sdk.NoValues](plugin{}) }

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:        cloudconfig.Plugin,
		Version:     version.Version,
		Description: "cloud-init userdata for controllers, etcd and each node pool",
	}
}

func (plugin) Render(_ context.Context, in *sdk.Input[sdk.NoValues]) (*stage.Result, error) {
	files, diags, err := cloudconfig.Render(in.Cluster, in.Constructs)
	if err != nil {
		return nil, err
	}
	return &stage.Result{Files: files, Diagnostics: diags}, nil
}
