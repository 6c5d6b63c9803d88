package addons

import (
	"context"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	helmkube "helm.sh/helm/v3/pkg/kube"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/kube-aws/kube-aws/node/apply"
	"github.com/kube-aws/kube-aws/node/kube"
)

// Cluster is what the step needs of the cluster.
type Cluster interface {
	// WaitReady waits until the API server is ready.
	WaitReady(ctx context.Context) error
	// Helm is Helm's configuration for releases in namespace.
	Helm(namespace string) (*action.Configuration, error)
	// Applier applies manifests.
	Applier() (*apply.Applier, error)
}

// Connect reaches the cluster a kubeconfig names.
func Connect(kubeconfig string, logf func(string, ...any)) (Cluster, error) {
	cfg, err := kube.Config(kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	return &cluster{kubeconfig: kubeconfig, cs: cs, applier: &apply.Applier{Dynamic: dyn, Mapper: mapper}, logf: logf}, nil
}

type cluster struct {
	kubeconfig string
	cs         kubernetes.Interface
	applier    *apply.Applier
	logf       func(string, ...any)
}

func (c *cluster) WaitReady(ctx context.Context) error { return kube.WaitReady(ctx, c.cs, c.logf) }

func (c *cluster) Applier() (*apply.Applier, error) { return c.applier, nil }

// Helm's releases are kept as Secrets in the release's namespace, as the
// helm command keeps them, so `helm list -A` shows what kube-aws installed.
func (c *cluster) Helm(namespace string) (*action.Configuration, error) {
	cfg := new(action.Configuration)
	getter := helmkube.GetConfig(c.kubeconfig, "", namespace)
	if err := cfg.Init(getter, namespace, "secret", func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("setting up Helm for namespace %s: %w", namespace, err)
	}
	return cfg, nil
}
