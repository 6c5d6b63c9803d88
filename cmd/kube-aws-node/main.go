// Command kube-aws-node is the program every machine of a kube-aws cluster
// runs: the launch template's bootstrap execs `kube-aws-node boot`, which
// applies the role's userdata, whose runcmd calls the other steps. Each
// step reads its plan from /etc/kube-aws/ (core/nodeplan declares the steps
// and the plans) and keeps the contract of node/step. This file only wires
// flags to the steps node/steps lists; docs/node-agent.md describes it all.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/node/steps"
	"github.com/kube-aws/kube-aws/node/steps/boot"
)

func usage(w io.Writer, all []step.Step) {
	fmt.Fprintf(w, "kube-aws-node %s: the work on a kube-aws machine, step by step.\n\nusage: kube-aws-node <step> [flags]\n\nsteps, in the order a machine runs them:\n", version.Version)
	for _, s := range all {
		d, _ := nodeplan.StepNamed(s.Name())
		fmt.Fprintf(w, "  %-14s %s\n", s.Name(), d.Summary)
	}
	fmt.Fprintf(w, "  %-14s %s\n\nEvery step takes --root DIR (default $KUBE_AWS_ROOT or /), --console PATH (default /dev/console)\nand --dry-run (say what it would change, on stdout, and change nothing; --json for JSON).\n`kube-aws-node <step> -h` lists a step's flags. Exit codes: 0 done, 1 failed, 2 usage, 3 bad plan, userdata or settings.\n", "version", "print the version")
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	all := steps.All()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(os.Stderr, all)
		if len(args) == 0 {
			return agent.ExitUsage
		}
		return agent.ExitOK
	}
	if args[0] == "version" {
		fmt.Println(version.Version)
		return agent.ExitOK
	}
	for _, s := range all {
		if s.Name() != args[0] {
			continue
		}
		fs := flag.NewFlagSet("kube-aws-node "+s.Name(), flag.ContinueOnError)
		o := agent.Options{Stderr: os.Stderr}
		root := os.Getenv(boot.EnvRoot)
		if root == "" {
			root = "/"
		}
		fs.StringVar(&o.Root, "root", root, "folder every path is under")
		fs.StringVar(&o.Console, "console", "/dev/console", "where lines go besides stderr (empty: nowhere)")
		m := step.Mode{Out: os.Stdout}
		fs.BoolVar(&m.DryRun, "dry-run", false, "say what the step would change, on stdout, and change nothing")
		fs.BoolVar(&m.JSON, "json", false, "with --dry-run: the changes as JSON")
		s.Flags(fs)
		if err := fs.Parse(args[1:]); err != nil {
			if err == flag.ErrHelp {
				return agent.ExitOK
			}
			return agent.ExitUsage
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(os.Stderr, "kube-aws-node %s takes no arguments, got %q\n", s.Name(), fs.Args())
			return agent.ExitUsage
		}
		if m.JSON && !m.DryRun {
			fmt.Fprintf(os.Stderr, "kube-aws-node %s: --json goes with --dry-run\n", s.Name())
			return agent.ExitUsage
		}
		return step.Main(s, o, m)
	}
	fmt.Fprintf(os.Stderr, "kube-aws-node: unknown step %q\n\n", args[0])
	usage(os.Stderr, all)
	return agent.ExitUsage
}
