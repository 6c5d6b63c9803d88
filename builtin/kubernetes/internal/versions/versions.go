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

	"github.com/kube-aws/kube-aws/core/construct"
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

// releases are the supported Kubernetes versions: v1.34.4 (it runs on
// cgroup v1, which the kubelet of 1.35 refuses by default, and the Go module
// proxy serves its staging modules) and the minor before it, v1.33.13, so
// that a cluster can be made at 1.33 and upgraded. The two share every
// add-on whose version does not follow Kubernetes' (pause, CoreDNS, the CNI
// plugins; etcd and flannel are their plugins'), so an upgrade changes only
// what must change: the Kubernetes components and the cloud controller
// manager, whose release follows the minor version and must not be newer
// than the API server it talks to.
var releases = map[string]Release{
	"v1.33.13": {
		Kubernetes:             "v1.33.13",
		Pause:                  "3.10.1",
		CoreDNS:                "v1.12.1",
		CloudControllerManager: "v1.33.4",
		CNIPlugins:             "v0.9.1",
	},
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

// Pins are the upstream sources of a release's artifacts with their sha256
// or digest, per architecture (docs/upstream-pins.md says where each was
// read). An image without a pinned digest has no entry: it is taken only
// from the artifact folder in air-gapped mode, and pulled by tag otherwise.
type Pins struct {
	Kubelet    map[string]construct.ArtifactSource
	CNIPlugins map[string]construct.ArtifactSource
	// Images by name (pause, cloud-controller-manager...), digest per
	// architecture: the digest of the multi-architecture index.
	Images map[string]string
}

var pins = map[string]Pins{
	"v1.33.13": {
		Kubelet: map[string]construct.ArtifactSource{
			"amd64": {URL: "https://dl.k8s.io/release/v1.33.13/bin/linux/amd64/kubelet", SHA256: "0415ef7778646172f7aad830cbe09a7d903461eef9e15cd34193b85d95dfff0d"},
			"arm64": {URL: "https://dl.k8s.io/release/v1.33.13/bin/linux/arm64/kubelet", SHA256: "db573f065eb9f9153b60270b209ea7992b79849ecac4387dbda88401fb2ed0ff"},
		},
		CNIPlugins: cniPluginsV091,
		Images: map[string]string{
			"pause":                    pause3101,
			"cloud-controller-manager": "sha256:b54bc094711e9d7ace6c9bab3d6f02a598e7570ac1fedd6341940e1de79ea476",
		},
	},
	"v1.34.4": {
		Kubelet: map[string]construct.ArtifactSource{
			"amd64": {URL: "https://dl.k8s.io/release/v1.34.4/bin/linux/amd64/kubelet", SHA256: "03b8fea715a7ef82eeaf518dee34c72670c57cc7bc40dc1320c04fbf4f15172f"},
			"arm64": {URL: "https://dl.k8s.io/release/v1.34.4/bin/linux/arm64/kubelet", SHA256: "c78845473c434ee85a2444eeab87f8b20f524e3ab6854a078f79468f44aad8f5"},
		},
		CNIPlugins: cniPluginsV091,
		Images: map[string]string{
			"pause":                    pause3101,
			"cloud-controller-manager": "sha256:ab45cec4a1ee68a556d09a362746db8fd66b258101aefcf0542f51e960248810",
		},
	},
}

// Pins the releases share.
var (
	cniPluginsV091 = map[string]construct.ArtifactSource{
		"amd64": {URL: "https://github.com/containernetworking/plugins/releases/download/v0.9.1/cni-plugins-linux-amd64-v0.9.1.tgz", SHA256: "962100bbc4baeaaa5748cdbfce941f756b1531c2eadb290129401498bfac21e7"},
		"arm64": {URL: "https://github.com/containernetworking/plugins/releases/download/v0.9.1/cni-plugins-linux-arm64-v0.9.1.tgz", SHA256: "ef17764ffd6cdcb16d76401bac1db6acc050c9b088f1be5efa0e094ea3b01df0"},
	}
	pause3101 = "sha256:278fb9dbcca9518083ad1e11276933a2e96f23de604a3a08cc3c80002767d24c"
)

// UpstreamGaps is, for a cluster without an artifact folder (upstream
// mode), a fatal at kubernetesVersion naming every binary of the release
// that has no pinned upstream sha256 for an architecture: a machine could
// neither fetch nor verify it. An image without a pinned digest is no gap
// (containerd pulls it by tag); a binary has no such fallback. With
// artifacts.mirror every artifact comes from the folder, pinned by its own
// hash, and nothing is missing.
func (r Release) UpstreamGaps() diag.List {
	p := pins[r.Kubernetes]
	var gaps []string
	for _, b := range []struct {
		name    string
		sources map[string]construct.ArtifactSource
	}{{"kubelet " + r.Kubernetes, p.Kubelet}, {"cni-plugins " + r.CNIPlugins, p.CNIPlugins}} {
		var archs []string
		for _, arch := range Archs {
			if src, ok := b.sources[arch]; !ok || src.URL == "" || src.SHA256 == "" {
				archs = append(archs, arch)
			}
		}
		if len(archs) > 0 {
			gaps = append(gaps, b.name+" ("+strings.Join(archs, ", ")+")")
		}
	}
	if len(gaps) == 0 {
		return nil
	}
	return diag.List{diag.Fatalf("Kubernetes %s without an artifact folder: no upstream sha256 is pinned for %s, so the machines could not verify the download",
		r.Kubernetes, strings.Join(gaps, " and ")).At("kubernetesVersion").
		WithHint("set artifacts.mirror (air-gapped mode: every binary and image comes from the artifact folder kube-aws uploads, `make artifacts` builds it), or choose a version whose upstream pins are complete; docs/upstream-pins.md lists the gaps")}
}

// Archs are the architectures kube-aws runs machines of.
var Archs = []string{"amd64", "arm64"}

// CNIPluginFiles are the CNI plugins the nodes install from the
// containernetworking/plugins release: loopback (every pod's lo), bridge and
// host-local (what flannel delegates to), portmap (hostPort), flannel (the
// meta plugin the flannel add-on configures; v0.9.1 is the last release
// that has it).
var CNIPluginFiles = []string{"bridge", "flannel", "host-local", "loopback", "portmap"}

// Artifacts are the binaries and images of the release the nodes install:
// every node the kubelet, the CNI plugins, pause, kube-proxy and CoreDNS;
// controllers also the control plane's images and the cloud controller
// manager. Without a mirror (mirror false) an image with no pinned digest
// is left out: containerd pulls it by tag.
func (r Release) Artifacts(mirror bool, cniBinDir, kubeletPath string) []construct.Artifact {
	p := pins[r.Kubernetes]
	var out []construct.Artifact
	both := []construct.Target{{Role: construct.Controller}, {Role: construct.Worker}}
	add := func(targets []construct.Target, a construct.Artifact) {
		for _, t := range targets {
			a.Target = t
			out = append(out, a)
		}
	}
	add(both, construct.Artifact{Name: "kubelet", Version: r.Kubernetes, Kind: construct.Binary,
		Files: []construct.ArtifactFile{{Name: "kubelet", Path: kubeletPath, Mode: "0755"}}, Sources: p.Kubelet})
	cni := construct.Artifact{Name: "cni-plugins", Version: r.CNIPlugins, Kind: construct.Binary, Sources: map[string]construct.ArtifactSource{}}
	for _, f := range CNIPluginFiles {
		cni.Files = append(cni.Files, construct.ArtifactFile{Name: f, Path: cniBinDir + "/" + f, Mode: "0755"})
	}
	for arch, src := range p.CNIPlugins {
		src.Members = map[string]string{}
		for _, f := range CNIPluginFiles {
			src.Members[f] = "./" + f
		}
		cni.Sources[arch] = src
	}
	add(both, cni)
	image := func(targets []construct.Target, name, version, reference string) {
		sources := map[string]construct.ArtifactSource{}
		for _, arch := range Archs {
			sources[arch] = construct.ArtifactSource{Digest: p.Images[name]}
		}
		if p.Images[name] == "" && !mirror {
			return
		}
		add(targets, construct.Artifact{Name: name, Version: version, Kind: construct.Image, Reference: reference, Sources: sources})
	}
	controller := []construct.Target{{Role: construct.Controller}}
	image(both, "pause", r.Pause, r.PauseImage())
	image(both, "kube-proxy", r.Kubernetes, r.Image("kube-proxy"))
	image(both, "coredns", r.CoreDNS, r.CoreDNSImage())
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		image(controller, c, r.Kubernetes, r.Image(c))
	}
	image(controller, "cloud-controller-manager", r.CloudControllerManager, r.CloudControllerManagerImage())
	return out
}
