package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/stages"
	"github.com/kube-aws/kube-aws/stages/action"
)

// awsFlags are the AWS flags of every command that reaches AWS: up, diff,
// validate, destroy, and stage (whose deploy and validate do).
type awsFlags struct {
	stage.AWSSettings
}

func (a *awsFlags) add(cmd *cobra.Command, confirm string) {
	f := cmd.Flags()
	f.StringVar(&a.Profile, "profile", "", "AWS shared-config profile (default: the SDK's default credential chain)")
	f.StringVar(&a.Region, "region", "", "AWS region (default: cluster.yaml region)")
	f.StringVar(&a.EndpointURL, "endpoint-url", "", "send every AWS call to this URL: an emulator such as moto")
	f.DurationVar(&a.Timeout, "timeout", 0, "bound of the whole AWS operation (default 60m)")
	if confirm != "" {
		f.BoolVarP(&a.Yes, "yes", "y", false, confirm)
	}
}

// terminal reports whether kube-aws talks to a person: stdin and stderr are
// terminals and CI is not set.
func terminal() bool {
	return os.Getenv("CI") == "" && term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stderr.Fd()))
}

// ask puts a question to the person at the terminal, after the
// diagnostics that led to it; nil when nobody is there (no terminal, CI), so
// an action that needs a confirmation says which flag gives it.
func (g *globals) ask() func(action.Question) (bool, error) {
	if !terminal() {
		return nil
	}
	return func(q action.Question) (bool, error) {
		printDiagnostics(g.stderr, q.Diagnostics)
		fmt.Fprintf(g.stderr, "%s [y/N] ", q.Text)
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		a := strings.ToLower(strings.TrimSpace(line))
		return a == "y" || a == "yes", nil
	}
}

// progress picks the progress view: --progress, else live on a terminal
// and line by line otherwise (docs/cli.md, "Progress"). done ends a live
// view.
func progress(g *globals) (stages.Reporter, func()) {
	switch g.progress {
	case "json":
		return &jsonReporter{W: g.stderr}, func() {}
	case "text":
		return &textReporter{W: g.stderr, Verbose: g.verbose}, func() {}
	case "live":
		r := &liveReporter{W: g.stderr, Verbose: g.verbose}
		return r, r.Done
	}
	if g.json() || !terminal() || !isTerminalWriter(g.stderr) {
		return &textReporter{W: g.stderr, Verbose: g.verbose}, func() {}
	}
	r := &liveReporter{W: g.stderr, Verbose: g.verbose}
	return r, r.Done
}

func isTerminalWriter(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
