package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/plugins/oci/helper"
	"github.com/kube-aws/kube-aws/plugins/source"
	"github.com/kube-aws/kube-aws/stages/action"
)

// newPluginsInstall is `plugins install` or, with upgrade, `plugins upgrade`.
func newPluginsInstall(g *globals, upgrade bool) *cobra.Command {
	c := &cobra.Command{
		Use:   "install [NAME...]",
		Short: "Install the plugins cluster.yaml takes from registries and pin them in plugins.lock",
		Long: `install downloads every plugin that has plugins.<name>.source (or the named ones) into
kube-aws's plugin cache, checks its cosign signature when plugins.<name>.verify.key is set,
and pins the digest and every file's sha256 in plugins.lock. A plugin pinned already is
fetched by its digest, and a tag that points elsewhere now is refused: run upgrade to move.
Any command that runs plugins installs the missing ones the same way; install also checks
the tags and re-checks every cached file.`,
		Example: `  kube-aws plugins install && git add plugins.lock
  kube-aws plugins install hello --output json`,
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			return runRegistry(g, cmd, args, upgrade)
		}),
	}
	if upgrade {
		c.Use = "upgrade [NAME...]"
		c.Short = "Resolve the sources of plugins from registries again and move their pins in plugins.lock"
		c.Long = `upgrade resolves plugins.<name>.source of every plugin from a registry (or the named ones)
afresh, installs what it names now (checking its signature) and moves the pin in
plugins.lock, printing the old and the new version. Commit plugins.lock afterwards.`
		c.Example = `  kube-aws plugins upgrade
  kube-aws plugins upgrade hello`
	}
	return c
}

func runRegistry(g *globals, cmd *cobra.Command, names []string, upgrade bool) error {
	verb := "plugins install"
	if upgrade {
		verb = "plugins upgrade"
	}
	a := &action.RegistryPlugins{Config: g.actionConfig(), Upgrade: upgrade, Names: names}
	res, err := a.Run(cmd.Context())
	if err != nil {
		return fail(g, verb, err)
	}
	if g.json() {
		type change struct {
			Name       string `json:"name"`
			Source     string `json:"source"`
			From       string `json:"from,omitempty"`
			FromDigest string `json:"fromDigest,omitempty"`
			Version    string `json:"version"`
			Digest     string `json:"digest"`
			Downloaded bool   `json:"downloaded"`
			Repaired   string `json:"repaired,omitempty"`
		}
		out := struct {
			Lockfile    string    `json:"lockfile"`
			LockWritten bool      `json:"lockWritten"`
			Plugins     []change  `json:"plugins"`
			Diagnostics diag.List `json:"diagnostics"`
		}{Lockfile: res.LockPath, LockWritten: res.LockWritten, Plugins: []change{}, Diagnostics: res.Diagnostics}
		if out.Diagnostics == nil {
			out.Diagnostics = diag.List{}
		}
		for _, c := range res.Changes {
			ch := change{Name: c.Name, Source: c.Source, Version: c.To.Version, Digest: c.To.Digest, Downloaded: c.Downloaded, Repaired: c.Repaired}
			if c.From != nil {
				ch.From, ch.FromDigest = c.From.Version, c.From.Digest
			}
			out.Plugins = append(out.Plugins, ch)
		}
		return writeJSON(g.stdout, out)
	}
	printDiagnostics(g.stderr, res.Diagnostics)
	for _, c := range res.Changes {
		fmt.Fprintln(g.stdout, describeChange(c, upgrade))
	}
	if res.LockWritten {
		fmt.Fprintf(g.stdout, "%s updated: commit it\n", res.LockPath)
	} else {
		fmt.Fprintf(g.stdout, "%d plugin(s) from registries installed and matching %s\n", len(res.Installed), res.LockPath)
	}
	return nil
}

// describeChange is one line of install's or upgrade's report:
// "hello: pinned 0.1.0 (sha256:...) from oci://...; signature verified; downloaded".
func describeChange(c source.Change, upgrade bool) string {
	var pin string
	switch {
	case c.From == nil:
		pin = "pinned " + c.To.String()
	case c.From.Digest != c.To.Digest:
		pin = c.From.String() + " -> " + c.To.String()
	default:
		pin = c.To.String()
	}
	what := []string{fmt.Sprintf("%s: %s from %s", c.Name, pin, c.Source)}
	if upgrade && c.From != nil && c.From.Digest == c.To.Digest {
		what = append(what, "up to date")
	}
	switch {
	case c.Verified:
		what = append(what, "signature verified with a new key")
	case c.Signed:
		what = append(what, "signature verified")
	}
	if c.Repaired != "" {
		what = append(what, "its cached copy had been changed on disk ("+c.Repaired+") and was downloaded again")
	} else if c.Downloaded {
		what = append(what, "downloaded")
	}
	return strings.Join(what, "; ")
}

func newPluginsPush(g *globals) *cobra.Command {
	var platforms []string
	c := &cobra.Command{
		Use:   "push DIR oci://REGISTRY/REPOSITORY:VERSION",
		Short: "Package a built plugin and push it to an OCI registry",
		Long: `push packages a plugin folder as an OCI artifact (an image index with one manifest per
platform, each file a layer, the plugin's info in annotations) and pushes it with the
credentials of docker login or helm registry login. DIR holds one folder per platform,
named <os>-<arch> (linux-amd64, darwin-arm64...), each with the executable named after the
plugin and the files beside it; or DIR is itself a plugin folder (a script plugin), pushed
for every --platform. push starts the plugin once to ask its name, version and stages.`,
		Example: `  kube-aws plugins push dist oci://ghcr.io/acme/kube-aws-hello:0.1.0
  kube-aws plugins push plugins/python-example oci://ghcr.io/acme/python-example:0.1.0 --platform linux/amd64,linux/arm64,darwin/arm64`,
		Args: exactArgs(2, "a plugin folder and an oci:// reference"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			a := &action.PushPlugin{Dir: args[0], Target: args[1], Platforms: platforms,
				Log: func(line string) { fmt.Fprintf(g.stderr, "plugins: %s\n", line) }}
			res, err := a.Run(cmd.Context())
			if err != nil {
				return fail(g, "plugins push", err)
			}
			if g.json() {
				return writeJSON(g.stdout, res)
			}
			printPushed(g, res)
			return nil
		}),
	}
	c.Flags().StringSliceVar(&platforms, "platform", nil, "os/arch to push a plugin folder for (repeat or comma-separate; default: this machine's); not with <os>-<arch> sub-folders")
	return c
}

func printPushed(g *globals, res *helper.PushResult) {
	fmt.Fprintf(g.stdout, "pushed %s %s for %s to %s\n", res.Name, res.Version, strings.Join(res.Platforms, ", "), res.Target)
	fmt.Fprintf(g.stdout, "digest: %s\n", res.Digest)
	// Signed as cosign does by default, a private plugin's repository and
	// digest would be published in Sigstore's public transparency log,
	// which kube-aws never reads: the command keeps the signature private.
	fmt.Fprintf(g.stdout, "sign it: %s\n", helper.SignCommand("cosign.key", res.Repository+"@"+res.Digest))
	fmt.Fprintln(g.stdout, "  (signs privately, not in Sigstore's public transparency log; cosign before 2.6 has no --use-signing-config: leave it out there)")
}
