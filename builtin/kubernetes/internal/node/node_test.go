package node

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/versions"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

func release(t *testing.T) versions.Release {
	r, d := versions.For("1.34.4")
	if len(d) != 0 {
		t.Fatal(d)
	}
	return r
}

// TestContainerdConfig reads the configuration back as containerd would
// (TOML) and checks the settings the nodes depend on.
func TestContainerdConfig(t *testing.T) {
	out, err := ContainerdConfig(release(t))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Version int `toml:"version"`
		Plugins struct {
			CRI struct {
				SandboxImage        string `toml:"sandbox_image"`
				RestrictOOMScoreAdj bool   `toml:"restrict_oom_score_adj"`
				Containerd          struct {
					DefaultRuntimeName string `toml:"default_runtime_name"`
					Runtimes           map[string]struct {
						RuntimeType string         `toml:"runtime_type"`
						Options     map[string]any `toml:"options"`
					} `toml:"runtimes"`
				} `toml:"containerd"`
				CNI struct {
					BinDir  string `toml:"bin_dir"`
					ConfDir string `toml:"conf_dir"`
				} `toml:"cni"`
			} `toml:"io.containerd.grpc.v1.cri"`
		} `toml:"plugins"`
	}
	md, err := toml.Decode(out, &cfg)
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if u := md.Undecoded(); len(u) != 0 {
		t.Errorf("keys this test does not check: %v", u)
	}
	cri := cfg.Plugins.CRI
	runc := cri.Containerd.Runtimes["runc"]
	if cfg.Version != 2 || cri.Containerd.DefaultRuntimeName != "runc" || cri.SandboxImage != "registry.k8s.io/pause:3.10.1" || !cri.RestrictOOMScoreAdj ||
		runc.RuntimeType != "io.containerd.runc.v2" || runc.Options["SystemdCgroup"] != false ||
		cri.CNI.BinDir != CNIBinDir || cri.CNI.ConfDir != CNIConfDir {
		t.Errorf("containerd configuration %+v", cfg)
	}
}

