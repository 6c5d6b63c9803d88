package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/stages"
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
		RunE: action(g, func(cmd *cobra.Command, args []string) error {
			opts := awsOptions(g, a.AWSSettings)
			opts.OutDir = out
			rep, done := progress(g)
			opts.Reporter = rep
			plan, err := stages.NewPlan(opts)
			if err != nil {
				return fail(g, "destroy", err)
			}
			if !a.Yes {
				name := plan.Config.Cluster.ClusterName
				if err := confirm(g, fmt.Sprintf("delete every stack of cluster %s?", name), "--yes"); err != nil {
					return fail(g, "destroy", err)
				}
			}
			sess, err := plan.Launch(cmd.Context())
			if sess != nil {
				defer sess.Close()
			}
			if err != nil {
				return fail(g, "destroy", err)
			}
			o, err := sess.Operate(cmd.Context(), stage.Destroy)
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
