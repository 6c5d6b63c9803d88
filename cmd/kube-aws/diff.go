package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kube-aws/kube-aws/stages"
	"github.com/kube-aws/kube-aws/stages/action"
)

func newDiff(g *globals) *cobra.Command {
	var (
		a        awsFlags
		out      string
		exitCode bool
	)
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Show what up would change, per stack and resource, without changing anything",
		Long: `diff renders the cluster (initialise and render, like kube-aws render), then makes a
CloudFormation change set for every existing stack and prints, per stack, what
would happen (create, update, no change) and per resource the action, logical id,
type and whether it would be replaced. Nothing is executed: every change set diff
made is deleted again. A stack that does not exist yet is listed with every
resource its template would add.

It then lists, per role, the machines up would replace (drained, one at a time
or as nodePools[].rollingUpdate allows) and why: the Kubernetes version, which
plugins' part of their userdata, the instance type, kube-aws-node. A machine
already out of date (a roll that stopped, a failed boot) is listed too.

With --exit-code, diff exits 3 when anything would change, machines included
(0 when nothing would), so a pipeline can tell "up to date" from "needs an up".`,
		Example: `  kube-aws diff
  kube-aws diff --exit-code || echo "an up would change something"
  kube-aws diff --output json --endpoint-url http://127.0.0.1:5000`,
		Args: exactArgs(0, "no arguments"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			o, err := (&action.Diff{Config: g.actionConfig(), OutDir: out, AWS: a.AWSSettings, ExitCode: exitCode}).Run(cmd.Context())
			if errors.Is(err, action.ErrChanges) {
				return reportWith(g, "diff", o, err, diffText(o.Diff))
			}
			if err != nil || o.Diff == nil {
				return report(g, "diff", o, err)
			}
			return reportWith(g, "diff", o, nil, diffText(o.Diff))
		}),
	}
	a.add(cmd, "")
	f := cmd.Flags()
	f.BoolVar(&exitCode, "exit-code", false, "exit 3 when anything would change")
	f.StringVar(&out, "out", "rendered", "render output folder")
	return cmd
}

// reportWith prints an operation's result: text on stdout, or the JSON
// document of report, which holds the result (diff, destroy). A non-nil
// code error (diff's exit 3) does not mark the run failed.
func reportWith(g *globals, command string, out *stages.Outcome, code error, text string) error {
	if !g.json() {
		if err := report(g, command, out, nil); err != nil {
			return err
		}
		fmt.Fprint(g.stdout, text)
		if code != nil {
			return &printedError{code}
		}
		return nil
	}
	doc := runDocument{Command: command, OK: true, ExitCode: stages.ExitCode(code), Outcome: out}
	if err := writeJSON(g.stdout, doc); err != nil {
		return err
	}
	if code != nil {
		return &printedError{code}
	}
	return nil
}
