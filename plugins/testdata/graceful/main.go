// Command graceful is a test plugin that reaches AWS (so kube-aws asks it to
// stop when interrupted, instead of killing it at once) and waits in deploy
// until its context ends, then returns a result saying it let go of what it
// held, as the deploy plugin releases its lock. With
// KUBE_AWS_TEST_IGNORE_CANCEL set it ignores its context instead.
package main

import (
	"context"
	"os"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{Name: "graceful", Version: "0.0.1", ReachesAWS: true}
}

func (plugin) Deploy(ctx context.Context, _ *sdk.Request) (*stage.Result, error) {
	if os.Getenv("KUBE_AWS_TEST_IGNORE_CANCEL") != "" {
		select {}
	}
	<-ctx.Done()
	return &stage.Result{Diagnostics: diag.List{diag.Fatalf("stopped: %v; released the lock", ctx.Err())}}, nil
}

func main() { sdk.Serve(plugin{}) }
