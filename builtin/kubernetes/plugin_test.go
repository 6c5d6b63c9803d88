package kubernetes

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/node"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the plugin's constructs")

func TestMain(m *testing.M) { plugintest.Main(m) }

// clusterJSON is a cluster as kube-aws hands it to plugins: defaults filled.
const clusterJSON = `{"clusterName":"demo","region":"us-east-1","kubernetesVersion":"1.34.4","s3URI":"s3://demo-bucket/clusters/demo",
 "kubernetes":{"podCIDR":"10.2.0.0/16","serviceCIDR":"10.3.0.0/24","clusterDomain":"cluster.local"},
 "etcd":{"count":3},"apiEndpoint":{"dnsName":"k8s.demo.example.com"},"nodePools":[{"name":"general","instanceType":"t3.large"}]}`

func initialise(t *testing.T, config string) *stage.Result {
	t.Helper()
	bin := builtintest.Path(t, "kubernetes")
	out := plugintest.Run(t, bin, &stage.Input{Config: json.RawMessage(config), WorkDir: t.TempDir()}, stage.Initialise)
	return out.Results[stage.Initialise]
}

// goldenName is a file construct's golden file: <target>/<path with / as _>.
func goldenName(f construct.File) string {
	return filepath.Join("testdata", "golden", strings.ReplaceAll(f.Target.String(), "/", "_"),
		strings.ReplaceAll(strings.TrimPrefix(f.Path, "/"), "/", "_"))
}

