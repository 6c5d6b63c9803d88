// Command bastion is a contrib kube-aws plugin that adds a bastion host (seed
// 004's "Add new parts to CloudFormation" example): a stack of its own,
// "bastion", wired to the network stack's outputs, with one EC2 instance in a
// public subnet and a security group admitting SSH from the configured
// CIDRs. Its validate stage checks that the instance is running. It is built
// on the public SDK, plus the AWS SDK's EC2 client for that check.
package main

import (
	"context"
	_ "embed"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

func main() { sdk.Serve(sdk.Typed[Values](plugin{})) }

// Name and Version identify the plugin.
const (
	Name    = "bastion"
	Version = "0.1.0"
)

//go:embed schema.json
var schema []byte

type plugin struct {
	// describe looks up an instance's state; nil means EC2 (see ec2.go).
	describe instanceStater
}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         Name,
		Version:      Version,
		Description:  "contrib: a bastion host stack in the cluster's public subnet, SSH from configured CIDRs",
		ValuesSchema: schema,
		// Validate asks EC2 about the instance: kube-aws gives the plugin
		// the operator's AWS settings for that.
		ReachesAWS: true,
	}
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[Values]) (*stage.Result, error) {
	c, v := in.Cluster, in.Values
	return initialise(c, v)
}

func (p plugin) Validate(ctx context.Context, in *sdk.Input[Values]) (*stage.Result, error) {
	c := in.Cluster
	describe := p.describe
	if describe == nil {
		describe = ec2Stater(in.AWS, c.Region)
	}
	// Filled here too (the host would) so the result reads the same in tests.
	return &stage.Result{Diagnostics: validate(ctx, in.Deploy, c.ClusterName, describe).WithDefaults(Name, string(stage.Validate))}, nil
}
