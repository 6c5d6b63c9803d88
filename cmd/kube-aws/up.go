package main

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/kube-aws/kube-aws/stages/action"
)

func newUp(g *globals) *cobra.Command {
	var (
		a           awsFlags
		out         string
		outputsFile string
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Create or update the cluster: initialise, render, deploy and validate",
		Long: `up runs the four stages in one go: initialise and render (like kube-aws render),
deploy (the deploy plugin uploads assets to cluster.yaml's s3URI and creates or
updates every stack through change sets, independent stacks in parallel) and
validate. It works for a new cluster and for an existing one: an unchanged stack
is left alone, a half-done deploy is resumed.

Progress: on a terminal, one line per stack, redrawn as it changes; otherwise
(or with CI set) every stack event on its own line. At the end up prints each
stack's status and the cluster outputs (the API endpoint...).

A stack in ROLLBACK_COMPLETE (a failed create) is deleted and created again only
with --yes. A deploy lock in S3 keeps two ups of one cluster apart; the one
refused names who holds it. --force-unlock removes a lock left by a deploy that
died (asks first on a terminal; needs --yes otherwise). Interrupted (Ctrl-C,
SIGTERM), up stops its waits, releases the lock and exits 130; a second up
resumes; a second Ctrl-C stops at once.

s3URI names the cluster's service-account issuer: up refuses, before it
uploads anything, an s3URI that would change the issuer of a running cluster
(every pod's token would be refused until renewed); --allow-issuer-change
lets it, and the pods must then be restarted.`,
		Example: `  kube-aws up
  kube-aws up --profile prod --region eu-west-1 --outputs-file deploy.json
  CI=1 kube-aws up --yes --timeout 45m --output json

  # against moto, an AWS emulator
  kube-aws up --endpoint-url http://127.0.0.1:5000`,
		Args: exactArgs(0, "no arguments"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			rep, done := progress(g)
			defer done()
			cfg := g.actionConfig()
			cfg.Options.Reporter = rep
			res, err := (&action.Up{Config: cfg, OutDir: out, AWS: a.AWSSettings, OutputsFile: outputsFile}).Run(cmd.Context())
			done()
			rerr := report(g, "up", res, err)
			if !g.json() && res != nil && res.Deploy != nil && len(res.Deploy.Outputs) > 0 {
				printOutputs(g, res.Deploy.Outputs)
			}
			return rerr
		}),
	}
	a.add(cmd, "confirm without asking: recreate a stack in ROLLBACK_COMPLETE, remove the lock with --force-unlock")
	f := cmd.Flags()
	f.BoolVar(&a.ForceUnlock, "force-unlock", false, "remove the deploy lock first (only when the deploy holding it is dead)")
	f.BoolVar(&a.AllowIssuerChange, "allow-issuer-change", false, "let a changed s3URI change the running cluster's service-account issuer (every pod's token is refused until renewed)")
	f.StringVar(&out, "out", "rendered", "render output folder")
	f.StringVar(&outputsFile, "outputs-file", "", "also write the deploy result (stacks, statuses, outputs) to this file as JSON")
	return cmd
}

// printOutputs prints the cluster outputs, sorted by name.
func printOutputs(g *globals, outputs map[string]string) {
	names := make([]string, 0, len(outputs))
	for k := range outputs {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintln(g.stdout, "outputs:")
	for _, k := range names {
		fmt.Fprintf(g.stdout, "  %s: %s\n", k, outputs[k])
	}
}
