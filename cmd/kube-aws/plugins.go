package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/plugins/source"
	"github.com/kube-aws/kube-aws/stages"
	"github.com/kube-aws/kube-aws/stages/action"
)

func newPlugins(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "List, describe, lock, verify, install, upgrade and push plugins",
		Long: `Plugins are found in three places: built-in and contrib plugins shipped with kube-aws,
and user plugins in plugins/<name>/<name> beside cluster.yaml or in every --plugin-dir.
Built-ins are on unless plugins.<name>.enabled: false; contrib and user plugins are off
until plugins.<name>.enabled: true. A plugin can also come from an OCI registry:
plugins.<name>.source: oci://REGISTRY/REPOSITORY:TAG, pinned by digest in plugins.lock.`,
		Example: `  kube-aws plugins list
  kube-aws plugins describe dex
  kube-aws plugins lock && git add plugins.lock
  kube-aws plugins verify
  kube-aws plugins install
  kube-aws plugins upgrade hello
  kube-aws plugins push dist oci://ghcr.io/acme/kube-aws-hello:0.1.0`,
		Args: exactArgs(0, "a subcommand: list, describe, lock, verify, install, upgrade or push"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error { return cmd.Help() }),
	}
	cmd.AddCommand(newPluginsList(g), newPluginsDescribe(g), newPluginsLock(g), newPluginsVerify(g),
		newPluginsInstall(g, false), newPluginsInstall(g, true), newPluginsPush(g))
	return cmd
}

func newPluginsList(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List every plugin found: name, version, source, path, stages, protocol version",
		Long: `list starts every plugin found just long enough to ask what it is. Enabled plugins
come first, in the order they run; a plugin that cannot start is listed with its error.
cluster.yaml is optional.`,
		Example: `  kube-aws plugins list
  kube-aws plugins list --plugin-dir ~/kube-aws-plugins --output json`,
		Args: exactArgs(0, "no arguments"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			ps, err := action.ListPlugins(cmd.Context(), g.options())
			if err != nil {
				return fail(g, "plugins list", err)
			}
			failed := action.StartFailures(ps)
			if g.json() {
				if ps == nil {
					ps = []action.PluginSummary{}
				}
				if err := writeJSON(g.stdout, struct {
					Plugins []action.PluginSummary `json:"plugins"`
				}{ps}); err != nil {
					return err
				}
				if failed != nil {
					return &printedError{failed}
				}
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tSOURCE\tENABLED\tSTAGES\tPROTOCOL\tPATH")
			for _, p := range ps {
				st := make([]string, len(p.Stages))
				for i, s := range p.Stages {
					st[i] = string(s)
				}
				proto := "-"
				if p.ProtocolVersion > 0 {
					proto = fmt.Sprint(p.ProtocolVersion)
				}
				version := p.Version
				switch {
				case p.Error != "":
					version = "(failed to start)"
				case p.Warning != "":
					version = "(cannot start)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\t%s\n", p.Name, version, p.Source, p.Enabled, strings.Join(st, ","), proto, p.Path)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, p := range ps {
				if p.Error != "" {
					fmt.Fprintf(g.stderr, "%s: %s\n", p.Name, p.Error)
				}
				if p.Warning != "" {
					fmt.Fprintf(g.stderr, "%s: warning: %s\n", p.Name, p.Warning)
				}
			}
			return failed
		}),
	}
}

func newPluginsDescribe(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Show one plugin's information and the JSON Schema of its values",
		Example: `  kube-aws plugins describe cloudformation
  kube-aws plugins describe dex --output json | jq .valuesSchema`,
		Args: exactArgs(1, "one plugin name"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			p, err := action.DescribePlugin(cmd.Context(), g.options(), args[0])
			if err != nil {
				return fail(g, "plugins describe", err)
			}
			if g.json() {
				return writeJSON(g.stdout, p)
			}
			w := g.stdout
			fmt.Fprintf(w, "Name:        %s\nVersion:     %s\nSource:      %s\nPath:        %s\nEnabled:     %v\n",
				p.Name, p.Version, p.Source, p.Path, p.Enabled)
			if p.Description != "" {
				fmt.Fprintf(w, "Description: %s\n", p.Description)
			}
			st := make([]string, len(p.Stages))
			for i, s := range p.Stages {
				st[i] = string(s)
			}
			fmt.Fprintf(w, "Stages:      %s\nProtocol:    %d\n", strings.Join(st, ", "), p.ProtocolVersion)
			if len(p.Capabilities) > 0 {
				fmt.Fprintf(w, "Provides:    %s\n", strings.Join(p.Capabilities, ", "))
			}
			if len(p.ValuesSchema) > 0 {
				fmt.Fprintln(w, "Values schema:")
				return writeJSON(w, p.ValuesSchema)
			}
			fmt.Fprintln(w, "Values schema: none (the plugin takes no values)")
			return nil
		}),
	}
}

func newPluginsLock(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "lock",
		Short: "Record the sha256 of every contrib and user plugin in plugins.lock",
		Long: `lock writes plugins.lock beside cluster.yaml. From then on kube-aws refuses to start a
contrib or user plugin whose sha256 differs from its entry. Commit the file.`,
		Example: `  kube-aws plugins lock
  kube-aws plugins lock -c clusters/prod.yaml --plugin-dir ./shared-plugins`,
		Args: exactArgs(0, "no arguments"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			path, locked, err := action.LockPlugins(cmd.Context(), g.options())
			if err != nil {
				return fail(g, "plugins lock", err)
			}
			if g.json() {
				if locked == nil {
					locked = []source.Candidate{}
				}
				return writeJSON(g.stdout, struct {
					Lockfile string             `json:"lockfile"`
					Plugins  []source.Candidate `json:"plugins"`
				}{path, locked})
			}
			fmt.Fprintf(g.stdout, "locked %d plugin(s) in %s\n", len(locked), path)
			for _, c := range locked {
				fmt.Fprintf(g.stdout, "  %s (%s) %s\n", c.Name, c.Source, c.Path)
			}
			return nil
		}),
	}
}

func newPluginsVerify(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Check every contrib and user plugin against plugins.lock",
		Long: `verify checks every contrib and user plugin, and every plugin from a registry in the
plugin cache, against plugins.lock, reporting every difference; it starts nothing and
contacts no registry. A plugin from a registry that is not in the cache is reported with
what to run (plugins install), and so is one with plugins.<name>.verify.key whose pinned
digest the cache does not record as signature-checked with that key.`,
		Example: `  kube-aws plugins verify
  kube-aws plugins verify --output json`,
		Args: exactArgs(0, "no arguments"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			path, diags, err := action.VerifyPlugins(g.options())
			if g.json() {
				if diags == nil {
					diags = diag.List{}
				}
				doc := struct {
					Lockfile    string    `json:"lockfile"`
					OK          bool      `json:"ok"`
					ExitCode    int       `json:"exitCode"`
					Error       string    `json:"error,omitempty"`
					Diagnostics diag.List `json:"diagnostics"`
				}{Lockfile: path, OK: err == nil, ExitCode: stages.ExitCode(err), Diagnostics: diags}
				if err != nil {
					doc.Error = err.Error()
				}
				if werr := writeJSON(g.stdout, doc); werr != nil {
					return werr
				}
				if err != nil {
					return &printedError{err}
				}
				return nil
			}
			printDiagnostics(g.stderr, diags)
			if err != nil {
				fmt.Fprintf(g.stderr, "Error: %v\n", err)
				return &printedError{err}
			}
			fmt.Fprintf(g.stdout, "every plugin matches %s\n", path)
			return nil
		}),
	}
}
