// Package addons contributes the add-ons every kube-aws cluster runs as Helm
// releases, from charts written for kube-aws and embedded in the plugin:
// kube-proxy, the AWS cloud controller manager and CoreDNS, in that order
// (the helm plugin installs releases in plugin order, then in each plugin's
// order). The CNI is the flannel plugin's, which runs after this one.
//
// kube-proxy and the cloud controller manager are bound to the nodes that
// run them (docs/design.md, "Changing a running cluster"): their
// DaemonSets update OnDelete, so a node keeps the pod it booted with until
// it is replaced, and the userdata of the roles that run them carries a
// digest of each release (NodeBound), so that a change of it replaces those
// machines, and so reaches them.
package addons

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/versions"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
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

// NodeBound are the releases whose DaemonSet pods a node keeps from its
// boot to its replacement (updateStrategy OnDelete), by the roles that run
// them. Each runs an image of the Kubernetes version the node booted with:
// the one an air-gapped machine imported, and (the cloud controller
// manager, which talks to the API server on its own controller) one no
// newer than the API server beside it. A new node gets the release as it
// is then; an old one keeps its pod.
var NodeBound = map[string][]construct.Role{
	"kube-proxy":                   {construct.Controller, construct.Worker},
	"aws-cloud-controller-manager": {construct.Controller},
}

// DigestPath is the file, in the userdata of every role that runs a
// NodeBound release, holding the sha256 of the release's chart and values:
// a change of either changes the userdata, so kube-aws replaces those
// machines, and the new ones run the new release. The release's pods carry
// it too (names.AnnotationReleaseDigest), so that a controller's goal can
// tell a pod of its own release from one the DaemonSet made before its
// addons step upgraded it.
func DigestPath(release string) string { return "/etc/kube-aws/releases/" + release + ".sha256" }

// digest is the sha256 of a release's chart (its files' names and
// contents) and values (without the annotation that carries the digest).
func digest(chartHash string, values []byte) string {
	h := sha256.New()
	h.Write([]byte(chartHash + "\n"))
	h.Write(values)
	return hex.EncodeToString(h.Sum(nil))
}

// Contribute adds the releases (and the controllers' node label and taint) to set;
// apiServer is the API server's URL for kube-proxy. workDir is where cluster.yaml is: the charts are extracted under its
// .kube-aws/cache for the helm plugin to read. It returns the NodeBound
// DaemonSets the controllers run, with their releases' digests, for the
// controllers' goal: a new controller's addons step upgrades them after its
// kubelet registered, so the DaemonSet may have made its pod from the
// release before.
func Contribute(set *construct.Set, c *config.Cluster, r versions.Release, apiServer, plugin, workDir string) ([]nodeplan.NodeDaemonSet, diag.List, error) {
	dns, err := c.Kubernetes.DNSServiceIP()
	if err != nil {
		return nil, diag.List{diag.Fatalf("%v", err).At("kubernetes.serviceCIDR")}, nil
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
	var controllers []nodeplan.NodeDaemonSet
	for _, rel := range releases {
		path, err := chartcache.Extract(charts, "charts/"+rel.name, workDir, plugin)
		if err != nil {
			return nil, nil, err
		}
		values, err := json.Marshal(rel.values)
		if err != nil {
			return nil, nil, err
		}
		if roles := NodeBound[rel.name]; roles != nil {
			chart, err := chartcache.Hash(charts, "charts/"+rel.name)
			if err != nil {
				return nil, nil, err
			}
			sum := digest(chart, values)
			for _, role := range roles {
				set.Files = append(set.Files, construct.File{Target: construct.Target{Role: role}, Path: DigestPath(rel.name), Mode: "0644", Content: sum + "\n"})
				if role == construct.Controller {
					// The chart names its DaemonSet as the release.
					controllers = append(controllers, nodeplan.NodeDaemonSet{Namespace: Namespace, Name: rel.name, Digest: sum})
				}
			}
			// Its pods carry the digest, which a node compares with its
			// own: the values the digest is of, and this annotation.
			rel.values["podAnnotations"] = map[string]string{names.AnnotationReleaseDigest: sum}
			if values, err = json.Marshal(rel.values); err != nil {
				return nil, nil, err
			}
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
	return controllers, nil, nil
}
