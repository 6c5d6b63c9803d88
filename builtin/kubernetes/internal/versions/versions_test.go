package versions

import (
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/merge"
	"github.com/kube-aws/kube-aws/release/artifacts"
)

func TestFor(t *testing.T) {
	tests := []struct {
		version string
		want    string // the release's Kubernetes, or "" for a fatal
	}{
		{"1.34.4", "v1.34.4"},
		{"v1.34.4", "v1.34.4"},
		{"1.33.13", "v1.33.13"},
		{"1.34.3", ""},
		{"1.33.12", ""},
		{"1.31.4", ""},
		{"1.34", ""},
		{"latest", ""},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			r, d := For(tt.version)
			if tt.want != "" {
				if len(d) != 0 || r.Kubernetes != tt.want {
					t.Fatalf("For(%q) = %+v, %v; want %s", tt.version, r, d, tt.want)
				}
				return
			}
			if len(d) != 1 || d[0].Severity != diag.Fatal || d[0].Path != "kubernetesVersion" {
				t.Fatalf("For(%q): %v; want one fatal at kubernetesVersion", tt.version, d)
			}
			if !strings.Contains(d[0].Message+d[0].Hint, "1.33.13, 1.34.4") {
				t.Errorf("the fatal must name the supported versions: %s", d[0])
			}
		})
	}
}

func TestImages(t *testing.T) {
	r, _ := For("1.34.4")
	old, _ := For("1.33.13")
	for got, want := range map[string]string{
		r.Image("kube-scheduler"):         "registry.k8s.io/kube-scheduler:v1.34.4",
		r.PauseImage():                    "registry.k8s.io/pause:3.10.1",
		r.CoreDNSImage():                  "registry.k8s.io/coredns/coredns:v1.12.1",
		r.CloudControllerManagerImage():   "registry.k8s.io/provider-aws/cloud-controller-manager:v1.34.3",
		old.Image("kube-proxy"):           "registry.k8s.io/kube-proxy:v1.33.13",
		old.CloudControllerManagerImage(): "registry.k8s.io/provider-aws/cloud-controller-manager:v1.33.4",
	} {
		if got != want {
			t.Errorf("image %s, want %s (docs/artifacts.md)", got, want)
		}
	}
	// What does not follow the Kubernetes version is the same in both
	// releases, so an upgrade does not change it.
	if old.PauseImage() != r.PauseImage() || old.CoreDNSImage() != r.CoreDNSImage() || old.CNIPlugins != r.CNIPlugins {
		t.Errorf("1.33 and 1.34 differ in an add-on that need not follow Kubernetes: %+v %+v", old, r)
	}
}

// TestPinsComplete: every supported release pins every binary for every
// architecture, and the digests of the images it pins.
func TestPinsComplete(t *testing.T) {
	for _, v := range Supported() {
		r, d := For(v)
		if len(d) != 0 {
			t.Fatal(d)
		}
		if gaps := r.UpstreamGaps(); len(gaps) != 0 {
			t.Errorf("%s: %v", v, gaps)
		}
		p := pins[r.Kubernetes]
		for _, img := range []string{"pause", "cloud-controller-manager"} {
			if !strings.HasPrefix(p.Images[img], "sha256:") || len(p.Images[img]) != 71 {
				t.Errorf("%s: image %s digest %q", v, img, p.Images[img])
			}
		}
		for arch, src := range p.Kubelet {
			if !strings.Contains(src.URL, "/"+r.Kubernetes+"/bin/linux/"+arch+"/kubelet") || len(src.SHA256) != 64 {
				t.Errorf("%s: kubelet %s source %+v", v, arch, src)
			}
		}
	}
}

