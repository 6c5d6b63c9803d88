// Command kube-aws provisions Kubernetes clusters on AWS with CloudFormation.
// Almost everything it does is done by plugins driven through four stages;
// this package only wires flags to the pipeline in stages/ and prints what it
// returns (docs/cli.md, docs/exit-codes.md).
package main

import (
	"os"

	"github.com/kube-aws/kube-aws/plugins/sdk/cpuprofile"
	// The runtime's settings for a process that lives a fraction of a
	// second, from the start of package initialisation.
	_ "github.com/kube-aws/kube-aws/plugins/sdk/shortlived"
	"github.com/kube-aws/kube-aws/stages"
)

// kube-aws's heap stays small (at most some tens of MB, for a render of 100
// node pools) and most commands end within a second, so the collector's
// default of a collection each time the heap doubles from 4 MB was about a
// tenth of a render's CPU in kube-aws: it takes the settings of the
// built-ins' process (plugins/sdk/shortlived).
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
