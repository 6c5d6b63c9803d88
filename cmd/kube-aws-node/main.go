// Command kube-aws-node is the program every machine of a kube-aws cluster
// runs: the launch template's bootstrap execs `kube-aws-node boot`, which
// applies the role's userdata, whose runcmd calls the other steps. Each
// step reads its plan from /etc/kube-aws/ (core/nodeplan). This file only
// wires flags to node; docs/node-agent.md describes it all.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/node/addons"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/apiwait"
	"github.com/kube-aws/kube-aws/node/artifacts"
	"github.com/kube-aws/kube-aws/node/boot"
	"github.com/kube-aws/kube-aws/node/certs"
	"github.com/kube-aws/kube-aws/node/command"
	"github.com/kube-aws/kube-aws/node/csrapprove"
	"github.com/kube-aws/kube-aws/node/dns"
	"github.com/kube-aws/kube-aws/node/etcdsnap"
	"github.com/kube-aws/kube-aws/node/goal"
	"github.com/kube-aws/kube-aws/node/images"
	"github.com/kube-aws/kube-aws/node/kube"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/node/secrets"
	"github.com/kube-aws/kube-aws/node/volumes"
)

type step struct {
	name, summary string
	// flags declares the step's own flags and returns what runs it.
	flags func(fs *flag.FlagSet) func(context.Context, *agent.Env) error
	fresh bool
}

