// Command kube-aws provisions Kubernetes clusters on AWS with CloudFormation.
// Almost everything it does is done by plugins driven through four stages;
// this package only wires flags to the pipeline in stages/ and prints what it
// returns (docs/cli.md, docs/exit-codes.md).
package main

import (
	"os"

	"github.com/kube-aws/kube-aws/plugins/sdk/cpuprofile"
	"github.com/kube-aws/kube-aws/stages"
)

func main() {
	// The run's temporary files (go-plugin's sockets) go to a folder of its
	// own, which the next kube-aws removes if this one is killed.
	release := stages.UseRunDir()
	stopProfile := cpuprofile.Start()
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	stopProfile()
	release()
	os.Exit(code)
}
