// Package flannel is the built-in kube-aws plugin that gives the cluster its
// pod network: flannel with the vxlan backend, as a Helm release installed
// after the kubernetes plugin's kube-proxy (flanneld reaches the API server
// through the kubernetes Service), and its image as an artifact of every
// node. It provides the "cni" capability: a cluster that runs another CNI
// (aws-vpc-cni, say) disables it with plugins.flannel.enabled: false. The
// logic is in internal/cni.
package flannel

import (
	"context"

	"github.com/kube-aws/kube-aws/builtin/flannel/internal/cni"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// Plugin is the flannel plugin as kube-aws serves it (cmd/kube-aws-builtins).
func Plugin() sdk.Plugin { return sdk.Typed[sdk.NoValues](plugin{}) }

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         cni.Plugin,
		Version:      version.Version,
		Description:  "flannel (vxlan) as the pod network",
		Capabilities: []string{"cni"},
	}
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[sdk.NoValues]) (*stage.Result, error) {
	set, err := cni.Contribute(in.Cluster, in.WorkDir)
	if err != nil {
		return nil, err
	}
	return &stage.Result{Constructs: set}, nil
}
