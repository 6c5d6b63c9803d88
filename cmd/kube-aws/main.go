// Command kube-aws provisions Kubernetes clusters on AWS with CloudFormation.
// Almost everything it does is done by plugins driven through four stages;
// this package only wires flags to the pipeline in stages/ and prints what it
// returns (docs/cli.md, docs/exit-codes.md).
package main

import (
	"os"
	"runtime/debug"

	"github.com/kube-aws/kube-aws/plugins/sdk/cpuprofile"
	"github.com/kube-aws/kube-aws/stages"
)

// kube-aws's heap stays small (at most some tens of MB, for a render of 100
// node pools) and most commands end within a second, so the collector's
// default of a collection each time the heap doubles from 4 MB was about a
// tenth of a render's CPU in kube-aws. As in the built-ins' process
// (builtin/internal/shortlived), the heap may grow to five times its live
// size before a collection, within a soft limit that keeps it, and so
// kube-aws's resident size, bounded; at the limit the collector runs more
// often rather than the heap growing. GOGC and GOMEMLIMIT in the environment
// override each setting.
const (
	gcPercent   = 400
	memoryLimit = 40 << 20
)

func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(memoryLimit)
	}
}

func main() {
	tuneGC()
	// The run's temporary files (go-plugin's sockets) go to a folder of its
	// own, which the next kube-aws removes if this one is killed.
	release := stages.UseRunDir()
	stopProfile := cpuprofile.Start()
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	stopProfile()
	release()
	os.Exit(code)
}
