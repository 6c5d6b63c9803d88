package addons

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/klog/v2"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/builtin/internal/charttest"
	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/versions"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

func cluster() *config.Cluster {
	return &config.Cluster{ClusterName: "demo", APIEndpoint: config.APIEndpoint{DNSName: "k8s.demo.example.com"},
		Kubernetes: config.Kubernetes{PodCIDR: "10.2.0.0/16", ServiceCIDR: "10.3.0.0/24", ClusterDomain: "cluster.local"}}
}

func render(t *testing.T) map[string]charttest.Objects {
	t.Helper()
	r, _ := versions.For("1.34.4")
	var set construct.Set
	if _, d, err := Contribute(&set, cluster(), r, "https://k8s.demo.example.com:443", "kubernetes", t.TempDir()); err != nil || len(d) != 0 {
		t.Fatal(d, err)
	}
	out := map[string]charttest.Objects{}
	for _, rel := range set.HelmReleases {
		out[rel.Name] = charttest.Render(t, rel)
	}
	return out
}

func TestCharts(t *testing.T) {
	objs := render(t)
	for rel, want := range map[string][]string{
		"kube-proxy":                   {"ServiceAccount/kube-proxy", "ClusterRoleBinding/kube-aws:kube-proxy", "ConfigMap/kube-proxy", "DaemonSet/kube-proxy"},
		"coredns":                      {"ServiceAccount/coredns", "ClusterRole/kube-aws:coredns", "ClusterRoleBinding/kube-aws:coredns", "ConfigMap/coredns", "Deployment/coredns", "Service/kube-dns"},
		"aws-cloud-controller-manager": {"ServiceAccount/cloud-controller-manager", "ClusterRole/kube-aws:cloud-controller-manager", "ClusterRoleBinding/kube-aws:cloud-controller-manager", "RoleBinding/kube-aws:cloud-controller-manager:apiserver-authentication-reader", "ConfigMap/aws-cloud-config", "DaemonSet/aws-cloud-controller-manager"},
	} {
		if len(objs[rel]) != len(want) {
			t.Errorf("%s renders %d objects, want %d", rel, len(objs[rel]), len(want))
		}
		for _, w := range want {
			if objs[rel][w] == nil {
				t.Errorf("%s renders no %s", rel, w)
			}
		}
	}

	var proxy appsv1.DaemonSet
	objs["kube-proxy"].Decode(t, "DaemonSet/kube-proxy", &proxy)
	c := proxy.Spec.Template.Spec.Containers[0]
	if !proxy.Spec.Template.Spec.HostNetwork || c.Image != "registry.k8s.io/kube-proxy:v1.34.4" || c.Command[0] != "/usr/local/bin/kube-proxy" {
		t.Errorf("kube-proxy: hostNetwork %v, image %s, command %v (the image has no entrypoint)", proxy.Spec.Template.Spec.HostNetwork, c.Image, c.Command)
	}
	var cm corev1.ConfigMap
	objs["kube-proxy"].Decode(t, "ConfigMap/kube-proxy", &cm)
	for _, want := range []string{"maxPerCore: 0", `clusterCIDR: "10.2.0.0/16"`, "mode: iptables"} {
		if !strings.Contains(cm.Data["config.conf"], want) {
			t.Errorf("kube-proxy configuration lacks %q:\n%s", want, cm.Data["config.conf"])
		}
	}
	var kp kubeproxyv1alpha1.KubeProxyConfiguration
	if err := yaml.UnmarshalStrict([]byte(cm.Data["config.conf"]), &kp); err != nil || kp.Conntrack.MaxPerCore == nil || *kp.Conntrack.MaxPerCore != 0 {
		t.Errorf("kube-proxy configuration as kube-proxy's type: %+v, %v", kp.Conntrack, err)
	}
	if !strings.Contains(cm.Data["kubeconfig.conf"], `server: "https://k8s.demo.example.com:443"`) {
		t.Errorf("kube-proxy kubeconfig:\n%s", cm.Data["kubeconfig.conf"])
	}

	var svc corev1.Service
	objs["coredns"].Decode(t, "Service/kube-dns", &svc)
	if svc.Spec.ClusterIP != "10.3.0.10" {
		t.Errorf("kube-dns at %s, want the tenth address of the service network", svc.Spec.ClusterIP)
	}
	var dns appsv1.Deployment
	objs["coredns"].Decode(t, "Deployment/coredns", &dns)
	if img := dns.Spec.Template.Spec.Containers[0].Image; img != "registry.k8s.io/coredns/coredns:v1.12.1" {
		t.Errorf("coredns image %s", img)
	}
	objs["coredns"].Decode(t, "ConfigMap/coredns", &cm)
	if !strings.Contains(cm.Data["Corefile"], "kubernetes cluster.local in-addr.arpa ip6.arpa") {
		t.Errorf("Corefile:\n%s", cm.Data["Corefile"])
	}

	var ccm appsv1.DaemonSet
	objs["aws-cloud-controller-manager"].Decode(t, "DaemonSet/aws-cloud-controller-manager", &ccm)
	spec := ccm.Spec.Template.Spec
	c = spec.Containers[0]
	if !spec.HostNetwork || spec.NodeSelector[names.LabelRole] != names.RoleController {
		t.Errorf("ccm: hostNetwork %v, nodeSelector %v", spec.HostNetwork, spec.NodeSelector)
	}
	args := strings.Join(c.Command, " ")
	for _, want := range []string{"/bin/aws-cloud-controller-manager", "--cloud-provider=aws", "--configure-cloud-routes=false", "--cloud-config=/etc/kubernetes/cloud/cloud.conf"} {
		if !strings.Contains(args, want) {
			t.Errorf("ccm command %q lacks %s", args, want)
		}
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef.Name != "kube-aws-aws-env" || c.EnvFrom[0].ConfigMapRef.Optional == nil || !*c.EnvFrom[0].ConfigMapRef.Optional {
		t.Errorf("ccm envFrom %+v, want the optional ConfigMap kube-aws-aws-env", c.EnvFrom)
	}
	tolerated := map[string]bool{}
	for _, tol := range spec.Tolerations {
		tolerated[tol.Key] = true
	}
	if !tolerated["node.cloudprovider.kubernetes.io/uninitialized"] || !tolerated["node.kubernetes.io/not-ready"] {
		t.Errorf("ccm tolerations %v", spec.Tolerations)
	}
	objs["aws-cloud-controller-manager"].Decode(t, "ConfigMap/aws-cloud-config", &cm)
	if !strings.Contains(cm.Data["cloud.conf"], "KubernetesClusterID = demo") {
		t.Errorf("cloud.conf:\n%s", cm.Data["cloud.conf"])
	}
	var role rbacv1.ClusterRole
	objs["aws-cloud-controller-manager"].Decode(t, "ClusterRole/kube-aws:cloud-controller-manager", &role)
}

// TestChartsAreStable: a second extraction gives the same chart folder, so
// renders stay byte-identical.
func TestChartsAreStable(t *testing.T) {
	r, _ := versions.For("1.34.4")
	dir := t.TempDir()
	var a, b construct.Set
	if _, _, err := Contribute(&a, cluster(), r, "https://k8s.demo.example.com:443", "kubernetes", dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Contribute(&b, cluster(), r, "https://k8s.demo.example.com:443", "kubernetes", dir); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("two runs differ:\n%s\n%s", ja, jb)
	}
}

// The controllers are tainted as kubeadm's control-plane nodes are, and the
// add-ons that must run there tolerate the taint.
func TestControllersAreTaintedAndTheirAddonsTolerateIt(t *testing.T) {
	r, _ := versions.For("1.34.4")
	var set construct.Set
	if _, d, err := Contribute(&set, cluster(), r, "https://k8s.demo.example.com:443", "kubernetes", t.TempDir()); err != nil || len(d) != 0 {
		t.Fatal(d, err)
	}
	want := construct.NodeTaint{Target: construct.Target{Role: construct.Controller}, Key: names.TaintControlPlane, Effect: "NoSchedule"}
	if len(set.NodeTaints) != 1 || set.NodeTaints[0] != want {
		t.Fatalf("taints %+v, want %+v", set.NodeTaints, want)
	}
	taint := corev1.Taint{Key: names.TaintControlPlane, Effect: corev1.TaintEffectNoSchedule}
	objs := render(t)
	for _, w := range []struct{ release, object string }{
		{"aws-cloud-controller-manager", "DaemonSet/aws-cloud-controller-manager"},
		{"kube-proxy", "DaemonSet/kube-proxy"},
		{"coredns", "Deployment/coredns"},
	} {
		var spec corev1.PodSpec
		if strings.HasPrefix(w.object, "DaemonSet/") {
			var ds appsv1.DaemonSet
			objs[w.release].Decode(t, w.object, &ds)
			spec = ds.Spec.Template.Spec
		} else {
			var d appsv1.Deployment
			objs[w.release].Decode(t, w.object, &d)
			spec = d.Spec.Template.Spec
		}
		tolerated := false
		for _, tol := range spec.Tolerations {
			tolerated = tolerated || tol.ToleratesTaint(klog.Background(), &taint, false)
		}
		if !tolerated {
			t.Errorf("%s does not tolerate %s:NoSchedule (tolerations %+v)", w.object, names.TaintControlPlane, spec.Tolerations)
		}
	}
}

// A node keeps the kube-proxy (and a controller the cloud controller
// manager) it booted with: every DaemonSet of the plugin updates OnDelete
// exactly when its release is NodeBound, and the roles that run it carry
// the release's digest in their userdata, which changes with its values.
func TestNodeBoundReleases(t *testing.T) {
	objs := render(t)
	for rel, o := range objs {
		for _, key := range o.Keys() {
			if !strings.HasPrefix(key, "DaemonSet/") {
				continue
			}
			var ds appsv1.DaemonSet
			o.Decode(t, key, &ds)
			onDelete := ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType
			if _, bound := NodeBound[rel]; onDelete != bound {
				t.Errorf("%s of release %s: updateStrategy %s, NodeBound %v", key, rel, ds.Spec.UpdateStrategy.Type, bound)
			}
		}
	}

	r, _ := versions.For("1.34.4")
	var bound []nodeplan.NodeDaemonSet
	digests := func(c *config.Cluster) map[string]string {
		var set construct.Set
		var d diag.List
		var err error
		if bound, d, err = Contribute(&set, c, r, "https://k8s.demo.example.com:443", "kubernetes", t.TempDir()); err != nil || len(d) != 0 {
			t.Fatal(d, err)
		}
		out := map[string]string{}
		for _, f := range set.Files {
			out[f.Target.String()+" "+f.Path] = f.Content
		}
		return out
	}
	got := digests(cluster())
	want := []string{
		"controller /etc/kube-aws/releases/kube-proxy.sha256",
		"worker /etc/kube-aws/releases/kube-proxy.sha256",
		"controller /etc/kube-aws/releases/aws-cloud-controller-manager.sha256",
	}
	if len(got) != len(want) {
		t.Errorf("files %v, want %v", got, want)
	}
	for _, w := range want {
		if !regexp.MustCompile(`^[0-9a-f]{64}\n$`).MatchString(got[w]) {
			t.Errorf("%s: %q is not a sha256 line", w, got[w])
		}
	}
	if got[want[0]] != got[want[1]] || got[want[0]] == got[want[2]] {
		t.Errorf("one release, one digest on every role; two releases, two: %v", got)
	}
	// The controllers' goal waits for their pods of both; the pods carry
	// the digest their node's userdata names.
	wantBound := []nodeplan.NodeDaemonSet{
		{Namespace: "kube-system", Name: "kube-proxy", Digest: strings.TrimSpace(got[want[0]])},
		{Namespace: "kube-system", Name: "aws-cloud-controller-manager", Digest: strings.TrimSpace(got[want[2]])},
	}
	if !slices.Equal(bound, wantBound) {
		t.Errorf("controllers' DaemonSets %+v, want %+v", bound, wantBound)
	}
	for _, b := range wantBound {
		var ds appsv1.DaemonSet
		objs[b.Name].Decode(t, "DaemonSet/"+b.Name, &ds)
		if a := ds.Spec.Template.Annotations; a[names.AnnotationReleaseDigest] != b.Digest || a["checksum/config"] == "" {
			t.Errorf("%s's pods are annotated %v, want %s = %s and the configuration's checksum", b.Name, a, names.AnnotationReleaseDigest, b.Digest)
		}
	}
	// kube-proxy's values change (the pod network), CoreDNS's do not count.
	other := cluster()
	other.Kubernetes.PodCIDR = "10.5.0.0/16"
	changed := digests(other)
	if changed[want[0]] == got[want[0]] || changed[want[2]] != got[want[2]] {
		t.Errorf("a kube-proxy change must change its digest, and only its: %v then %v", got, changed)
	}
	other = cluster()
	other.Kubernetes.ClusterDomain = "example.internal"
	if d := digests(other); d[want[0]] != got[want[0]] || d[want[2]] != got[want[2]] {
		t.Errorf("a CoreDNS change changed a node-bound digest: %v then %v", got, d)
	}
	if digest("a", []byte("{}")) == digest("b", []byte("{}")) {
		t.Error("a chart change does not change the digest")
	}
}

// CoreDNS is a Deployment whose pods may run on any node, old or new,
// during an upgrade; an air-gapped node has only its own version's images.
// So every supported Kubernetes version runs the same CoreDNS image: a
// version that needs another makes this test fail, and docs/design.md
// ("Changing a running cluster") says what to do then.
func TestCoreDNSIsOneImageForEveryVersion(t *testing.T) {
	images := map[string][]string{}
	for _, v := range versions.Supported() {
		r, d := versions.For(v)
		if len(d) != 0 {
			t.Fatal(d)
		}
		images[r.CoreDNSImage()] = append(images[r.CoreDNSImage()], v)
	}
	if len(images) != 1 {
		t.Errorf("CoreDNS images by Kubernetes version: %v; want one image for all", images)
	}
}
