// Package cluster is the kubernetes plugin's initialise: it checks the
// Kubernetes version against the pinned releases and against the version
// the cluster last deployed, and gathers what the nodes, the control plane
// and the add-ons contribute.
package cluster

import (
	"fmt"

	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/addons"
	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/controlplane"
	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/joinsecrets"
	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/node"
	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/upgrade"
	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/versions"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/kubeversion"
	"github.com/kube-aws/kube-aws/core/names"
)

// Plugin is the plugin's name.
const Plugin = "kubernetes"

// Initialise returns the plugin's constructs. A fatal diagnostic (a
// Kubernetes version without pins, or one the deployed version cannot
// change to) means nothing is contributed; an error is kube-aws's own
// fault. k keeps the secrets the plugin generates, store the public values.
func Initialise(c *config.Cluster, workDir string, k joinsecrets.Keeper, store joinsecrets.Store) (*construct.Set, diag.List, error) {
	r, diags := versions.For(c.KubernetesVersion)
	var v kubeversion.Version
	if !diags.HasFatal() {
		var err error
		if v, err = kubeversion.Parse(r.Kubernetes); err != nil {
			return nil, nil, err
		}
		// The version may change only as the skew policy allows, from
		// the one the cluster last deployed.
		d, err := upgrade.Check(store, v)
		if err != nil {
			return nil, nil, err
		}
		diags = append(diags, d...)
		if c.Artifacts.Mirror == "" {
			diags = append(diags, r.UpstreamGaps()...)
		}
	}
	if c.APIEndpoint.DNSName == "" {
		// kube-proxy and joining workers reach the API server before the
		// kubernetes Service works: by the endpoint's name.
		diags = append(diags, diag.Fatalf("kube-proxy and the workers' kubelets need the API server's address before the kubernetes Service works, and apiEndpoint.dnsName is empty").
			At("apiEndpoint.dnsName").WithHint("set apiEndpoint.dnsName (with apiEndpoint.hostedZoneId kube-aws creates its record)"))
	}
	if diags.HasFatal() {
		return nil, diags, nil
	}
	apiServer := fmt.Sprintf("https://%s:%d", c.APIEndpoint.DNSName, names.APIServerPort)
	s, err := node.SettingsOf(c, r)
	if err != nil {
		return nil, diag.List{diag.Fatalf("%v", err).At("kubernetes.serviceCIDR")}, nil
	}
	set := &construct.Set{Artifacts: r.Artifacts(c.Artifacts.Mirror != "", node.CNIBinDir, node.KubeletBinary)}
	upgrade.Output(set, v)
	if err := node.Contribute(set, s); err != nil {
		return nil, nil, err
	}
	if err := controlplane.Contribute(set, c, r); err != nil {
		return nil, nil, err
	}
	d, err := controlplane.Drainer(set, c)
	if err != nil {
		return nil, nil, err
	}
	diags = append(diags, d...)
	if err := controlplane.PodIdentityWebhook(set); err != nil {
		return nil, nil, err
	}
	if err := joinsecrets.Contribute(set, k, store, apiServer); err != nil {
		return nil, nil, err
	}
	bound, d, err := addons.Contribute(set, c, r, apiServer, Plugin, workDir)
	if err != nil {
		return nil, nil, err
	}
	if err := node.Goals(set, bound); err != nil {
		return nil, nil, err
	}
	if diags = append(diags, d...); diags.HasFatal() {
		return nil, diags, nil
	}
	return set, diags, nil
}
