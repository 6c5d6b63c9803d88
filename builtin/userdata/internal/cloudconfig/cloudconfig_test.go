package cloudconfig

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/core/stage"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

var (
	controller = construct.Target{Role: construct.Controller}
	etcd       = construct.Target{Role: construct.Etcd}
	workers    = construct.Target{Role: construct.Worker}
	gpu        = construct.Target{Role: construct.Worker, NodePool: "gpu"}
)

func fixtureCluster() *config.Cluster {
	return &config.Cluster{
		ClusterName:       "demo",
		KubernetesVersion: "v1.31.4",
		NodePools: []config.NodePool{
			{Name: "general", Labels: map[string]string{"team": "a", "kube-aws.io/pool": "general"}},
			{Name: "gpu", Taints: []config.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: "NoSchedule"}}},
		},
	}
}

const helmUnit = `[Unit]
Description=Install Helm releases
After=network-online.target

[Service]
Type=oneshot
ExecStart=/opt/kube-aws/bin/helm-install

[Install]
WantedBy=multi-user.target
`

func fixtureSet() *construct.Set {
	return &construct.Set{
		Units: []construct.Unit{
			{Target: controller, Name: "kube-aws-helm-install.service", Enable: true, Content: helmUnit},
			{Target: etcd, Name: "etcd-member.service", Enable: true, Content: "[Service]\nExecStart=/usr/bin/etcd\n\n[Install]\nWantedBy=multi-user.target\n"},
			{Target: workers, Name: "node-exporter.service", Enable: true, Content: "[Service]\nExecStart=/opt/bin/node_exporter\n\n[Install]\nWantedBy=multi-user.target\n"},
			{Target: workers, Name: "containerd.service", DropIns: []construct.DropIn{{Name: "10-kube-aws", Content: "[Service]\nLimitNOFILE=1048576\n"}}},
			{Target: gpu, Name: "nvidia-persistenced.service", Enable: true, Content: "[Service]\nExecStart=/usr/bin/nvidia-persistenced\n\n[Install]\nWantedBy=multi-user.target\n",
				DropIns: []construct.DropIn{{Name: "20-restart.conf", Content: "[Service]\nRestart=always\n"}}},
		},
		Files: []construct.File{
			{Target: controller, Path: "/etc/dex/client-secret", Sensitive: true, Content: "((secret:dex/clientSecret))"},
			{Target: controller, Path: "/etc/dex/config.yaml", Format: "yaml", Content: "issuer: https://dex.example.com\nclientSecret: ((secret:dex/clientSecret))\n"},
			{Target: workers, Path: "/etc/sysctl.d/90-kube-aws.conf", Mode: "0644", Content: "vm.max_map_count = 262144\n"},
			{Target: gpu, Path: "/etc/modules-load.d/nvidia.conf", Content: "nvidia\n"},
		},
		APIServer: construct.APIServer{
			Flags: []construct.Flag{
				{Name: "secure-port", Value: "443"},
				{Name: "authorization-mode", Value: "Node,RBAC"},
				{Name: "etcd-servers", Value: "https://etcd0.demo.internal:2379"},
				{Name: "oidc-issuer-url", Value: "https://dex.example.com"},
			},
			Volumes: []construct.Volume{{Name: "k8s-certs", HostPath: "/etc/kubernetes/pki", MountPath: "/etc/kubernetes/pki", ReadOnly: true}},
		},
		KubeletFlags: []construct.TargetedFlag{
			{Target: gpu, Flag: construct.Flag{Name: "max-pods", Value: "50"}},
			{Target: workers, Flag: construct.Flag{Name: "max-pods", Value: "110"}},
			{Target: workers, Flag: construct.Flag{Name: "feature-gates", Value: "A=true"}},
			{Target: gpu, Flag: construct.Flag{Name: "feature-gates", Value: "B=true,A=true"}},
			{Target: controller, Flag: construct.Flag{Name: "max-pods", Value: "30"}},
		},
		NodeLabels: []construct.NodeLabel{
			{Target: workers, Key: "kube-aws.io/role", Value: "worker"},
			{Target: gpu, Key: "accelerator", Value: "nvidia"},
		},
		NodeTaints: []construct.NodeTaint{{Target: controller, Key: "node-role.kube-aws.io/controller", Effect: "NoSchedule"}},
		Manifests:  []construct.Manifest{{Name: "dex-namespace", Content: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: dex\n"}},
		HelmReleases: []construct.HelmRelease{{Name: "dex", Namespace: "dex", Chart: construct.Chart{Path: "/charts/dex"},
			Values: json.RawMessage(`{"config":{"clientSecret":"((secret:dex/clientSecret))"}}`)}},
	}
}

func render(t *testing.T, c *config.Cluster, set *construct.Set) ([]stage.File, diag.List) {
	t.Helper()
	files, diags, err := Render(c, set)
	if err != nil {
		t.Fatal(err)
	}
	return files, diags
}

func TestGolden(t *testing.T) {
	files, diags := render(t, fixtureCluster(), fixtureSet())
	if len(diags) != 0 {
		t.Fatalf("diagnostics: %v", diags)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Path)
		// The golden files sit at the plugin's root, where a reader of the plugin looks.
		golden := filepath.Join("..", "..", "testdata", "golden", filepath.Base(f.Path))
		if *update {
			if err := os.WriteFile(golden, f.Content, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if !bytes.Equal(f.Content, want) {
			t.Errorf("%s differs from %s (go test -update rewrites it):\n%s", f.Path, golden, f.Content)
		}
	}
	want := "userdata/controller.yaml userdata/etcd.yaml userdata/nodepool-general.yaml userdata/nodepool-gpu.yaml"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("rendered %s, want %s", got, want)
	}
}

// TestDocuments reads every rendered document back and checks what each
// machine gets, so the golden files are not the only line of defence.
func TestDocuments(t *testing.T) {
	files, _ := render(t, fixtureCluster(), fixtureSet())
	docs := map[string]document{}
	for _, f := range files {
		if !bytes.HasPrefix(f.Content, []byte("#cloud-config\n")) {
			t.Fatalf("%s does not start with #cloud-config", f.Path)
		}
		var d document
		if err := yaml.UnmarshalStrict(f.Content, &d); err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		docs[strings.TrimSuffix(filepath.Base(f.Path), ".yaml")] = d
	}
	file := func(doc, path string) *writeFile {
		for i := range docs[doc].WriteFiles {
			if docs[doc].WriteFiles[i].Path == path {
				return &docs[doc].WriteFiles[i]
			}
		}
		return nil
	}
	tests := []struct {
		doc, path string
		want      bool
		contains  string
	}{
		{"controller", "/etc/kubernetes/manifests/kube-apiserver.yaml", true, "--oidc-issuer-url=https://dex.example.com"},
		{"controller", "/etc/kubernetes/addons/dex-namespace.yaml", true, "name: dex"},
		{"controller", "/etc/systemd/system/kube-aws-helm-install.service", true, "ExecStart=/opt/kube-aws/bin/helm-install"},
		{"controller", KubeletEnvPath, true, "--pod-manifest-path=/etc/kubernetes/manifests"},
		{"controller", KubeletEnvPath, true, "--register-with-taints=node-role.kube-aws.io/controller:NoSchedule"},
		// The add-ons plan names the helm plugin's release list by the fact
		// the bootstrap passes, and lists every manifest.
		{"controller", nodeplan.AddonsPath, true, `"releasesFrom": "{addonsKey}"`},
		{"controller", nodeplan.AddonsPath, true, `"path": "/etc/kubernetes/addons/dex-namespace.yaml"`},
		{"controller", nodeplan.AddonsPath, true, `"kubeconfig": "/etc/kubernetes/admin.conf"`},
		{"nodepool-general", nodeplan.AddonsPath, false, ""},
		// Not charts/releases.json, though the dex release's values hold a
		// marker: the addons step fetches it and decrypts its markers itself.
		{"controller", nodeplan.SecretsPath, true, `{
  "files": [
    {
      "path": "/etc/dex/client-secret",
      "format": "whole"
    },
    {
      "path": "/etc/dex/config.yaml",
      "format": "yaml"
    }
  ]
}`},
		{"etcd", "/etc/kubernetes/manifests/kube-apiserver.yaml", false, ""},
		{"etcd", KubeletEnvPath, false, ""}, // nothing targets an etcd kubelet
		{"etcd", "/etc/systemd/system/etcd-member.service", true, "/usr/bin/etcd"},
		{"nodepool-general", "/etc/systemd/system/node-exporter.service", true, "node_exporter"},
		{"nodepool-general", "/etc/systemd/system/containerd.service.d/10-kube-aws.conf", true, "LimitNOFILE"},
		{"nodepool-general", "/etc/systemd/system/nvidia-persistenced.service", false, ""},
		{"nodepool-general", KubeletEnvPath, true, `KUBELET_ARGS="--feature-gates=A=true --max-pods=110 --node-labels=kube-aws.io/pool=general,kube-aws.io/role=worker,team=a"`},
		{"nodepool-general", nodeplan.SecretsPath, false, ""},
		{"nodepool-gpu", "/etc/systemd/system/nvidia-persistenced.service.d/20-restart.conf", true, "Restart=always"},
		{"nodepool-gpu", "/etc/modules-load.d/nvidia.conf", true, "nvidia"},
		{"nodepool-gpu", "/etc/sysctl.d/90-kube-aws.conf", true, "max_map_count"},
		{"nodepool-gpu", KubeletEnvPath, true, `KUBELET_ARGS="--feature-gates=A=true,B=true --max-pods=50 --node-labels=accelerator=nvidia,kube-aws.io/role=worker --register-with-taints=nvidia.com/gpu=present:NoSchedule"`},
	}
	for _, tt := range tests {
		f := file(tt.doc, tt.path)
		if (f != nil) != tt.want {
			t.Errorf("%s: has %s = %v, want %v", tt.doc, tt.path, f != nil, tt.want)
			continue
		}
		if f != nil && !strings.Contains(f.Content, tt.contains) {
			t.Errorf("%s: %s lacks %q:\n%s", tt.doc, tt.path, tt.contains, f.Content)
		}
	}

	run := func(doc string) string {
		var lines []string
		for _, c := range docs[doc].RunCmd {
			lines = append(lines, strings.Join(c, " "))
		}
		return strings.Join(lines, "\n")
	}
	wantRun := map[string]string{
		"controller": "kube-aws-node secrets\nsystemctl daemon-reload\nsystemctl enable --no-reload kube-aws-helm-install.service\nsystemctl start --no-block kube-aws-helm-install.service\nkube-aws-node addons",
		"nodepool-general": "systemctl daemon-reload\nsystemctl try-restart --no-block containerd.service\n" +
			"systemctl enable --no-reload node-exporter.service\nsystemctl start --no-block node-exporter.service",
		"nodepool-gpu": "systemctl daemon-reload\nsystemctl try-restart --no-block containerd.service\n" +
			"systemctl enable --no-reload node-exporter.service nvidia-persistenced.service\nsystemctl start --no-block node-exporter.service nvidia-persistenced.service",
	}
	for doc, want := range wantRun {
		if got := run(doc); got != want {
			t.Errorf("%s runcmd:\n%s\nwant:\n%s", doc, got, want)
		}
	}
}

func TestDeterministic(t *testing.T) {
	first, _ := render(t, fixtureCluster(), fixtureSet())
	for i := 0; i < 10; i++ { // maps (pool labels) iterate in a new order each time
		again, _ := render(t, fixtureCluster(), fixtureSet())
		if len(again) != len(first) {
			t.Fatalf("render %d made %d files, first made %d", i, len(again), len(first))
		}
		for j := range first {
			if first[j].Path != again[j].Path || !bytes.Equal(first[j].Content, again[j].Content) {
				t.Fatalf("render %d: %s differs", i, first[j].Path)
			}
		}
	}
}

func TestSensitiveNeverInPlainText(t *testing.T) {
	const secret = "hunter2-do-not-leak"
	tests := []struct {
		name    string
		content string
		fatal   bool
	}{
		{"plain text", secret, true},
		{"marker with plain text around it", "password=" + secret + " ((secret:x/y))", true},
		{"empty", "", true},
		{"marker only", "((secret:dex/password))\n", false},
		{"two markers", "((secret:a/b))\n((secret:a/c))", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := &construct.Set{Files: []construct.File{{Target: workers, Path: "/etc/app/password", Sensitive: true, Content: tt.content}}}
			files, diags := render(t, fixtureCluster(), set)
			for _, f := range files {
				if strings.Contains(string(f.Content), secret) {
					t.Fatalf("%s carries the secret in plain text:\n%s", f.Path, f.Content)
				}
			}
			if strings.Contains(diags.Error(), secret) {
				t.Fatalf("a diagnostic quotes the secret: %v", diags)
			}
			if !tt.fatal {
				if len(diags) != 0 {
					t.Fatalf("unexpected: %v", diags)
				}
				general := string(files[2].Content)
				if !strings.Contains(general, "path: /etc/app/password\n  permissions: \"0600\"") ||
					!strings.Contains(general, "\"path\": \"/etc/app/password\",\n          \"format\": \"whole\"") || !strings.Contains(general, "runcmd:\n- - kube-aws-node\n  - secrets\n") {
					t.Fatalf("marker file must be written 0600, listed in %s and substituted first:\n%s", nodeplan.SecretsPath, general)
				}
				return
			}
			if len(diags) != 2 || !diags.HasFatal() || diags[0].Plugin != Plugin || !strings.Contains(diags[0].Message, "/etc/app/password") {
				t.Fatalf("want one fatal per pool naming the file, got %v", diags)
			}
		})
	}
}

func TestUnitChecks(t *testing.T) {
	const svc = "[Service]\nExecStart=/bin/true\n"
	const install = "\n[Install]\nWantedBy=multi-user.target\n"
	tests := []struct {
		name     string
		unit     construct.Unit
		severity diag.Severity // "" means none
		message  string
	}{
		{"good", construct.Unit{Name: "a.service", Enable: true, Content: svc + install}, "", ""},
		{"x- section allowed", construct.Unit{Name: "a.service", Content: svc + "[X-Kube-Aws]\nOwner=me\n"}, "", ""},
		{"timer", construct.Unit{Name: "a.timer", Enable: true, Content: "[Timer]\nOnCalendar=daily\n" + install}, "", ""},
		{"target needs no type section", construct.Unit{Name: "a.target", Content: "[Unit]\nDescription=x\n"}, "", ""},
		{"unknown section", construct.Unit{Name: "a.service", Content: svc + "[Servce]\nRestart=always\n"}, diag.Fatal, "unknown section [Servce]"},
		{"enabled without install", construct.Unit{Name: "a.service", Enable: true, Content: svc}, diag.Fatal, "no [Install] section"},
		{"not enabled without install", construct.Unit{Name: "a.service", Content: svc}, "", ""},
		{"service without service section", construct.Unit{Name: "a.service", Content: "[Unit]\nDescription=x\n"}, diag.Warning, "has no [Service] section"},
		{"timer without timer section", construct.Unit{Name: "a.timer", Content: "[Unit]\nDescription=x\n"}, diag.Warning, "has no [Timer] section"},
		{"bad suffix", construct.Unit{Name: "a.daemon", Content: svc}, diag.Fatal, "not a unit name"},
		{"no content", construct.Unit{Name: "a.service"}, diag.Fatal, "neither content nor drop-ins"},
		{"does not parse", construct.Unit{Name: "a.service", Content: "[Service\nExecStart=/bin/true\n"}, diag.Fatal, "does not parse"},
		{"setting outside a section", construct.Unit{Name: "a.service", Content: "# comment\nExecStart=/bin/true\n[Service]\nType=simple\n"}, diag.Fatal, `"ExecStart=/bin/true" is outside any section`},
		{"drop-in unknown section", construct.Unit{Name: "kubelet.service", DropIns: []construct.DropIn{{Name: "10-x", Content: "[Sevice]\nX=1\n"}}}, diag.Fatal, "drop-in 10-x: unknown section [Sevice]"},
		{"drop-in bad name", construct.Unit{Name: "kubelet.service", DropIns: []construct.DropIn{{Name: "a/b", Content: svc}}}, diag.Fatal, "not a file name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := tt.unit
			u.Target = gpu
			_, diags := render(t, fixtureCluster(), &construct.Set{Units: []construct.Unit{u}})
			if tt.severity == "" {
				if len(diags) != 0 {
					t.Fatalf("unexpected: %v", diags)
				}
				return
			}
			if len(diags) != 1 {
				t.Fatalf("want one diagnostic, got %v", diags)
			}
			d := diags[0]
			if d.Severity != tt.severity || d.Plugin != "userdata" || d.Stage != "render" ||
				!strings.Contains(d.Message, tt.message) || !strings.Contains(d.Message, u.Name) ||
				!strings.Contains(d.Message, "worker/gpu") || d.Path != "constructs.units[worker/gpu:"+u.Name+"]" && !strings.HasPrefix(d.Path, "constructs.units[worker/gpu:"+u.Name+"].") {
				t.Errorf("got %s; want %s naming plugin userdata, unit %s, target worker/gpu and %q", d, tt.severity, u.Name, tt.message)
			}
		})
	}
}

