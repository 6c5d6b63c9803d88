// Command several is a test executable that serves three plugins from one
// process (sdk.ServeAll), as kube-aws's built-ins are served: alpha and beta
// answer initialise with their name and the process id, and hangs never
// returns from render, ignoring its context.
package main

import (
	"context"
	"encoding/json"
	"os"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

type answers string

func (a answers) Info() stage.PluginInfo { return stage.PluginInfo{Name: string(a), Version: "0.0.1"} }

func (a answers) Initialise(context.Context, *sdk.Request) (*stage.Result, error) {
	v, err := json.Marshal(map[string]any{"name": string(a), "pid": os.Getpid()})
	return &stage.Result{Values: v}, err
}

type hangs struct{}

func (hangs) Info() stage.PluginInfo { return stage.PluginInfo{Name: "hangs", Version: "0.0.1"} }

func (hangs) Initialise(context.Context, *sdk.Request) (*stage.Result, error) {
	return &stage.Result{}, nil
}

func (hangs) Render(context.Context, *sdk.Request) (*stage.Result, error) { select {} }

func main() { sdk.ServeAll(answers("alpha"), answers("beta"), hangs{}) }
