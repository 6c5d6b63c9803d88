// Command stdoutgarbage is a test plugin that prints to stdout before
// sdk.Serve, which corrupts go-plugin's handshake.
package main

import (
	"context"
	"fmt"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{Name: "stdoutgarbage", Version: "0.0.1"}
}

func (plugin) Initialise(context.Context, *sdk.Request) (*stage.Result, error) {
	return &stage.Result{}, nil
}

func main() {
	fmt.Println("starting up, hello!")
	sdk.Serve(plugin{})
}