func TestConstructProblems(t *testing.T) {
	tests := []struct {
		name    string
		set     construct.Set
		message string
	}{
		{"unknown pool", construct.Set{Files: []construct.File{{Target: construct.Target{Role: construct.Worker, NodePool: "nope"}, Path: "/a", Content: "x"}}}, `node pool "nope", which cluster.yaml does not define`},
		{"pool with controller role", construct.Set{NodeLabels: []construct.NodeLabel{{Target: construct.Target{Role: construct.Controller, NodePool: "gpu"}, Key: "a"}}}, "needs role worker"},
		{"unknown role", construct.Set{Units: []construct.Unit{{Target: construct.Target{Role: "bastion"}, Name: "a.service", Content: "[Service]\nExecStart=/bin/true\n"}}}, `targets role "bastion"`},
		{"relative path", construct.Set{Files: []construct.File{{Target: controller, Path: "etc/a", Content: "x"}}}, "path must be absolute"},
		{"same path twice", construct.Set{Files: []construct.File{{Target: workers, Path: "/etc/a", Content: "x"}, {Target: gpu, Path: "/etc/a", Content: "y"}}}, "both write /etc/a on node pool gpu"},
		{"file over a unit", construct.Set{
			Files: []construct.File{{Target: controller, Path: "/etc/systemd/system/a.service", Content: "x"}},
			Units: []construct.Unit{{Target: controller, Name: "a.service", Content: "[Service]\nExecStart=/bin/true\n"}}}, "both write /etc/systemd/system/a.service"},
		{"label the kubelet may not set", construct.Set{NodeLabels: []construct.NodeLabel{{Target: workers, Key: "node-role.kubernetes.io/worker"}}}, "kubelet may not set"},
		{"bad taint effect", construct.Set{NodeTaints: []construct.NodeTaint{{Target: gpu, Key: "a", Effect: "Sometimes"}}}, "want key[=value]:NoSchedule"},
		{"whitespace in kubelet flag", construct.Set{KubeletFlags: []construct.TargetedFlag{{Target: controller, Flag: construct.Flag{Name: "v", Value: "2 3"}}}}, "whitespace"},
		{"bad manifest name", construct.Set{Manifests: []construct.Manifest{{Name: "../etc/passwd", Content: "x"}}}, "plain file name"},
		{"bad api server version", construct.Set{APIServer: construct.APIServer{Flags: []construct.Flag{{Name: "v", Value: "2"}}}}, "kube-apiserver static pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fixtureCluster()
			if strings.HasPrefix(tt.name, "bad api server") {
				c.KubernetesVersion = "1.31"
			}
			_, diags := render(t, c, &tt.set)
			if !diags.HasFatal() || !strings.Contains(diags.Error(), tt.message) {
				t.Fatalf("want a fatal containing %q, got %v", tt.message, diags)
			}
			for _, d := range diags {
				if d.Plugin != Plugin {
					t.Errorf("diagnostic without the plugin's name: %s", d)
				}
			}
		})
	}
}

