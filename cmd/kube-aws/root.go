package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/stages"
	"github.com/kube-aws/kube-aws/stages/action"
)

// globals are the flags every command takes.
type globals struct {
	config           string
	pluginDirs       []string
	output           string
	warningsAsErrors bool
	startTimeout     time.Duration
	stageTimeout     time.Duration
	verbose          bool
	progress         string

	stdout, stderr io.Writer
	// ran is set once a command's own code runs: an error before that is
	// cobra rejecting the command line (exit 2).
	ran bool
}

// options turns the global flags into pipeline options.
func (g *globals) options() stages.Options {
	return stages.Options{
		ConfigPath:       g.config,
		PluginDirs:       g.pluginDirs,
		WarningsAsErrors: g.warningsAsErrors,
		StartTimeout:     g.startTimeout,
		StageTimeout:     g.stageTimeout,
		Reporter:         &textReporter{W: g.stderr, Verbose: g.verbose},
		PluginStderr:     g.stderr,
		HostVersion:      version.Version,
		// Downloads, signature checks and new pins of plugins from
		// registries: rare, and worth seeing in a CI log.
		Registry: stages.RegistryOptions{Log: func(line string) { fmt.Fprintf(g.stderr, "plugins: %s\n", line) }},
	}
}

func (g *globals) json() bool { return g.output == "json" }

// actionConfig is what every action gets from the global flags: the
// pipeline options and the way to ask the operator.
func (g *globals) actionConfig() action.Config {
	return action.Config{Options: g.options(), Ask: g.ask()}
}

// run is main without os.Exit, for tests.
func run(args []string, stdout, stderr io.Writer) (code int) {
	g := &globals{stdout: stdout, stderr: stderr}
	defer func() {
		// A panic in kube-aws itself must not leave plugin processes behind.
		if r := recover(); r != nil {
			stages.KillAllPlugins()
			panic(r)
		}
	}()
	root := newRoot(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	ctx, stop := stages.SignalContext(context.Background())
	defer stop()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return stages.ExitOK
	}
	if !g.ran {
		fmt.Fprintf(stderr, "Error: %v\nRun 'kube-aws --help' for usage.\n", err)
		return stages.ExitUsage
	}
	var printed *printedError
	if !errors.As(err, &printed) {
		fmt.Fprintf(stderr, "Error: %v\n", err)
	}
	return stages.ExitCode(err)
}

// printedError is an error the command already reported in its output.
type printedError struct{ err error }

func (e *printedError) Error() string { return e.err.Error() }
func (e *printedError) Unwrap() error { return e.err }

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "kube-aws",
		Short: "Provision Kubernetes clusters on AWS with CloudFormation, extended by plugins",
		Long: `kube-aws renders and deploys a Kubernetes cluster on AWS from one cluster.yaml.
Almost everything it does is done by plugins (built-in, contrib and your own in
plugins/<name>/ beside cluster.yaml) driven through four stages: initialise,
render, deploy and validate.

Exit codes: 0 ok, 1 fatal diagnostics or a failed operation, 2 usage or
configuration error, 3 diff --exit-code found changes, 130 interrupted
(docs/exit-codes.md).`,
		Example: `  kube-aws init --cluster-name demo --region eu-west-1 --s3-uri s3://my-bucket/demo
  kube-aws render
  kube-aws up
  kube-aws diff --exit-code
  kube-aws stage render --output json
  kube-aws plugins list`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if g.output != "text" && g.output != "json" {
				return fmt.Errorf("--output must be text or json, not %q", g.output)
			}
			switch g.progress {
			case "auto", "live", "text", "json":
			default:
				return fmt.Errorf("--progress must be auto, live, text or json, not %q", g.progress)
			}
			return nil
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	f := root.PersistentFlags()
	f.StringVarP(&g.config, "config", "c", "cluster.yaml", "path of cluster.yaml")
	f.StringArrayVar(&g.pluginDirs, "plugin-dir", nil, "extra folder of user plugins (<dir>/<name>/<name>); repeatable")
	f.StringVarP(&g.output, "output", "o", "text", "output format: text or json")
	f.BoolVar(&g.warningsAsErrors, "warnings-as-errors", false, "treat every warning as fatal (for CI)")
	f.DurationVar(&g.startTimeout, "start-timeout", 10*time.Second, "how long a plugin may take to start and describe itself")
	f.DurationVar(&g.stageTimeout, "stage-timeout", 10*time.Minute, "how long a plugin may take for one stage")
	f.BoolVarP(&g.verbose, "verbose", "v", false, "show plugins' debug logs and progress")
	f.StringVar(&g.progress, "progress", "auto", "how progress is shown on stderr: live (a row per stack and machine), text (a line per event), json (a JSON object per event), or auto (live on a terminal, else text)")

	root.AddCommand(
		newInit(g),
		newRender(g),
		newStage(g),
		newUp(g),
		newDiff(g),
		newValidate(g),
		newKubeconfig(g),
		newDestroy(g),
		newPlugins(g),
		newSchema(g),
		newVersion(g),
		newCompletion(g, root),
	)
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			c.Example = "  kube-aws help render\n  kube-aws help plugins lock"
		}
	}
	return root
}

// own marks that the command's own code runs (see globals.ran).
func own(g *globals, f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		g.ran = true
		return f(cmd, args)
	}
}

// exactArgs is cobra.ExactArgs with a message that says what is expected.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%s expects %s, got %d argument(s)", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}
