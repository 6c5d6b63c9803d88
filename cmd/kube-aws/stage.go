package main

import (
	"github.com/spf13/cobra"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/stages"
	"github.com/kube-aws/kube-aws/stages/action"
)

func newStage(g *globals) *cobra.Command {
	var (
		out string
		a   awsFlags
	)
	cmd := &cobra.Command{
		Use:   "stage <initialise|render|deploy|validate>",
		Short: "Run one stage from the state the previous stage left",
		Long: `stage runs one stage in every enabled plugin that implements it, starting from the
result the previous stage persisted under .kube-aws/state/, and persists its own.
This lets a CI pipeline run one stage per job.

kube-aws refuses to run when the previous stage's state is missing, or stale (cluster.yaml,
a plugin config file, a plugin binary or an earlier stage changed since it ran), and
says which stage to run again. render writes the output folder like ` + "`kube-aws render`" + `.`,
		Example: `  kube-aws stage initialise
  kube-aws stage render --out rendered
  kube-aws stage deploy --output json --profile prod --region eu-west-1
  kube-aws stage validate --warnings-as-errors --endpoint-url http://127.0.0.1:5000`,
		ValidArgs: []string{"initialise", "render", "deploy", "validate"},
		Args:      exactArgs(1, "one stage: initialise, render, deploy or validate"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			name, err := stage.Parse(args[0])
			if err != nil {
				return fail(g, "stage", stages.ConfigError("%v", err))
			}
			res, err := (&action.Stage{Config: g.actionConfig(), Name: name, OutDir: out, AWS: a.AWSSettings}).Run(cmd.Context())
			return report(g, "stage "+string(name), res, err)
		}),
	}
	// deploy and validate reach AWS: the same AWS flags as up.
	a.add(cmd, "stage deploy: confirm without asking (recreate a stack in ROLLBACK_COMPLETE; with --force-unlock, remove the lock)")
	cmd.Flags().BoolVar(&a.ForceUnlock, "force-unlock", false, "stage deploy: remove the deploy lock first (only when the deploy holding it is dead; needs --yes)")
	cmd.Flags().BoolVar(&a.AllowIssuerChange, "allow-issuer-change", false, "stage deploy: let a changed s3URI change the running cluster's service-account issuer")
	cmd.Flags().StringVar(&out, "out", "rendered", "output folder of the render stage")
	return cmd
}
