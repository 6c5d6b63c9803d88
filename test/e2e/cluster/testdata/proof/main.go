// Command proof is the user plugin of the kube-aws-node boot case of
// make e2e-cluster: a trivial plan set for the node pools, a file naming a
// fact (substituted by kube-aws-node's secrets step) and a unit that writes
// a file from it, so the test sees that every runcmd entry ran.
package main

import (
	"context"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

type proof struct{}

func (proof) Info() stage.PluginInfo {
	return stage.PluginInfo{Name: "proof", Version: "0.1.0", Description: "a unit and a file with a fact for the node pools"}
}

func (proof) Initialise(context.Context, *sdk.Input[sdk.NoValues]) (*stage.Result, error) {
	workers := construct.Target{Role: construct.Worker}
	return &stage.Result{Constructs: &construct.Set{
		Files: []construct.File{{Target: workers, Path: "/etc/kube-aws-proof.env", Format: "env",
			Content: "PROOF_ADDRESS=((fact:privateIPv4))\n"}},
		Units: []construct.Unit{{Target: workers, Name: "kube-aws-proof.service", Enable: true, Content: `[Unit]
Description=kube-aws proof: writes the machine's address from a substituted fact
[Service]
Type=oneshot
EnvironmentFile=/etc/kube-aws-proof.env
ExecStart=/bin/sh -c 'echo "$PROOF_ADDRESS" > /var/lib/kube-aws-proof'
[Install]
WantedBy=multi-user.target
`}},
	}}, nil
}

func main() { sdk.Serve(sdk.Typed[sdk.NoValues](proof{})) }
