package main

import (
	"github.com/spf13/cobra"
)

func newSchema(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of cluster.yaml, for editors",
		Long: `schema prints the JSON Schema (draft 2020-12) of cluster.yaml. Point your editor's YAML
language server at it for completion and checks while you type.`,
		Example: `  kube-aws schema > cluster.schema.json
  # then, first line of cluster.yaml:
  # yaml-language-server: $schema=./cluster.schema.json`,
		Args: exactArgs(0, "no arguments"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			b, err := clusterSchema()
			if err != nil {
				return err
			}
			_, err = g.stdout.Write(b)
			return err
		}),
	}
}
