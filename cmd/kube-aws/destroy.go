package main

import (
	"github.com/spf13/cobra"

	"github.com/kube-aws/kube-aws/stages/action"
)

func newDestroy(g *globals) *cobra.Command {
	var (
		a   awsFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "destroy",
		Short: "Delete every stack of the cluster, in reverse dependency order",
		Long: `destroy deletes every CloudFormation stack of the cluster: node pools first, then the
control plane, etcd and the network, each waited for, holding the deploy lock.
Stacks tagged with the cluster that are no longer rendered (a removed node pool)
go first. Stacks already gone are skipped, so a rerun finishes an interrupted
destroy. Assets in S3 are kept.

On a terminal destroy asks first; without one --yes is required (exit 2 without it).`,
		Example: `  kube-aws destroy
  CI=1 kube-aws destroy --yes --profile prod`,
		Args: exactArgs(0, "no arguments"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			rep, done := progress(g)
			defer done()
			cfg := g.actionConfig()
			cfg.Options.Reporter = rep
			o, err := (&action.Destroy{Config: cfg, OutDir: out, AWS: a.AWSSettings}).Run(cmd.Context())
			done()
			if err != nil || o.Destroy == nil {
				return report(g, "destroy", o, err)
			}
			return reportWith(g, "destroy", o, nil, destroyText(o.Destroy))
		}),
	}
	a.add(cmd, "delete without asking (required without a terminal)")
	cmd.Flags().StringVar(&out, "out", "rendered", "render output folder")
	return cmd
}
