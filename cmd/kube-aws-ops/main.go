// Command kube-aws-ops is the helper kube-aws starts for diff and destroy:
// the only part of kube-aws's own commands that links the AWS SDK, kept out
// of the kube-aws executable so that its start-up stays fast
// (docs/design.md). It reads one request on stdin and writes JSON lines on
// stdout; see stages/awsops.
package main

import (
	"context"
	"os"

	"github.com/kube-aws/kube-aws/stages"
	"github.com/kube-aws/kube-aws/stages/awsops"
)

func main() {
	ctx, stop := stages.SignalContext(context.Background())
	code := awsops.Main(ctx, os.Stdin, os.Stdout)
	stop()
	os.Exit(code)
}
