package cni

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/builtin/internal/charttest"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/merge"
)

func TestContribute(t *testing.T) {
	c := &config.Cluster{Kubernetes: config.Kubernetes{PodCIDR: "10.244.0.0/16", ServiceCIDR: "10.3.0.0/24"},
		APIEndpoint: config.APIEndpoint{DNSName: "k8s.example.com"}}
	set, err := Contribute(c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, diags := merge.Merge([]merge.Contribution{{Plugin: Plugin, Set: set}}); len(diags) != 0 {
		t.Fatalf("the merge refuses the contribution: %s", diags.Error())
	}
	if len(set.HelmReleases) != 1 || len(set.Artifacts) != 2 {
		t.Fatalf("constructs %+v", set)
	}
	objs := charttest.Render(t, set.HelmReleases[0])
	var cm corev1.ConfigMap
	objs.Decode(t, "ConfigMap/kube-flannel-cfg", &cm)
	var net struct {
		Network string
		Backend struct{ Type string }
	}
	if err := json.Unmarshal([]byte(cm.Data["net-conf.json"]), &net); err != nil || net.Network != "10.244.0.0/16" || net.Backend.Type != "vxlan" {
		t.Errorf("net-conf.json %+v (%v): want the cluster's pod network and vxlan", net, err)
	}
	var cniConf struct {
		CNIVersion string
		Plugins    []struct{ Type string }
	}
	if err := json.Unmarshal([]byte(cm.Data["cni-conf.json"]), &cniConf); err != nil || len(cniConf.Plugins) != 2 ||
		cniConf.Plugins[0].Type != "flannel" || cniConf.Plugins[1].Type != "portmap" {
		t.Errorf("cni-conf.json %+v (%v)", cniConf, err)
	}
	var ds appsv1.DaemonSet
	objs.Decode(t, "DaemonSet/kube-flannel-ds", &ds)
	spec := ds.Spec.Template.Spec
	if !spec.HostNetwork || spec.Containers[0].Image != Image || !strings.Contains(strings.Join(spec.Containers[0].Args, " "), "--kube-subnet-mgr") ||
		spec.InitContainers[0].Command[0] != "cp" {
		t.Errorf("daemon set %+v", spec)
	}
	// flanneld reaches the API server through the cluster's endpoint, not
	// the kubernetes Service, which needs kube-proxy's rules on the node.
	env := map[string]string{}
	for _, e := range spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["KUBERNETES_SERVICE_HOST"] != "k8s.example.com" || env["KUBERNETES_SERVICE_PORT"] != "443" {
		t.Errorf("flanneld's API server is %s:%s, want the API endpoint k8s.example.com:443", env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"])
	}
	// The namespace is labelled for Pod Security: flannel's pods are
	// privileged on the host's network, which baseline refuses.
	if len(set.Manifests) != 1 {
		t.Fatalf("manifests %+v: want the namespace's", set.Manifests)
	}
	var ns corev1.Namespace
	if err := yaml.UnmarshalStrict([]byte(set.Manifests[0].Content), &ns); err != nil {
		t.Fatal(err)
	}
	if ns.Kind != "Namespace" || ns.Name != Namespace || ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("namespace manifest %+v: want %s labelled pod-security.kubernetes.io/enforce=privileged", ns, Namespace)
	}
	if sc := spec.Containers[0].SecurityContext; sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Add) == 0 {
		t.Errorf("flannel's container adds no capabilities: the label may be needless")
	}
	for _, a := range set.Artifacts {
		if a.Reference != Image || a.Kind != construct.Image || len(a.Sources) != 2 {
			t.Errorf("artifact %+v: want the image for amd64 and arm64", a)
		}
	}
}
