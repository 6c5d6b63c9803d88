// Command helm is the built-in kube-aws plugin for Helm releases. In
// initialise it contributes the controller unit that installs, on boot and in
// plugin order, the releases listed in charts/releases.json. In render it
// loads every release's chart with Helm's own library (a folder or .tgz a
// plugin ships, or a repository reference recorded for the node), renders it
// with the release's values so a broken template fails the render, and writes
// charts/<release>-<version>.tgz and charts/releases.json. The logic is in
// internal/charts.
package main

import (
	"context"

	"github.com/kube-aws/kube-aws/builtin/helm/internal/charts"
	"github.com/kube-aws/kube-aws/builtin/internal/shortlived"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

func main() {
	shortlived.Tune()
	sdk.Serve(sdk.Typed[sdk.NoValues](plugin{}))
}

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:        charts.Plugin,
		Version:     version.Version,
		Description: "Helm releases: charts checked and packaged at render, installed on the controllers at boot",
	}
}

func (plugin) Initialise(context.Context, *sdk.Input[sdk.NoValues]) (*stage.Result, error) {
	set := charts.Install()
	return &stage.Result{Constructs: &set}, nil
}

func (plugin) Render(_ context.Context, in *sdk.Input[sdk.NoValues]) (*stage.Result, error) {
	var releases []construct.HelmRelease
	if in.Constructs != nil {
		releases = in.Constructs.HelmReleases
	}
	files, diags, err := charts.Render(in.Cluster, releases)
	if err != nil {
		return nil, err
	}
	return &stage.Result{Files: files, Diagnostics: diags}, nil
}
