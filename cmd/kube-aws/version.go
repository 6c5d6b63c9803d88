package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/kube-aws/kube-aws/core/version"
)

func newVersion(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the kube-aws version, the plugin SDK version to require and the plugin protocol version",
		Long: `version prints kube-aws's semantic version (the version its Go module, and so the plugin SDK,
is tagged with) with the git commit it was built from as build metadata, the plugin protocol
version it speaks, and the go.mod line a plugin built for this kube-aws requires.`,
		Example: `  kube-aws version
  kube-aws version --output json`,
		Args: exactArgs(0, "no arguments"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			if g.json() {
				type sdk struct {
					Module  string `json:"module"`
					Version string `json:"version"`
				}
				return writeJSON(g.stdout, struct {
					Version         string `json:"version"`
					Release         string `json:"release"`
					Commit          string `json:"commit,omitempty"`
					SDK             sdk    `json:"sdk"`
					ProtocolVersion int    `json:"protocolVersion"`
					Go              string `json:"go"`
				}{version.Version, version.Release, version.Commit, sdk{version.Module, version.SDKVersion}, version.ProtocolVersion, runtime.Version()})
			}
			fmt.Fprintf(g.stdout, "kube-aws %s (plugin protocol %d, %s)\nplugin SDK: require %s %s\n",
				version.Version, version.ProtocolVersion, runtime.Version(), version.Module, version.SDKVersion)
			return nil
		}),
	}
}

func newCompletion(g *globals, root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "completion <bash|zsh|fish|powershell>",
		Short: "Print a shell completion script",
		Example: `  # bash, this shell
  source <(kube-aws completion bash)
  # zsh, permanently
  kube-aws completion zsh > "${fpath[1]}/_kube-aws"
  kube-aws completion fish > ~/.config/fish/completions/kube-aws.fish`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      exactArgs(1, "one shell: bash, zsh, fish or powershell"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(g.stdout, true)
			case "zsh":
				return root.GenZshCompletion(g.stdout)
			case "fish":
				return root.GenFishCompletion(g.stdout, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(g.stdout)
			}
			g.ran = false // an unknown shell is a usage error
			return fmt.Errorf("unknown shell %q: want bash, zsh, fish or powershell", args[0])
		}),
	}
}
