// Command trivial is a test plugin that implements all four stages and does
// nothing in them: the benchmarks measure the platform's own cost with it.
// It takes its name from its executable, so copies under other names are
// distinct plugins.
package main

import (
	"context"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

type plugin struct{}

func (plugin) Info() stage.PluginInfo { return stage.PluginInfo{Version: "0.0.1"} }

func (plugin) Initialise(context.Context, *sdk.Request) (*stage.Result, error) {
	return &stage.Result{}, nil
}
func (plugin) Render(context.Context, *sdk.Request) (*stage.Result, error) {
	return &stage.Result{}, nil
}
func (plugin) Deploy(context.Context, *sdk.Request) (*stage.Result, error) {
	return &stage.Result{}, nil
}
func (plugin) Validate(context.Context, *sdk.Request) (*stage.Result, error) {
	return &stage.Result{}, nil
}

func main() { sdk.Serve(plugin{}) }
