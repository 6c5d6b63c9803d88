package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kube-aws/kube-aws/stages/action"
)

func newValidate(g *globals) *cobra.Command {
	var a awsFlags
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the deployed cluster: stacks healthy, outputs present, instances launched, plugins' checks",
		Long: `validate runs the validate stage of every enabled plugin from the deploy result the
last up (or kube-aws stage deploy) persisted: the deploy plugin checks that every
stack is in a healthy state, that the expected outputs are there and that every
auto scaling group's instances launched; other plugins add their own checks.
It refuses (exit 2) when there is no deploy state, or when cluster.yaml, a plugin
or the render output changed since the deploy: run kube-aws up first.`,
		Example: `  kube-aws validate
  kube-aws validate --warnings-as-errors --output json`,
		Args: exactArgs(0, "no arguments"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			out, err := (&action.Validate{Config: g.actionConfig(), AWS: a.AWSSettings}).Run(cmd.Context())
			if rerr := report(g, "validate", out, err); rerr != nil {
				return rerr
			}
			if !g.json() {
				_, w := out.Diagnostics.Count()
				fmt.Fprintf(g.stdout, "cluster %s is valid (%d warning(s))\n", out.Cluster, w)
			}
			return nil
		}),
	}
	a.add(cmd, "")
	return cmd
}
