// Package cni is the flannel plugin's logic: flannel as the cluster's pod
// network, a Helm release from a chart written for kube-aws and embedded in
// the plugin, and flannel's image as an artifact every node installs.
//
// Why flannel (docs/design.md, "The pod network"): its vxlan backend
// carries pod traffic between nodes in UDP, so it works across subnets and
// availability zones without VPC routes or source/destination checks, and
// on the harness's local machines alike; it builds from Go modules, so an
// air-gapped artifact folder can hold it. The CNI plugins it delegates to
// (bridge, host-local, portmap, and the flannel meta plugin) are the
// kubernetes plugin's artifact.
package cni

import (
	"embed"
	"encoding/json"
	"strconv"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/plugins/sdk"
	"github.com/kube-aws/kube-aws/plugins/sdk/chartcache"
)

//go:embed all:charts
var charts embed.FS

// Plugin is the plugin's name.
const Plugin = "flannel"

// Namespace is the release's namespace.
const Namespace = "kube-flannel"

// The flannel release: the image and its pinned digest (the
// multi-architecture index, docs/upstream-pins.md).
const (
	Version = "v0.27.4"
	Image   = "ghcr.io/flannel-io/flannel:" + Version
	Digest  = "sha256:2ff3c5cb44d0e27b09f27816372084c98fa12486518ca95cb4a970f4a1a464c4"
)

// Contribute returns the flannel release and its image for every node, and
// its namespace labelled privileged for Pod Security: flannel's pods set up
// each node's pod network on the host's network, privileged, with host
// folders (upstream flannel's manifest sets the same label).
func Contribute(c *config.Cluster, workDir string) (*construct.Set, error) {
	path, err := chartcache.Extract(charts, "charts/flannel", workDir, Plugin)
	if err != nil {
		return nil, err
	}
	values, err := json.Marshal(map[string]any{
		"image": Image, "podCIDR": c.Kubernetes.PodCIDR, "backend": "vxlan",
		"apiServerHost": c.APIEndpoint.DNSName, "apiServerPort": strconv.Itoa(names.APIServerPort),
	})
	if err != nil {
		return nil, err
	}
	set := &construct.Set{HelmReleases: []construct.HelmRelease{{
		Name: "flannel", Namespace: Namespace, Values: values,
		Chart: construct.Chart{Path: path, Name: "flannel", Version: "0.1.0"},
	}}, Manifests: []construct.Manifest{{Name: "kube-flannel-namespace.yaml", Content: sdk.PrivilegedNamespace(Namespace)}}}
	for _, role := range []construct.Role{construct.Controller, construct.Worker} {
		set.Artifacts = append(set.Artifacts, construct.Artifact{
			Target: construct.Target{Role: role}, Name: "flannel", Version: Version, Kind: construct.Image, Reference: Image,
			Sources: map[string]construct.ArtifactSource{"amd64": {Digest: Digest}, "arm64": {Digest: Digest}},
		})
	}
	return set, nil
}
