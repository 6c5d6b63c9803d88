package versions

import (
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/merge"
)

func TestFor(t *testing.T) {
	tests := []struct {
		version string
		want    string // the release's Kubernetes, or "" for a fatal
	}{
		{"1.34.4", "v1.34.4"},
		{"v1.34.4", "v1.34.4"},
		{"1.34.3", ""},
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
			if !strings.Contains(d[0].Message+d[0].Hint, "1.34.4") {
				t.Errorf("the fatal must name the supported versions: %s", d[0])
			}
		})
	}
}

func TestImages(t *testing.T) {
	r, _ := For("1.34.4")
	for got, want := range map[string]string{
		r.Image("kube-scheduler"):       "registry.k8s.io/kube-scheduler:v1.34.4",
		r.PauseImage():                  "registry.k8s.io/pause:3.10.1",
		r.CoreDNSImage():                "registry.k8s.io/coredns/coredns:v1.12.1",
		r.CloudControllerManagerImage(): "registry.k8s.io/provider-aws/cloud-controller-manager:v1.34.3",
	} {
		if got != want {
			t.Errorf("image %s, want %s (docs/artifacts.md)", got, want)
		}
	}
}

// TestArtifacts: every artifact passes the merge's checks, every node gets
// the kubelet and CNI plugins, and an image without a pinned digest is
// declared only for an artifact folder.
func TestArtifacts(t *testing.T) {
	r, _ := For("1.34.4")
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
