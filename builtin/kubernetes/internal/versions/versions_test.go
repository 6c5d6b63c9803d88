package versions

import (
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/diag"
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
