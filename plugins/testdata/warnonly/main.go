// Command warnonly is a test plugin that returns only warnings, which must
// not stop a run.
package main

import (
	"context"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

type plugin struct{}

func (plugin) Info() stage.PluginInfo { return stage.PluginInfo{Name: "warnonly", Version: "0.0.1"} }

func (plugin) Initialise(context.Context, *sdk.Request) (*stage.Result, error) {
	return &stage.Result{
		Values:      []byte(`{"ok":true}`),
		Diagnostics: diag.List{diag.Warningf("setting x is deprecated").At("plugins.warnonly.values.x").WithHint("use y")},
	}, nil
}

func (plugin) Validate(context.Context, *sdk.Request) (*stage.Result, error) {
	return &stage.Result{Diagnostics: diag.List{diag.Warningf("cluster has a single controller")}}, nil
}

func main() { sdk.Serve(plugin{}) }
