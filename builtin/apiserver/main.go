// Command apiserver is the built-in kube-aws plugin that owns the kube API
// server's flags and volumes. In initialise it contributes the defaults for
// the cluster's Kubernetes version (plus the user's extra flags); in render it
// checks the flags every plugin contributed, merged: an unknown or removed
// flag is fatal, a deprecated one a warning naming its replacement. The
// static pod manifest itself is built by builtin/internal/podspec and placed
// in the controller userdata by the userdata plugin.
package main

import (
	"context"
	"encoding/json"

	"github.com/kube-aws/kube-aws/builtin/apiserver/internal/flags"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

func main() { sdk.Serve(plugin{}) }

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         "apiserver",
		Version:      version.Version,
		Description:  "kube API server flags, volumes and checks",
		ValuesSchema: json.RawMessage(flags.Schema),
	}
}

func (plugin) Initialise(_ context.Context, req *sdk.Request) (*stage.Result, error) {
	c, err := req.Cluster()
	if err != nil {
		return nil, err
	}
	var v flags.Values
	if err := req.DecodeValues(&v); err != nil {
		return nil, err
	}
	set, effective, diags := flags.Defaults(c, v)
	res := &stage.Result{Diagnostics: diags.WithDefaults("apiserver", string(stage.Initialise))}
	if diags.HasFatal() {
		return res, nil
	}
	if res.Values, err = json.Marshal(effective); err != nil {
		return nil, err
	}
	res.Constructs = &set
	return res, nil
}

func (plugin) Render(_ context.Context, req *sdk.Request) (*stage.Result, error) {
	c, err := req.Cluster()
	if err != nil {
		return nil, err
	}
	var d diag.List
	if req.Constructs != nil {
		d = flags.Check(req.Constructs.APIServer.Flags, c.KubernetesVersion)
	} else {
		d = flags.Check(nil, c.KubernetesVersion)
	}
	return &stage.Result{Diagnostics: d.WithDefaults("apiserver", string(stage.Render))}, nil
}