var steps = []step{
	{name: "boot", summary: "fetch the role's userdata from S3, check its sha256, apply write_files and runcmd", fresh: true,
		flags: func(fs *flag.FlagSet) func(context.Context, *agent.Env) error {
			o := boot.Options{}
			fs.DurationVar(&o.FetchTimeout, "fetch-timeout", 5*time.Minute, "how long to try fetching the userdata")
			fs.DurationVar(&o.CommandTimeout, "command-timeout", 30*time.Minute, "how long each runcmd command may take")
			return func(ctx context.Context, e *agent.Env) error {
				self, err := os.Executable()
				if err != nil {
					return err
				}
				o.Self = self
				return boot.Run(ctx, e, o)
			}
		}},
	{name: "secrets", summary: "decrypt the secrets plan's markers with KMS and substitute them by file format",
		flags: func(*flag.FlagSet) func(context.Context, *agent.Env) error { return secrets.Run }},
	{name: "artifacts", summary: "install the artifacts plan's binaries and import its images into containerd",
		flags: func(fs *flag.FlagSet) func(context.Context, *agent.Env) error {
			o := artifacts.Options{Images: &images.Client{Run: command.Exec}}
			fs.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "how long downloads and imports may take")
			fs.StringVar(&o.Images.Address, "containerd-address", "", "containerd's socket (ctr's default when empty)")
			return func(ctx context.Context, e *agent.Env) error { return artifacts.Run(ctx, e, o) }
		}},
	{name: "certificates", summary: "issue the certificates plan's leaf certificates from the CAs on this machine",
		flags: func(*flag.FlagSet) func(context.Context, *agent.Env) error { return certs.Run }},
	{name: "volumes", summary: "attach, format (only when blank) and mount the volumes plan's EBS volumes",
		flags: func(fs *flag.FlagSet) func(context.Context, *agent.Env) error {
			o := volumes.Options{Run: command.Exec, Poll: 500 * time.Millisecond}
			fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "how long each volume may take to become free, attach and appear")
			return func(ctx context.Context, e *agent.Env) error { return volumes.Run(ctx, e, o) }
		}},
	{name: "dns", summary: "upsert the DNS plan's Route 53 records with this machine's facts",
		flags: func(fs *flag.FlagSet) func(context.Context, *agent.Env) error {
			o := dns.Options{}
			fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long each record may take to be in sync")
			return func(ctx context.Context, e *agent.Env) error { return dns.Run(ctx, e, o) }
		}},
	{name: "addons", summary: "once the API server answers, install the add-ons plan's Helm releases, then apply its manifests",
		flags: func(fs *flag.FlagSet) func(context.Context, *agent.Env) error {
			o := addons.Options{Connect: addons.Connect, Retry: retry.Policy{Initial: time.Second, Max: 30 * time.Second, Factor: 2, Jitter: 0.2}}
			fs.DurationVar(&o.APITimeout, "api-timeout", 20*time.Minute, "how long to wait for the API server")
			fs.DurationVar(&o.ReleaseTimeout, "release-timeout", 15*time.Minute, "how long each release or manifest may take, retries included")
			return func(ctx context.Context, e *agent.Env) error { return addons.Run(ctx, e, o) }
		}},
	{name: "wait", summary: "wait for the goal plan's goal (node Ready or etcd member healthy) and report it",
		flags: func(*flag.FlagSet) func(context.Context, *agent.Env) error {
			return func(ctx context.Context, e *agent.Env) error {
				return goal.Run(ctx, e, goal.Options{Connect: kube.Clientset})
			}
		}},
	{name: "wait-api", summary: "wait until the API server answers a kubeconfig's credential (a worker's kubelet, before it starts)",
		flags: func(fs *flag.FlagSet) func(context.Context, *agent.Env) error {
			o := apiwait.Options{Connect: kube.Clientset}
			fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "the kubeconfig to ask with (required)")
			fs.StringVar(&o.UnlessExists, "unless-exists", "", "do not wait when this file exists (the kubelet's own kubeconfig)")
			fs.DurationVar(&o.Timeout, "timeout", 15*time.Minute, "how long to wait")
			return func(ctx context.Context, e *agent.Env) error { return apiwait.Run(ctx, e, o) }
		}},
	{name: "etcd-snapshot", summary: "snapshot this etcd member (when leader) to etcd/snapshots/ in S3, KMS-encrypted",
		flags: func(fs *flag.FlagSet) func(context.Context, *agent.Env) error {
			o := etcdsnap.Options{}
			fs.BoolVar(&o.AnyMember, "any-member", false, "snapshot even when this member is not the leader")
			fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "how long the snapshot and its upload may take")
			return func(ctx context.Context, e *agent.Env) error { _, err := etcdsnap.Run(ctx, e, o); return err }
		}},
	{name: "approve-csrs", summary: "run the approver of kubelet serving CSRs whose names are their node's instance's (until stopped)",
		flags: func(*flag.FlagSet) func(context.Context, *agent.Env) error {
			return func(ctx context.Context, e *agent.Env) error {
				return csrapprove.Run(ctx, e, csrapprove.Options{Connect: kube.Clientset})
			}
		}},
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "kube-aws-node %s: the work on a kube-aws machine, step by step.\n\nusage: kube-aws-node <step> [flags]\n\nsteps:\n", version.Version)
	for _, s := range steps {
		fmt.Fprintf(w, "  %-14s %s\n", s.name, s.summary)
	}
	fmt.Fprintf(w, "  %-14s %s\n\nEvery step takes --root DIR (default $KUBE_AWS_ROOT or /) and --console PATH (default /dev/console).\n`kube-aws-node <step> -h` lists a step's flags. Exit codes: 0 done, 1 failed, 2 usage, 3 bad plan, userdata or settings.\n", "version", "print the version")
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(os.Stderr)
		if len(args) == 0 {
			return agent.ExitUsage
		}
		return agent.ExitOK
	}
	if args[0] == "version" {
		fmt.Println(version.Version)
		return agent.ExitOK
	}
	for _, s := range steps {
		if s.name != args[0] {
			continue
		}
		fs := flag.NewFlagSet("kube-aws-node "+s.name, flag.ContinueOnError)
		o := agent.Options{Stderr: os.Stderr, FreshFacts: s.fresh}
		root := os.Getenv(boot.EnvRoot)
		if root == "" {
			root = "/"
		}
		fs.StringVar(&o.Root, "root", root, "folder every path is under")
		fs.StringVar(&o.Console, "console", "/dev/console", "where lines go besides stderr (empty: nowhere)")
		runStep := s.flags(fs)
		if err := fs.Parse(args[1:]); err != nil {
			if err == flag.ErrHelp {
				return agent.ExitOK
			}
			return agent.ExitUsage
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(os.Stderr, "kube-aws-node %s takes no arguments, got %q\n", s.name, fs.Args())
			return agent.ExitUsage
		}
		return agent.Main(s.name, o, runStep)
	}
	fmt.Fprintf(os.Stderr, "kube-aws-node: unknown step %q\n\n", args[0])
	usage(os.Stderr)
	return agent.ExitUsage
}