func TestEmptyConstructs(t *testing.T) {
	files, diags := render(t, &config.Cluster{KubernetesVersion: "1.31.0"}, nil)
	if len(diags) != 0 || len(files) != 2 {
		t.Fatalf("files %d, diags %v", len(files), diags)
	}
	if string(files[1].Content) != "#cloud-config\n# kube-aws kubernetesVersion=1.31.0\n{}\n" {
		t.Errorf("etcd userdata with nothing to do = %q", files[1].Content)
	}
}

func TestOrderedUnion(t *testing.T) {
	tests := []struct{ a, b, want string }{
		{"A=true", "B=true,A=true", "A=true,B=true"},
		{"A=true,B=true", "A=false", "A=false,B=true"},
		{"x,y", "y,z", "x,y,z"},
		{"", "A=true", "A=true"},
	}
	for _, tt := range tests {
		if got := strings.Join(orderedUnion(splitList(tt.a), splitList(tt.b)), ","); got != tt.want {
			t.Errorf("orderedUnion(%s, %s) = %s, want %s", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestKubeletMaySet(t *testing.T) {
	for key, want := range map[string]bool{
		"team":                           true,
		"example.com/team":               true,
		"node.kubernetes.io/pool":        true,
		"kubelet.kubernetes.io/x":        true,
		"foo.node.kubernetes.io/x":       true,
		"topology.kubernetes.io/zone":    true,
		"node-role.kubernetes.io/worker": false,
		"kubernetes.io/role":             false,
		"k8s.io/anything":                false,
		"sub.k8s.io/anything":            false,
	} {
		if got := kubeletMaySet(key); got != want {
			t.Errorf("kubeletMaySet(%q) = %v, want %v", key, got, want)
		}
	}
}

// poolsFixture is the fixture's constructs spread over n node pools.
func poolsFixture(n int) (*config.Cluster, *construct.Set) {
	c := fixtureCluster()
	c.NodePools = nil
	for i := 0; i < n; i++ {
		c.NodePools = append(c.NodePools, config.NodePool{Name: fmt.Sprintf("pool%03d", i), Labels: map[string]string{"pool": fmt.Sprint(i)}})
	}
	set := fixtureSet()
	set.Units[4].Target.NodePool = "pool000"
	set.Files[3].Target.NodePool = "pool000"
	set.KubeletFlags[0].Target.NodePool = "pool000"
	set.KubeletFlags[3].Target.NodePool = "pool000"
	set.NodeLabels[1].Target.NodePool = "pool000"
	// Pinned binaries and images as the kubernetes plugin gives every
	// node, and one only the first pool has.
	sum := strings.Repeat("a", 64)
	for i := range 6 {
		set.Artifacts = append(set.Artifacts, construct.Artifact{
			Target: workers, Name: fmt.Sprintf("binary%d", i), Version: "v1.0.0", Kind: construct.Binary,
			Files: []construct.ArtifactFile{{Name: "bin", Path: fmt.Sprintf("/opt/bin/binary%d", i)}},
			Sources: map[string]construct.ArtifactSource{
				"amd64": {URL: fmt.Sprintf("https://example.com/binary%d-amd64.tgz", i), SHA256: sum, Members: map[string]string{"bin": "./bin"}},
				"arm64": {URL: fmt.Sprintf("https://example.com/binary%d-arm64.tgz", i), SHA256: sum, Members: map[string]string{"bin": "./bin"}},
			},
		}, construct.Artifact{
			Target: workers, Name: fmt.Sprintf("image%d", i), Version: "1.0", Kind: construct.Image, Reference: fmt.Sprintf("registry.example.com/image%d:1.0", i),
			Sources: map[string]construct.ArtifactSource{"amd64": {Digest: "sha256:" + sum}, "arm64": {Digest: "sha256:" + sum}},
		})
	}
	set.Artifacts[0].Target.NodePool = "pool000"
	return c, set
}

// benchmarkPools renders the fixture's constructs for n node pools; the
// growth target is that 100 pools cost under 10x what 10 pools cost.
func benchmarkPools(b *testing.B, n int) {
	c, set := poolsFixture(n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, diags, err := Render(c, set)
		if err != nil || len(diags) != 0 {
			b.Fatal(err, diags)
		}
	}
}

func BenchmarkRender10Pools(b *testing.B)  { benchmarkPools(b, 10) }
func BenchmarkRender100Pools(b *testing.B) { benchmarkPools(b, 100) }

// TestGrowth holds the growth target on allocations, which unlike wall time
// on a shared machine are the same every run: ten times the pools may cost
// at most ten times the work (the controller and etcd documents are fixed).
func TestGrowth(t *testing.T) {
	allocs := func(n int) float64 {
		c, set := poolsFixture(n)
		return testing.AllocsPerRun(3, func() {
			if _, _, err := Render(c, set); err != nil {
				t.Fatal(err)
			}
		})
	}
	a10, a100 := allocs(10), allocs(100)
	if a100 > 10*a10 {
		t.Errorf("100 pools allocate %.0f times, 10 pools %.0f: %.1fx, want under 10x", a100, a10, a100/a10)
	}
}

// Artifacts become the machine's artifacts plan, from the mirror's uploads
// when kube-aws resolved them there, else from upstream; runcmd calls the
// steps of the plans the machine has, in the order nodeplan.Steps derives.
func TestArtifactsPlanAndRunCmd(t *testing.T) {
	sum := strings.Repeat("a", 64)
	mirrored := strings.Repeat("b", 64)
	set := &construct.Set{
		Artifacts: []construct.Artifact{{
			Target: workers, Name: "cni-plugins", Version: "v0.9.1", Kind: construct.Binary,
			Files: []construct.ArtifactFile{{Name: "bridge", Path: "/opt/cni/bin/bridge"}, {Name: "loopback", Path: "/opt/cni/bin/loopback"}},
			Sources: map[string]construct.ArtifactSource{"amd64": {URL: "https://example/cni.tgz", SHA256: sum,
				Members: map[string]string{"bridge": "./bridge", "loopback": "./loopback"}}},
		}, {
			Target: workers, Name: "pause", Version: "3.10.1", Kind: construct.Image, Reference: "registry.k8s.io/pause:3.10.1",
			Sources: map[string]construct.ArtifactSource{"amd64": {Digest: "sha256:" + sum, Mirrored: map[string]string{construct.MirrorImageFile: mirrored}}},
		}},
		Files: []construct.File{
			{Target: workers, Path: nodeplan.GoalPath, Content: `{"node": {"kubeconfig": "/var/lib/kubelet/kubeconfig"}}`},
			{Target: workers, Path: "/etc/app.env", Format: "env", Content: "ADDRESS=((fact:privateIPv4))\n"},
			{Target: workers, Path: "/etc/bad.json", Content: `{"a": "((fact:privateIPv4))"}`},
		},
		Units: []construct.Unit{{Target: workers, Name: "app.service", Enable: true, Content: "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}},
	}
	// /etc/bad.json says no format: written as it is, not substituted.
	files, diags := render(t, fixtureCluster(), set)
	if len(diags) != 0 {
		t.Fatal(diags)
	}
	var doc document
	if err := yaml.Unmarshal(files[2].Content, &doc); err != nil {
		t.Fatal(err)
	}
	var plan nodeplan.ArtifactsPlan
	var secrets nodeplan.SecretsPlan
	for _, f := range doc.WriteFiles {
		switch f.Path {
		case nodeplan.ArtifactsPath:
			if err := json.Unmarshal([]byte(f.Content), &plan); err != nil {
				t.Fatal(err)
			}
		case nodeplan.SecretsPath:
			if err := json.Unmarshal([]byte(f.Content), &secrets); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(plan.Binaries) != 2 || plan.Binaries[0].Name != "cni-plugins bridge" || plan.Binaries[1].Sources["amd64"].Member != "./loopback" ||
		plan.Binaries[0].Sources["amd64"].URL != "https://example/cni.tgz" {
		t.Errorf("binaries: %+v", plan.Binaries)
	}
	if len(plan.Images) != 1 || plan.Images[0].Sources["amd64"].AssetKey != "assets/"+mirrored || plan.Images[0].Sources["amd64"].Digest != "" {
		t.Errorf("images: %+v", plan.Images)
	}
	if len(secrets.Files) != 1 || secrets.Files[0] != (nodeplan.SecretFile{Path: "/etc/app.env", Format: nodeplan.FormatEnv}) {
		t.Errorf("secrets plan: %+v", secrets)
	}
	var run []string
	for _, c := range doc.RunCmd {
		run = append(run, strings.Join(c, " "))
	}
	want := "kube-aws-node secrets|kube-aws-node artifacts|systemctl daemon-reload|systemctl enable --no-reload app.service|systemctl start --no-block app.service|kube-aws-node wait"
	if got := strings.Join(run, "|"); got != want {
		t.Errorf("runcmd %s\nwant    %s", got, want)
	}
}

// The userdata says, per plugin, a digest of what that plugin puts on the
// machine, so that kube-aws can name the plugins whose part changed.
func TestSummaryNamesEachPluginsPart(t *testing.T) {
	c := &config.Cluster{KubernetesVersion: "1.34.4", NodePools: []config.NodePool{{Name: "a"}, {Name: "b"}}}
	set := func(unit string) *construct.Set {
		return &construct.Set{
			Files: []construct.File{{Target: construct.Target{Role: construct.Worker}, Path: "/etc/x", Content: "x", Plugin: "base"}},
			Units: []construct.Unit{{Target: construct.Target{Role: construct.Worker, NodePool: "a"}, Name: "audit.service", Content: unit, Plugin: "audit"}},
		}
	}
	before, _ := render(t, c, set("[Service]\nExecStart=/bin/true\n"))
	after, _ := render(t, c, set("[Service]\nExecStart=/bin/false\n"))
	byPath := func(fs []stage.File) map[string]nodeplan.Summary {
		out := map[string]nodeplan.Summary{}
		for _, f := range fs {
			out[f.Path] = nodeplan.ParseSummary(f.Content)
		}
		return out
	}
	b, a := byPath(before), byPath(after)
	if got := a["userdata/nodepool-a.yaml"].Changes(b["userdata/nodepool-a.yaml"]); len(got) != 1 || got[0] != "plugin audit changed" {
		t.Errorf("pool a: %v", got)
	}
	if got := a["userdata/nodepool-b.yaml"].Changes(b["userdata/nodepool-b.yaml"]); len(got) != 0 {
		t.Errorf("pool b, which the unit does not reach: %v", got)
	}
	if _, ok := a["userdata/nodepool-b.yaml"].Plugins["base"]; !ok || a["userdata/nodepool-b.yaml"].KubernetesVersion != "1.34.4" {
		t.Errorf("pool b summary %+v", a["userdata/nodepool-b.yaml"])
	}
}

// What one render shares between machines (shared) changes no machine's
// userdata: each comes out as it does rendered on its own, whether its pool
// has constructs of its own (pool000) or not.
func TestSharedChangesNothing(t *testing.T) {
	c, set := poolsFixture(4)
	files, diags, err := Render(c, set)
	if err != nil || len(diags) != 0 {
		t.Fatal(err, diags)
	}
	machines := []machine{{File: names.RoleController, Role: construct.Controller}, {File: names.RoleEtcd, Role: construct.Etcd}}
	for i := range c.NodePools {
		machines = append(machines, machine{File: names.NodePoolRole(c.NodePools[i].Name), Role: construct.Worker, Pool: &c.NodePools[i], PoolIndex: i})
	}
	if len(files) != len(machines) {
		t.Fatalf("%d files for %d machines", len(files), len(machines))
	}
	for i, m := range machines {
		t.Run(m.File, func(t *testing.T) {
			alone, d, err := renderMachine(c, set, m, newShared())
			if err != nil || len(d) != 0 {
				t.Fatal(err, d)
			}
			if string(files[i].Content) != string(alone) {
				t.Errorf("rendered with the others:\n%s\nalone:\n%s", files[i].Content, alone)
			}
		})
	}
	// The first pool's own artifact makes its plan and digests differ.
	if string(files[2].Content) == strings.Replace(string(files[3].Content), "pool001", "pool000", -1) {
		t.Error("pool000, which has an artifact of its own, renders like pool001")
	}
}
