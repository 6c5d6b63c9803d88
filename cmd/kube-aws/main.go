// Command kube-aws provisions Kubernetes clusters on AWS with CloudFormation.
// Almost everything it does is done by plugins driven through four stages;
// this package only wires flags to the pipeline in stages/ and prints what it
// returns (docs/cli.md, docs/exit-codes.md).
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