func TestKubeletConfig(t *testing.T) {
	c := &config.Cluster{Kubernetes: config.Kubernetes{PodCIDR: "10.2.0.0/16", ServiceCIDR: "10.3.0.0/24", ClusterDomain: "cluster.local"}}
	s, err := SettingsOf(c, release(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, controlPlane := range []bool{true, false} {
		out, err := KubeletConfig(s, controlPlane)
		if err != nil {
			t.Fatal(err)
		}
		var kc kubeletConfiguration
		if err := yaml.UnmarshalStrict([]byte(out), &kc); err != nil {
			t.Fatal(err)
		}
		if kc.ClusterDNS[0] != "10.3.0.10" || kc.CgroupDriver != "cgroupfs" || !kc.ServerTLSBootstrap ||
			kc.Authentication.Anonymous.Enabled || kc.Authorization.Mode != "Webhook" {
			t.Errorf("kubelet configuration %+v", kc)
		}
		if (kc.StaticPodPath != "") != controlPlane {
			t.Errorf("control plane %v: staticPodPath %q", controlPlane, kc.StaticPodPath)
		}
		// What the CIS Benchmark's kubelet checks look for (4.2.1-4.2.12).
		if kc.ReadOnlyPort != 0 || !kc.RotateCertificates || !kc.Authentication.Webhook.Enabled || kc.Authentication.X509.ClientCAFile == "" ||
			strings.Join(kc.TLSCipherSuites, ",") != strings.Join(names.TLSCipherSuites(), ",") || kc.TLSMinVersion != "VersionTLS12" {
			t.Errorf("kubelet configuration %+v", kc)
		}
	}
	// Root alone reads it (CIS 4.1.9), on every role.
	var set construct.Set
	if err := Contribute(&set, s); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range set.Files {
		if f.Path == KubeletConfigPath {
			n++
			if f.Mode != "0600" {
				t.Errorf("%s for %v has mode %s, want 0600", f.Path, f.Target, f.Mode)
			}
		}
	}
	if n != 2 {
		t.Errorf("%s contributed %d times, want once per role", KubeletConfigPath, n)
	}
	// The kubelet gives its node the instance's private address when it
	// registers, so its serving certificate is asked for at once.
	for _, u := range set.Units {
		if u.Name == KubeletUnit && u.Content != "" && !strings.Contains(u.Content, "--node-ip=${"+nodeplan.FactEnvName(nodeplan.FactPrivateIPv4)+"}") {
			t.Errorf("the kubelet's unit for %v lacks --node-ip from the private address fact:\n%s", u.Target, u.Content)
		}
	}
	c.Kubernetes.ServiceCIDR = "nonsense"
	if _, err := SettingsOf(c, release(t)); err == nil || !strings.Contains(err.Error(), "kubernetes.serviceCIDR") {
		t.Errorf("a bad service CIDR: %v", err)
	}
}

// TestWorkersWaitForTheAPI: a worker's kubelet starts once the API answers
// its bootstrap token, unless it has joined before; a controller's, whose
// API server is a static pod of that kubelet, never waits.
func TestWorkersWaitForTheAPI(t *testing.T) {
	set := &construct.Set{}
	if err := Contribute(set, Settings{Release: release(t), ClusterDNS: "10.3.0.10", ClusterDomain: "cluster.local"}); err != nil {
		t.Fatal(err)
	}
	var worker, controller []string
	for _, u := range set.Units {
		if u.Name != KubeletUnit {
			continue
		}
		for _, d := range u.DropIns {
			if u.Target.Role == construct.Worker {
				worker = append(worker, d.Content)
			} else {
				controller = append(controller, d.Content)
			}
		}
	}
	want := "ExecStartPre=-/opt/kube-aws/bin/kube-aws-node wait-api --kubeconfig /etc/kubernetes/bootstrap-kubelet.conf --unless-exists /etc/kubernetes/kubelet.conf --timeout 15m\n"
	if len(worker) != 1 || !strings.Contains(worker[0], want) {
		t.Fatalf("worker kubelet drop-ins %q, want one with %q", worker, want)
	}
	// kube-aws-node parses --timeout as a Go duration: "15min" was a usage
	// error, the "-" let the kubelet start at once, and nobody waited.
	_, after, _ := strings.Cut(worker[0], "--timeout ")
	timeout, _, _ := strings.Cut(after, "\n")
	if _, err := time.ParseDuration(timeout); err != nil {
		t.Errorf("--timeout %s: %v", timeout, err)
	}
	if len(controller) != 0 {
		t.Errorf("controller kubelet drop-ins %q, want none", controller)
	}
}

// A worker's goal is its node Ready; a controller's is that, /readyz of
// its own API server and of the API through the load balancer (the fact
// the control-plane stack passes), and its pods of the DaemonSets bound to
// it of its own release, asked with the admin's credentials.
func TestGoal(t *testing.T) {
	bound := []nodeplan.NodeDaemonSet{{Namespace: "kube-system", Name: "kube-proxy", Digest: strings.Repeat("0", 64)}}
	tests := []struct {
		role construct.Role
		want nodeplan.NodeGoal
	}{
		{construct.Worker, nodeplan.NodeGoal{Kubeconfig: names.KubeconfigKubelet}},
		{construct.Controller, nodeplan.NodeGoal{Kubeconfig: names.KubeconfigAdmin,
			APIReadyz: []string{"https://127.0.0.1:443/readyz"}, DaemonSets: bound}},
	}
	for _, tt := range tests {
		g := Goal(tt.role, bound)
		if err := g.Validate(); err != nil || g.Etcd != nil || g.Node == nil || !reflect.DeepEqual(*g.Node, tt.want) {
			t.Errorf("%s: goal %+v (%v), want node %+v", tt.role, g.Node, err, tt.want)
		}
	}
}
