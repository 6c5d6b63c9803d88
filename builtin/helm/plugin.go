// Package helm is the built-in kube-aws plugin for Helm releases. In render it
// loads every release's chart with Helm's own library (a folder or .tgz a
// plugin ships, or a repository reference recorded for the node), renders it
// with the release's values so a broken template fails the render, and writes
// charts/<release>-<version>.tgz and the release list charts/releases.json,
// which the controllers' add-ons plan installs in plugin order (kube-aws-node
// addons). The logic is in internal/charts.
package helm

import (
	"context"

	"github.com/kube-aws/kube-aws/builtin/helm/internal/charts"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// Plugin is the helm plugin as kube-aws serves it (cmd/kube-aws-builtins).
func Plugin() sdk.Plugin { return sdk.Typed[sdk.NoValues](plugin{}) }

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:        charts.Plugin,
		Version:     version.Version,
		Description: "Helm releases: charts checked and packaged at render, installed by the controllers once the API answers",
	}
}

func (plugin) Render(_ context.Context, in *sdk.Input[sdk.NoValues]) (*stage.Result, error) {
	var releases []construct.HelmRelease
	if in.Constructs != nil {
		releases = in.Constructs.HelmReleases
	}
	files, diags, err := charts.Render(in.Cluster, releases, charts.OpenCache(in.WorkDir))
	if err != nil {
		return nil, err
	}
	return &stage.Result{Files: files, Diagnostics: diags}, nil
}
