// Command fatal is a test plugin whose initialise returns a fatal diagnostic
// (and a warning), as a plugin that finds a broken configuration does.
package main

import (
	"context"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

type plugin struct{}

func (plugin) Info() stage.PluginInfo { return stage.PluginInfo{Name: "fatal", Version: "0.0.1"} }

func (plugin) Initialise(context.Context, *sdk.Request) (*stage.Result, error) {
	return &stage.Result{Diagnostics: diag.List{
		diag.Fatalf("issuer must be an https URL").At("plugins.fatal.values.issuer").WithHint("use https://..."),
		diag.Warningf("values.legacy is deprecated").At("plugins.fatal.values.legacy"),
	}}, nil
}

func main() { sdk.Serve(plugin{}) }
