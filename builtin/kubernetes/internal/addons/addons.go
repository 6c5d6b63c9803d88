// Package addons contributes the add-ons every kube-aws cluster runs as Helm
// releases, from charts written for kube-aws and embedded in the plugin:
// kube-proxy, the AWS cloud controller manager and CoreDNS, in that order
// (the helm plugin installs releases in plugin order, then in each plugin's
// order). The CNI is the flannel plugin's, which runs after this one.
package addons

import (
	"embed"
	"encoding/json"
	"strconv"

	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/versions"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/plugins/sdk/chartcache"
)

//go:embed all:charts
var charts embed.FS

// Namespace is where every release goes.
const Namespace = "kube-system"

// The controllers' nodes carry names.LabelRole=controller, so that the
// cloud controller manager runs there, and names.TaintControlPlane, which
// keeps workloads off them: their CPU and memory are the API server's and
// etcd clients'. The add-ons that belong there (the cloud controller
// manager, kube-proxy, the CNI) tolerate it; CoreDNS tolerates it too, so
// it can run before any worker has joined.

// Contribute adds the releases (and the controllers' node label and taint) to set;
// apiServer is the API server's URL for kube-proxy. workDir is where cluster.yaml is: the charts are extracted under its
// .kube-aws/cache for the helm plugin to read.
func Contribute(set *construct.Set, c *config.Cluster, r versions.Release, apiServer, plugin, workDir string) (diag.List, error) {
	dns, err := c.Kubernetes.DNSServiceIP()
	if err != nil {
		return diag.List{diag.Fatalf("%v", err).At("kubernetes.serviceCIDR")}, nil
	}
	releases := []struct {
		name   string
		values map[string]any
	}{
		{"kube-proxy", map[string]any{
			"image":       r.Image("kube-proxy"),
			"apiServer":   apiServer,
			"clusterCIDR": c.Kubernetes.PodCIDR,
		}},
		{"aws-cloud-controller-manager", map[string]any{
			"image":         r.CloudControllerManagerImage(),
			"clusterName":   c.ClusterName,
			"nodeSelector":  map[string]string{names.LabelRole: names.RoleController},
			"apiServerPort": strconv.Itoa(names.APIServerPort),
		}},
		{"coredns", map[string]any{
			"image":         r.CoreDNSImage(),
			"clusterIP":     dns.String(),
			"clusterDomain": c.Kubernetes.ClusterDomain,
		}},
	}
	for _, rel := range releases {
		path, err := chartcache.Extract(charts, "charts/"+rel.name, workDir, plugin)
		if err != nil {
			return nil, err
		}
		values, err := json.Marshal(rel.values)
		if err != nil {
			return nil, err
		}
		set.HelmReleases = append(set.HelmReleases, construct.HelmRelease{
			Name: rel.name, Namespace: Namespace, Values: values,
			Chart: construct.Chart{Path: path, Name: rel.name, Version: "0.1.0"},
		})
	}
	set.NodeLabels = append(set.NodeLabels, construct.NodeLabel{Target: construct.Target{Role: construct.Controller},
		Key: names.LabelRole, Value: names.RoleController})
	set.NodeTaints = append(set.NodeTaints, construct.NodeTaint{Target: construct.Target{Role: construct.Controller},
		Key: names.TaintControlPlane, Effect: "NoSchedule"})
	return nil, nil
}
