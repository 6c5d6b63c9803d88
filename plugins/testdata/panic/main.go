// Command panic is a test plugin that panics in the stage named by
// $KUBE_AWS_TEST_PANIC_STAGE (every stage when unset). With
// KUBE_AWS_TEST_PANIC_MODE=goroutine it panics on a goroutine of its own,
// which the SDK cannot recover, so the process crashes.
package main

import (
	"context"
	"os"
	"time"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

type plugin struct{}

func (plugin) Info() stage.PluginInfo { return stage.PluginInfo{Name: "panic", Version: "0.0.1"} }

func maybePanic(s stage.Name) (*stage.Result, error) {
	if want := os.Getenv("KUBE_AWS_TEST_PANIC_STAGE"); want == "" || want == string(s) {
		if os.Getenv("KUBE_AWS_TEST_PANIC_MODE") == "goroutine" {
			go func() { panic("boom on a goroutine in " + string(s) + "\nsecond line") }()
			time.Sleep(time.Minute)
		}
		panic("boom in " + string(s) + "\nsecond line of the panic")
	}
	return &stage.Result{}, nil
}

func (plugin) Initialise(context.Context, *sdk.Request) (*stage.Result, error) {
	return maybePanic(stage.Initialise)
}
func (plugin) Render(context.Context, *sdk.Request) (*stage.Result, error) {
	return maybePanic(stage.Render)
}
func (plugin) Deploy(context.Context, *sdk.Request) (*stage.Result, error) {
	return maybePanic(stage.Deploy)
}
func (plugin) Validate(context.Context, *sdk.Request) (*stage.Result, error) {
	return maybePanic(stage.Validate)
}

func main() { sdk.Serve(plugin{}) }
