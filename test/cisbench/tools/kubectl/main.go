// Command kubectl is kubectl as k8s.io/kubernetes/cmd/kubectl builds it,
// from the published k8s.io/kubectl module: kube-bench's policy checks run
// it on a controller during the booted-cluster tests.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	// As upstream: the verbosity is set before the command is made, so
	// klog honours it while the command is constructed.
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) //nolint:errcheck
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
