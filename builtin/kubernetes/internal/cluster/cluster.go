// Package cluster is the kubernetes plugin's initialise: it checks the
// Kubernetes version against the pinned releases and gathers what the nodes,
// the control plane and the add-ons contribute.
package cluster

import (
	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/addons"
	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/controlplane"
	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/node"
	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/versions"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
)

// Plugin is the plugin's name.
const Plugin = "kubernetes"

// Initialise returns the plugin's constructs. A fatal diagnostic (a
// Kubernetes version without pins) means nothing is contributed; an error is
// kube-aws's own fault.
func Initialise(c *config.Cluster, workDir string) (*construct.Set, diag.List, error) {
	r, diags := versions.For(c.KubernetesVersion)
	if diags.HasFatal() {
		return nil, diags, nil
	}
	s, err := node.SettingsOf(c, r)
	if err != nil {
		return nil, diag.List{diag.Fatalf("%v", err).At("kubernetes.serviceCIDR")}, nil
	}
	set := &construct.Set{Artifacts: r.Artifacts(c.Artifacts.Mirror != "", node.CNIBinDir, node.KubeletBinary)}
	if err := node.Contribute(set, s); err != nil {
		return nil, nil, err
	}
	if err := controlplane.Contribute(set, c, r); err != nil {
		return nil, nil, err
	}
	d, err := addons.Contribute(set, c, r, Plugin, workDir)
	if err != nil {
		return nil, nil, err
	}
	if diags = append(diags, d...); diags.HasFatal() {
		return nil, diags, nil
	}
	return set, diags, nil
}
