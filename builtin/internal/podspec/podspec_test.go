package podspec

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/core/construct"
)

func TestStaticPod(t *testing.T) {
	flags := []construct.Flag{
		{Name: "secure-port", Value: "443"},
		{Name: "authorization-mode", Value: "Node,RBAC"},
		{Name: "etcd-servers", Value: "https://etcd0:2379"},
	}
	vols := []construct.Volume{
		{Name: "k8s-certs", HostPath: "/etc/kubernetes/pki", MountPath: "/etc/kubernetes/pki", ReadOnly: true},
		{Name: "audit-log", HostPath: "/var/log/kube-apiserver", MountPath: "/var/log/kube-apiserver"},
	}
	out, err := StaticPod(flags, vols, "1.30.4")
	if err != nil {
		t.Fatal(err)
	}
	var p pod
	if err := yaml.UnmarshalStrict(out, &p); err != nil {
		t.Fatalf("manifest does not read back: %v\n%s", err, out)
	}
	c := p.Spec.Containers[0]
	if c.Image != "registry.k8s.io/kube-apiserver:v1.30.4" {
		t.Errorf("image = %s", c.Image)
	}
	wantCmd := []string{"kube-apiserver", "--authorization-mode=Node,RBAC", "--etcd-servers=https://etcd0:2379", "--secure-port=443"}
	if strings.Join(c.Command, " ") != strings.Join(wantCmd, " ") {
		t.Errorf("command = %q, want sorted %q", c.Command, wantCmd)
	}
	if c.LivenessProbe.HTTPGet.Port != 443 || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes do not follow --secure-port: %+v", c.LivenessProbe)
	}
	if len(p.Spec.Volumes) != 2 || p.Spec.Volumes[0].Name != "audit-log" || p.Spec.Volumes[0].HostPath.Type != "DirectoryOrCreate" {
		t.Errorf("volumes = %+v, want sorted by name, writable ones created", p.Spec.Volumes)
	}
	if !p.Spec.HostNetwork || p.Metadata.Namespace != "kube-system" {
		t.Errorf("static pod must use the host network in kube-system: %+v", p)
	}

	// Input order must not change a byte of output.
	rev := []construct.Flag{flags[2], flags[1], flags[0]}
	again, err := StaticPod(rev, []construct.Volume{vols[1], vols[0]}, "v1.30.4")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, again) {
		t.Errorf("output depends on input order:\n%s\n---\n%s", out, again)
	}
}

func TestStaticPodErrors(t *testing.T) {
	ok := []construct.Volume{{Name: "a", HostPath: "/a", MountPath: "/a"}}
	tests := []struct {
		name    string
		flags   []construct.Flag
		vols    []construct.Volume
		version string
		want    string
	}{
		{"no patch version", nil, ok, "1.30", "MAJOR.MINOR.PATCH"},
		{"bad version", nil, ok, "one.two", "not a number"},
		{"bad port", []construct.Flag{{Name: "secure-port", Value: "https"}}, ok, "1.30.1", "not a port"},
		{"empty flag name", []construct.Flag{{Name: "", Value: "x"}}, ok, "1.30.1", "empty name"},
		{"empty flag value", []construct.Flag{{Name: "advertise-address", Value: "", Plugin: "extras"}}, ok, "1.30.1", `--advertise-address of plugin "extras" has an empty value`},
		{"volume name clash", nil, []construct.Volume{{Name: "a", HostPath: "/a", MountPath: "/a"}, {Name: "a", HostPath: "/b", MountPath: "/b"}}, "1.30.1", "defined twice"},
		{"mount clash", nil, []construct.Volume{{Name: "a", HostPath: "/a", MountPath: "/m"}, {Name: "b", HostPath: "/b", MountPath: "/m"}}, "1.30.1", "both mount"},
		{"incomplete volume", nil, []construct.Volume{{Name: "a"}}, "1.30.1", "required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := StaticPod(tt.flags, tt.vols, tt.version)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestStaticPodDuplicateVolumeIsAgreement(t *testing.T) {
	v := construct.Volume{Name: "a", HostPath: "/a", MountPath: "/a", ReadOnly: true}
	out, err := StaticPod(nil, []construct.Volume{v, v}, "1.30.1")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), "name: a\n"); n != 2 { // one mount, one volume
		t.Errorf("identical volumes should appear once; got %d mentions:\n%s", n, out)
	}
}

func TestStaticPodProbeHost(t *testing.T) {
	out, err := StaticPod([]construct.Flag{{Name: "bind-address", Value: "10.0.0.5"}}, nil, "1.30.1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "host: 10.0.0.5") || !strings.Contains(string(out), "port: 6443") {
		t.Errorf("probes must target the bound address and the default port:\n%s", out)
	}
}
