// Package kubernetes is the built-in kube-aws plugin that makes the machines
// Kubernetes nodes: containerd's configuration and the kubelet (unit,
// configuration, flags) on controllers and workers, the static pods of
// kube-controller-manager and kube-scheduler, the nodes' goal and the
// kubelet serving CSR approver, and the add-ons every cluster runs as Helm
// releases (kube-proxy, CoreDNS, the AWS cloud controller manager). The
// Kubernetes version must be one whose binaries and images it pins; any other
// is fatal at initialise, and so is a change from the version the cluster
// last deployed that the upstream version skew policy does not allow (the
// validate stage of a successful deploy records that version). The logic is
// in internal/.
package kubernetes

import (
	"context"
	"errors"

	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/cluster"
	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/upgrade"
	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/versions"
	"github.com/kube-aws/kube-aws/core/kubeversion"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// Plugin is the kubernetes plugin as kube-aws serves it (cmd/kube-aws-builtins).
func Plugin() sdk.Plugin { return sdk.Typed[sdk.NoValues](plugin{}) }

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:        cluster.Plugin,
		Version:     version.Version,
		Description: "containerd, kubelet, controller-manager, scheduler, kube-proxy, CoreDNS and the AWS cloud controller manager",
	}
}

// Validate records the Kubernetes version of a deploy that succeeded as the
// version the cluster runs: initialise checks the next change against it.
// kube-aws calls validate only after a deploy stage that succeeded, with
// its result (in `up`, in the same run; `kube-aws validate` reads the
// persisted deploy state, refused when cluster.yaml changed since), so a
// render, a diff or a failed deploy never moves the record.
func (plugin) Validate(_ context.Context, in *sdk.Input[sdk.NoValues]) (*stage.Result, error) {
	r, diags := versions.For(in.Cluster.KubernetesVersion)
	if diags.HasFatal() {
		// Initialise refused it; nothing was deployed with it.
		return &stage.Result{}, nil
	}
	v, err := kubeversion.Parse(r.Kubernetes)
	if err != nil {
		return nil, err
	}
	recorded, err := upgrade.Record(store{in.Request}, in.Deploy, in.Cluster.ClusterName, v)
	if err != nil {
		return nil, err
	}
	if recorded {
		in.Log("info", "recorded Kubernetes "+v.String()+" as the version cluster "+in.Cluster.ClusterName+" runs ("+upgrade.StorePath+"): the next kubernetesVersion change is checked against it")
	}
	return &stage.Result{}, nil
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[sdk.NoValues]) (*stage.Result, error) {
	set, diags, err := cluster.Initialise(in.Cluster, in.WorkDir, in.GeneratedSecrets(), store{in.Request})
	if err != nil {
		return nil, err
	}
	return &stage.Result{Constructs: set, Diagnostics: diags.WithDefaults(cluster.Plugin, string(stage.Initialise))}, nil
}

// store keeps the plugin's public values in kube-aws's key-value store
// (.kube-aws/store/kubernetes.json).
type store struct{ r *sdk.Request }

func (s store) Get(key string) ([]byte, bool, error) {
	if s.r.Host == nil {
		return nil, false, errors.New("kube-aws offers no host services to this call")
	}
	return s.r.Host.StoreGet(key)
}

func (s store) Put(key string, value []byte) error {
	if s.r.Host == nil {
		return errors.New("kube-aws offers no host services to this call")
	}
	return s.r.Host.StorePut(key, value)
}