// TestUpstreamGaps: a release missing a binary's upstream pin is fatal at
// kubernetesVersion without an artifact folder, naming the binary, the
// architectures and that air-gapped mode works.
func TestUpstreamGaps(t *testing.T) {
	saved := pins["v1.33.13"]
	defer func() { pins["v1.33.13"] = saved }()
	p := saved
	p.Kubelet = map[string]construct.ArtifactSource{"amd64": saved.Kubelet["amd64"]}
	pins["v1.33.13"] = p
	r, _ := For("1.33.13")
	d := r.UpstreamGaps()
	if len(d) != 1 || d[0].Severity != diag.Fatal || d[0].Path != "kubernetesVersion" ||
		!strings.Contains(d[0].Message, "kubelet v1.33.13 (arm64)") || strings.Contains(d[0].Message, "cni-plugins") ||
		!strings.Contains(d[0].Hint, "artifacts.mirror") {
		t.Errorf("gaps %v", d)
	}
}

// TestArtifacts: every artifact passes the merge's checks, every node gets
// the kubelet and CNI plugins, and an image without a pinned digest is
// declared only for an artifact folder.
func TestArtifacts(t *testing.T) {
	for _, v := range Supported() {
		t.Run(v, func(t *testing.T) { testArtifacts(t, v) })
	}
}

func testArtifacts(t *testing.T, v string) {
	r, _ := For(v)
	for _, mirror := range []bool{false, true} {
		arts := r.Artifacts(mirror, "/opt/cni/bin", "/usr/local/bin/kubelet")
		if _, diags := merge.Merge([]merge.Contribution{{Plugin: "kubernetes", Set: &construct.Set{Artifacts: arts}}}); len(diags) != 0 {
			t.Fatalf("mirror %v: %s", mirror, diags.Error())
		}
		got := map[string]bool{}
		for _, a := range arts {
			got[a.Target.String()+" "+a.Name] = true
			for _, arch := range Archs {
				if _, ok := a.Sources[arch]; !ok {
					t.Errorf("%s has no %s source", a.Name, arch)
				}
			}
		}
		want := []string{"controller kubelet", "worker kubelet", "controller cni-plugins", "worker cni-plugins",
			"controller pause", "worker pause", "controller cloud-controller-manager"}
		if mirror {
			want = append(want, "controller kube-apiserver", "controller kube-controller-manager", "controller kube-scheduler",
				"worker kube-proxy", "controller kube-proxy", "worker coredns")
		} else if got["controller kube-apiserver"] || got["worker coredns"] {
			t.Errorf("upstream mode declares an image without a pinned digest: %v", got)
		}
		for _, w := range want {
			if !got[w] {
				t.Errorf("mirror %v: no %s in %v", mirror, w, got)
			}
		}
	}
}

// TestArtifactFolderHoldsEveryRelease: the air-gapped artifact folder
// (release/artifacts) builds every supported release with the same add-on
// versions, so air-gapped mode works for each of them.
func TestArtifactFolderHoldsEveryRelease(t *testing.T) {
	built := map[string]artifacts.KubernetesRelease{}
	for _, k := range artifacts.KubernetesReleases() {
		built[k.Version] = k
	}
	for _, v := range Supported() {
		r, _ := For(v)
		k, ok := built[r.Kubernetes]
		if !ok {
			t.Errorf("%s: the artifact builder does not build it (release/artifacts kubernetesReleases)", r.Kubernetes)
			continue
		}
		if k.CloudProviderAWS != r.CloudControllerManager || artifacts.PauseVersion != r.Pause ||
			artifacts.CoreDNSVersion != r.CoreDNS || artifacts.CNIPluginsVersion != r.CNIPlugins {
			t.Errorf("%s: the plugin pins %+v, the artifact folder builds %+v with pause %s, CoreDNS %s, CNI plugins %s",
				r.Kubernetes, r, k, artifacts.PauseVersion, artifacts.CoreDNSVersion, artifacts.CNIPluginsVersion)
		}
	}
	if len(built) != len(Supported()) {
		t.Errorf("the artifact builder knows %v, the plugin supports %v", artifacts.KubernetesVersions(), Supported())
	}
}
