// Package apiserver is the built-in kube-aws plugin that owns the kube API
// server's flags and volumes. In initialise it contributes the defaults for
// the cluster's Kubernetes version (plus the user's extra flags); in render it
// checks the flags every plugin contributed, merged: an unknown or removed
// flag is fatal, a deprecated one a warning naming its replacement. The
// static pod manifest itself is built by builtin/internal/podspec and placed
// in the controller userdata by the userdata plugin.
package apiserver

import (
	"context"
	"encoding/json"

	"github.com/kube-aws/kube-aws/builtin/apiserver/internal/flags"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// Plugin is the apiserver plugin as kube-aws serves it (cmd/kube-aws-builtins).
func Plugin() sdk.Plugin { return sdk.Typed[flags.Values](plugin{}) }

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         "apiserver",
		Version:      version.Version,
		Description:  "kube API server flags, volumes and checks",
		ValuesSchema: json.RawMessage(flags.Schema),
	}
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[flags.Values]) (*stage.Result, error) {
	set, effective, diags := flags.Defaults(in.Cluster, in.Values)
	res := &stage.Result{Diagnostics: diags.WithDefaults("apiserver", string(stage.Initialise))}
	if diags.HasFatal() {
		return res, nil
	}
	var err error
	if res.Values, err = json.Marshal(effective); err != nil {
		return nil, err
	}
	res.Constructs = &set
	return res, nil
}

func (plugin) Render(_ context.Context, in *sdk.Input[flags.Values]) (*stage.Result, error) {
	var fs []construct.Flag
	if in.Constructs != nil {
		fs = in.Constructs.APIServer.Flags
	}
	d := flags.Check(fs, in.Cluster.KubernetesVersion)
	return &stage.Result{Diagnostics: d.WithDefaults("apiserver", string(stage.Render))}, nil
}
