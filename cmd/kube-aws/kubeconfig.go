package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kube-aws/kube-aws/stages/action"
)

func newKubeconfig(g *globals) *cobra.Command {
	var server, out string
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Write an admin kubeconfig for the cluster (mode 0600)",
		Long: `kubeconfig writes a kubeconfig with cluster-admin rights (group system:masters) from the
cluster's admin credential: the cluster CA, the admin certificate and its key, which the plugin
that provides them (the pki built-in, which kube-aws render makes them with) returns. The API
server is reached at https://<apiEndpoint.dnsName>, else at the endpoint the last kube-aws up
deployed; --server overrides both. The file embeds the key: keep it like the credentials folder.`,
		Example: `  kube-aws kubeconfig
  kube-aws kubeconfig --out ~/.kube/demo --server https://api.demo.example.com`,
		Args: exactArgs(0, "no arguments"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			path, warnings, err := (&action.Kubeconfig{Config: g.actionConfig(), Server: server, Out: out}).Run(cmd.Context())
			if err != nil {
				return fail(g, "kubeconfig", err)
			}
			printDiagnostics(g.stderr, warnings)
			fmt.Fprintf(g.stdout, "wrote %s\n", path)
			return nil
		}),
	}
	cmd.Flags().StringVar(&server, "server", "", "the API server's URL (default: https://<apiEndpoint.dnsName>, else the deployed endpoint)")
	cmd.Flags().StringVar(&out, "out", "", "where to write it (default: "+action.DefaultKubeconfig+" beside cluster.yaml)")
	return cmd
}
