// Package versions pins what the kubernetes plugin runs for each Kubernetes
// version it supports: the control-plane and kube-proxy images, the kubelet,
// and the add-ons released alongside (pause, CoreDNS, the AWS cloud
// controller manager, the CNI plugins). A version without pins is refused at
// initialise, naming the versions that have them: running a Kubernetes
// release with images and binaries nobody checked is how clusters break.
package versions

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/kubeversion"
)

// Release is the set of versions one Kubernetes release runs with.
type Release struct {
	// Kubernetes is the release, v1.34.4: the tag of kube-apiserver,
	// kube-controller-manager, kube-scheduler, kube-proxy and the kubelet.
	Kubernetes string
	// Pause is the sandbox image's tag (containerd's sandbox_image).
	Pause string
	// CoreDNS is the cluster DNS image's tag.
	CoreDNS string
	// CloudControllerManager is the AWS cloud controller manager's tag
	// (cloud-provider-aws releases follow Kubernetes' minor version).
	CloudControllerManager string
	// CNIPlugins is the containernetworking/plugins release whose
	// binaries (bridge, host-local, loopback, portmap, flannel) the
	// machines install in CNIBinDir.
	CNIPlugins string
}

// releases are the supported Kubernetes versions (the cluster design of
// CLUSTER.md: v1.34.4 runs on cgroup v1, which the kubelet of 1.35 refuses
// by default, and the Go module proxy serves its staging modules).
var releases = map[string]Release{
	"v1.34.4": {
		Kubernetes:             "v1.34.4",
		Pause:                  "3.10.1",
		CoreDNS:                "v1.12.1",
		CloudControllerManager: "v1.34.3",
		CNIPlugins:             "v0.9.1",
	},
}

// Supported lists the supported versions, sorted.
func Supported() []string {
	out := make([]string, 0, len(releases))
	for v := range releases {
		out = append(out, strings.TrimPrefix(v, "v"))
	}
	sort.Strings(out)
	return out
}

// For returns the release of the cluster's kubernetesVersion, or a fatal at
// kubernetesVersion naming the supported versions.
func For(kubernetesVersion string) (Release, diag.List) {
	hint := "set kubernetesVersion to one of " + strings.Join(Supported(), ", ") +
		" (the versions whose binaries and images kube-aws pins)"
	v, err := kubeversion.Parse(kubernetesVersion)
	if err != nil {
		return Release{}, diag.List{diag.Fatalf("%v", err).At("kubernetesVersion").WithHint(hint)}
	}
	r, ok := releases[v.String()]
	if !ok {
		return Release{}, diag.List{diag.Fatalf("Kubernetes %s has no pinned binaries and images in this kube-aws; supported: %s",
			v, strings.Join(Supported(), ", ")).At("kubernetesVersion").WithHint(hint)}
	}
	return r, nil
}

// Registry is where the Kubernetes project publishes its images.
const Registry = "registry.k8s.io"

// Image references, by tag: in air-gapped mode the machines import the
// images under these names (the artifact folder's image.tar files are tagged
// with them), and pods ask for them with pull policy IfNotPresent.
func (r Release) Image(component string) string {
	return fmt.Sprintf("%s/%s:%s", Registry, component, r.Kubernetes)
}

// PauseImage is containerd's sandbox image.
func (r Release) PauseImage() string { return Registry + "/pause:" + r.Pause }

// CoreDNSImage is the cluster DNS image.
func (r Release) CoreDNSImage() string { return Registry + "/coredns/coredns:" + r.CoreDNS }

// CloudControllerManagerImage is the AWS cloud controller manager's image.
func (r Release) CloudControllerManagerImage() string {
	return Registry + "/provider-aws/cloud-controller-manager:" + r.CloudControllerManager
}
