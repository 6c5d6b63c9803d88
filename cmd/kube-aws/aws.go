package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/stages"
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

// confirm asks a yes/no question on a terminal; without one it returns a
// usage error naming the flag that answers it.
func confirm(g *globals, question, flag string) error {
	if !terminal() {
		return stages.ConfigError("%s: there is no terminal to ask on; pass %s to confirm", question, flag)
	}
	fmt.Fprintf(g.stderr, "%s [y/N] ", question)
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return stages.ConfigError("not confirmed: nothing was done")
	}
	return nil
}

// progress picks the progress view: live on a terminal, line by line
// otherwise (docs/cli.md, "Progress"). done ends a live view.
func progress(g *globals) (stages.Reporter, func()) {
	if g.json() || !terminal() || !isTerminalWriter(g.stderr) {
		return &stages.TextReporter{W: g.stderr, Verbose: g.verbose}, func() {}
	}
	r := &stages.LiveReporter{W: g.stderr, Verbose: g.verbose}
	return r, r.Done
}

func isTerminalWriter(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// awsOptions gives the AWS flags to the plugins that reach AWS and keeps the
// stage timeout above the AWS timeout: the deploy plugin must not be killed
// before its own bound.
func awsOptions(g *globals, a stage.AWSSettings) stages.Options {
	opts := g.options()
	t := a.Timeout
	if t <= 0 {
		t = 60 * time.Minute // the deploy plugin's default bound
	}
	if opts.StageTimeout < t+time.Minute {
		opts.StageTimeout = t + time.Minute
	}
	opts.AWS = &a
	return opts
}
