package main

import (
	"github.com/spf13/cobra"

	"github.com/kube-aws/kube-aws/stages/action"
)

func newRender(g *globals) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Run initialise and render and write the cluster's files to a folder",
		Long: `render runs the initialise and render stages of every enabled plugin and writes the
result to the output folder: stacks/<stack>.json, userdata/<role>.yaml, charts/ and a
manifest.json listing every file with its sha256 and the plugin that made it.

The folder is written to a temporary folder beside it and renamed into place, so a
failed run leaves the previous output as it was. The same inputs give byte-identical
output. Each stage's result is also kept under .kube-aws/state/ so that
` + "`kube-aws stage deploy`" + ` can follow in another job.`,
		Example: `  # render cluster.yaml in the current folder to ./rendered
  kube-aws render

  # another configuration and output folder, JSON for a script
  kube-aws render -c clusters/prod.yaml --out build/prod --output json

  # fail on any warning (CI)
  kube-aws render --warnings-as-errors`,
		Args: exactArgs(0, "no arguments"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			res, err := (&action.Render{Config: g.actionConfig(), OutDir: out}).Run(cmd.Context())
			return report(g, "render", res, err)
		}),
	}
	cmd.Flags().StringVar(&out, "out", "rendered", "output folder")
	return cmd
}