// TestPluginBinaryGolden runs the built plugin's initialise over the
// protocol and compares every file it contributes with testdata/golden
// (go test -update rewrites them).
func TestPluginBinaryGolden(t *testing.T) {
	res := initialise(t, clusterJSON)
	if len(res.Diagnostics) != 0 || res.Constructs == nil {
		t.Fatalf("initialise: %v", res.Diagnostics)
	}
	set := res.Constructs
	seen := map[string]bool{}
	for _, f := range set.Files {
		if f.Path == names.KubeconfigBootstrapKubelet {
			// It names the bootstrap token's id, made anew for every
			// cluster (checked in TestPluginBinaryConstructs).
			continue
		}
		name := goldenName(f)
		seen[name] = true
		if *update {
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(name, []byte(f.Content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%v (go test -update creates it)", err)
		}
		if string(want) != f.Content {
			t.Errorf("%s for %s differs from %s (go test -update rewrites it):\n%s", f.Path, f.Target, name, f.Content)
		}
	}
	// No golden file is left over from a file the plugin no longer writes.
	err := filepath.Walk(filepath.Join("testdata", "golden"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !seen[p] {
			t.Errorf("%s: no file construct writes it any more; delete it", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPluginBinaryConstructs checks what the machines get beyond the files'
// bytes: every plan file decodes as its plan, units are enabled, kubelet
// flags by role.
func TestPluginBinaryConstructs(t *testing.T) {
	set := initialise(t, clusterJSON).Constructs
	plans := map[string]func() nodeplan.Plan{
		nodeplan.GoalPath:               func() nodeplan.Plan { return &nodeplan.GoalPlan{} },
		nodeplan.ApproverPath:           func() nodeplan.Plan { return &nodeplan.ApproverPlan{} },
		nodeplan.DrainerPath:            func() nodeplan.Plan { return &nodeplan.DrainerPlan{} },
		nodeplan.PodIdentityWebhookPath: func() nodeplan.Plan { return &nodeplan.PodIdentityWebhookPlan{} },
	}
	byRole := map[string]map[string]bool{}
	for _, f := range set.Files {
		if byRole[f.Target.String()] == nil {
			byRole[f.Target.String()] = map[string]bool{}
		}
		byRole[f.Target.String()][f.Path] = true
		if mk, ok := plans[f.Path]; ok {
			if err := nodeplan.Decode([]byte(f.Content), mk()); err != nil {
				t.Errorf("%s for %s: %v", f.Path, f.Target, err)
			}
		}
	}
	for role, paths := range map[string][]string{
		"controller": {nodeplan.GoalPath, nodeplan.ApproverPath, nodeplan.DrainerPath, nodeplan.PodIdentityWebhookPath, "/etc/containerd/config.toml", "/var/lib/kubelet/config.yaml",
			"/etc/kubernetes/manifests/kube-controller-manager.yaml", "/etc/kubernetes/manifests/kube-scheduler.yaml",
			"/etc/kube-aws/releases/kube-proxy.sha256", "/etc/kube-aws/releases/aws-cloud-controller-manager.sha256"},
		"worker": {nodeplan.GoalPath, "/etc/containerd/config.toml", "/var/lib/kubelet/config.yaml", "/etc/kube-aws/releases/kube-proxy.sha256"},
	} {
		for _, p := range paths {
			if !byRole[role][p] {
				t.Errorf("%s gets no %s", role, p)
			}
		}
	}
	if byRole["worker"][nodeplan.ApproverPath] || byRole["worker"][nodeplan.DrainerPath] || byRole["worker"][nodeplan.PodIdentityWebhookPath] || byRole["worker"]["/etc/kube-aws/releases/aws-cloud-controller-manager.sha256"] || byRole["etcd"] != nil {
		t.Errorf("files for roles that must not get them: %v", byRole)
	}
	flags := map[string]string{}
	for _, f := range set.KubeletFlags {
		flags[f.Target.String()+" --"+f.Name] = f.Value
	}
	for k, want := range map[string]string{
		"controller --cloud-provider":   "external",
		"worker --cloud-provider":       "external",
		"worker --bootstrap-kubeconfig": "/etc/kubernetes/bootstrap-kubelet.conf",
		"controller --kubeconfig":       "/etc/kubernetes/kubelet.conf",
		"worker --config":               "/var/lib/kubelet/config.yaml",
	} {
		if flags[k] != want {
			t.Errorf("%s = %q, want %q", k, flags[k], want)
		}
	}
	for _, f := range set.Files {
		if f.Path == names.KubeconfigBootstrapKubelet &&
			(f.Target.String() != "worker" || !strings.Contains(f.Content, ".((secret:kubernetes/generated/bootstrap-token-secret))")) {
			t.Errorf("bootstrap kubeconfig for %s:\n%s", f.Target, f.Content)
		}
		if f.Path == "/etc/kubernetes/encryption-config.yaml" && !strings.Contains(f.Content, "secret: ((secret:kubernetes/generated/encryption-key))") {
			t.Errorf("encryption configuration:\n%s", f.Content)
		}
	}
	if len(set.Manifests) != 2 || !strings.Contains(set.Manifests[1].Content, "token-secret: ((secret:kubernetes/generated/bootstrap-token-secret))") {
		t.Errorf("manifests %+v", set.Manifests)
	}
	if fl := set.APIServer.Flags; len(fl) != 1 || fl[0].Name != "encryption-provider-config" {
		t.Errorf("API server flags %+v", fl)
	}
	if _, ok := flags["controller --bootstrap-kubeconfig"]; ok {
		t.Error("controllers hold a kubelet kubeconfig; they must not bootstrap")
	}
	units := map[string]bool{}
	for _, u := range set.Units {
		if u.Content != "" && !u.Enable {
			t.Errorf("unit %s for %s is not enabled", u.Name, u.Target)
		}
		units[u.Target.String()+" "+u.Name] = true
	}
	if !units["controller kube-aws-drainer.service"] || units["worker kube-aws-drainer.service"] {
		t.Errorf("units %v: the controllers run the drainer, nothing else does", units)
	}
	if !units["controller kube-aws-pod-identity-webhook.service"] || units["worker kube-aws-pod-identity-webhook.service"] {
		t.Errorf("units %v: the controllers run the pod identity webhook, nothing else does", units)
	}
	sids := map[string]string{}
	for _, st := range set.IAM {
		sids[st.Sid] = st.Target.String()
	}
	for _, sid := range []string{"KubeAwsDrainerFind", "KubeAwsDrainerHook", "KubeAwsDrainerStatus"} {
		if sids[sid] != "controller" {
			t.Errorf("IAM statement %s for %q, want the controllers (all: %v)", sid, sids[sid], sids)
		}
	}
}

// TestPluginBinaryRefusesUnpinnedVersion: a Kubernetes version whose
// binaries and images kube-aws does not pin is fatal at initialise, naming
// the supported versions, and contributes nothing.
func TestPluginBinaryRefusesUnpinnedVersion(t *testing.T) {
	for _, v := range []string{"1.31.4", "1.34.3", "1.33.12", "1.35.0"} {
		res := initialise(t, strings.Replace(clusterJSON, `"1.34.4"`, `"`+v+`"`, 1))
		d := res.Diagnostics
		if len(d) != 1 || d[0].Severity != diag.Fatal || d[0].Path != "kubernetesVersion" ||
			d[0].Plugin != "kubernetes" || d[0].Stage != "initialise" ||
			!strings.Contains(d[0].Message, v) || !strings.Contains(d[0].Message, "supported: 1.33.13, 1.34.4") {
			t.Errorf("%s: %v; want one fatal at kubernetesVersion naming %s and the supported versions", v, d, v)
		}
		if !res.Constructs.IsEmpty() {
			t.Errorf("%s: a refused version contributes nothing", v)
		}
	}
}

// TestPluginBinaryReleases: the add-ons, in install order, with charts
// the helm plugin can read, and a fatal when kube-proxy could not reach the
// API server.
func TestPluginBinaryReleases(t *testing.T) {
	set := initialise(t, clusterJSON).Constructs
	var got []string
	for _, r := range set.HelmReleases {
		got = append(got, r.Namespace+"/"+r.Name)
		if _, err := os.Stat(filepath.Join(r.Chart.Path, "Chart.yaml")); err != nil {
			t.Errorf("release %s: chart %v", r.Name, err)
		}
	}
	if strings.Join(got, " ") != "kube-system/kube-proxy kube-system/aws-cloud-controller-manager kube-system/coredns" {
		t.Errorf("releases %v", got)
	}
	res := initialise(t, strings.Replace(clusterJSON, `"apiEndpoint":{"dnsName":"k8s.demo.example.com"},`, "", 1))
	if d := res.Diagnostics; len(d) != 1 || d[0].Path != "apiEndpoint.dnsName" || d[0].Severity != diag.Fatal || !res.Constructs.IsEmpty() {
		t.Errorf("without apiEndpoint.dnsName: %v", d)
	}
}

// TestPluginBinaryFilesDecodeAsTheirTypes decodes the kubelet's
// configuration and the static pods strictly into Kubernetes' own types: a
// misspelt field fails here rather than on a machine.
func TestPluginBinaryFilesDecodeAsTheirTypes(t *testing.T) {
	set := initialise(t, clusterJSON).Constructs
	n := 0
	for _, f := range set.Files {
		var into any
		switch {
		case f.Path == node.KubeletConfigPath:
			into = &kubeletv1beta1.KubeletConfiguration{}
		case strings.HasPrefix(f.Path, node.StaticPodDir+"/"):
			into = &corev1.Pod{}
		default:
			continue
		}
		n++
		if err := yaml.UnmarshalStrict([]byte(f.Content), into); err != nil {
			t.Errorf("%s for %s: %v", f.Path, f.Target, err)
		}
	}
	if n != 4 {
		t.Errorf("decoded %d files, want the kubelet configuration of both roles and two static pods", n)
	}
}
