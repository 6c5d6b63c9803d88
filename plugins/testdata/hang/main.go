// Command hang is a test plugin that never returns from the stage named by
// $KUBE_AWS_TEST_HANG_STAGE (every stage when unset), ignoring its context,
// as a plugin stuck on a dead network call would.
package main

import (
	"context"
	"os"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

type plugin struct{}

func (plugin) Info() stage.PluginInfo { return stage.PluginInfo{Name: "hang", Version: "0.0.1"} }

func maybeHang(s stage.Name) (*stage.Result, error) {
	if want := os.Getenv("KUBE_AWS_TEST_HANG_STAGE"); want == "" || want == string(s) {
		select {}
	}
	return &stage.Result{}, nil
}

func (plugin) Initialise(context.Context, *sdk.Request) (*stage.Result, error) {
	return maybeHang(stage.Initialise)
}
func (plugin) Render(context.Context, *sdk.Request) (*stage.Result, error) {
	return maybeHang(stage.Render)
}

func main() { sdk.Serve(plugin{}) }
