package artifacts

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/kube-aws/kube-aws/core/kubeversion"
)

// Versions of the artifacts every Kubernetes release of the folder shares:
// one build and one file, however many Kubernetes versions the folder holds.
// They work with every release of kubernetesReleases (etcd 3.6 serves the
// v3 API both API servers speak; pause, CoreDNS, flannel and the CNI plugins
// talk to no Kubernetes component they could be out of step with), so an
// upgrade changes only what follows the Kubernetes version.
const (
	EtcdVersion       = "v3.6.5"
	CNIPluginsVersion = "v0.9.1"
	CoreDNSVersion    = "v1.12.1"
	FlannelVersion    = "v0.27.4"
	PauseVersion      = "3.10.1"
)

// KubernetesRelease is one Kubernetes version the folder can hold, with what
// follows it: the kubelet, the images of kube-apiserver,
// kube-controller-manager, kube-scheduler and kube-proxy (one `go build` of
// the release's scratch module, modules/kubernetes-<minor>), and the AWS
// cloud controller manager of the same minor version (modules/
// cloud-provider-aws-<minor>), which must not be newer than the API server
// it talks to.
type KubernetesRelease struct {
	// Version is the release tag, v1.34.4.
	Version string
	// BuildDate is the tag's time as the module proxy reports it (`go list
	// -m -json k8s.io/kubernetes@<Version>`): the binaries' buildDate, so
	// that a rebuild is byte-identical.
	BuildDate string
	// CloudProviderAWS is the k8s.io/cloud-provider-aws release built for
	// the cloud-controller-manager image.
	CloudProviderAWS string
}

// kubernetesReleases are the Kubernetes versions the builder knows, oldest
// first: the ones the kubernetes plugin pins (builtin/kubernetes/internal/
// versions), each with its own scratch modules.
var kubernetesReleases = []KubernetesRelease{
	{Version: "v1.33.13", BuildDate: "2026-06-11T16:59:07Z", CloudProviderAWS: "v1.33.4"},
	{Version: "v1.34.4", BuildDate: "2026-02-10T12:53:36Z", CloudProviderAWS: "v1.34.3"},
}

// KubernetesReleases returns the Kubernetes versions the builder knows,
// oldest first.
func KubernetesReleases() []KubernetesRelease {
	return append([]KubernetesRelease(nil), kubernetesReleases...)
}

// KubernetesVersions lists the versions of KubernetesReleases.
func KubernetesVersions() []string {
	var out []string
	for _, k := range kubernetesReleases {
		out = append(out, k.Version)
	}
	return out
}

// minor is the release's minor version, "34", and its scratch modules'
// suffix, "1.34".
func (k KubernetesRelease) minor() (minor, suffix string) {
	v, err := kubeversion.Parse(k.Version)
	if err != nil {
		panic("artifacts: kubernetesReleases holds " + k.Version + ": " + err.Error())
	}
	return strconv.Itoa(v.Minor), v.MinorString()
}

// kubernetesBuild and cloudProviderBuild name the release's Go builds
// (keys of goBuilds): one per version, so that two releases never share
// build outputs or stamps.
func (k KubernetesRelease) kubernetesBuild() string { return "kubernetes-" + k.Version }
func (k KubernetesRelease) cloudProviderBuild() string {
	return "cloud-provider-aws-" + k.CloudProviderAWS
}

// OS is the only operating system the folder holds.
const OS = "linux"

// Architectures are the CPU architectures the builder can fill a folder for.
var Architectures = []string{"amd64", "arm64"}

// Artifact is one entry of the folder: <name>/<version>/<os>-<arch>/ holding
// either binaries or one image.tar.
type Artifact struct {
	Name    string
	Version string
	// Files are the file names in the artifact's folder: binaries, or
	// "image.tar" for an image.
	Files []string
	// Image is the upstream reference an image is tagged with; empty for
	// binaries.
	Image string

	binaries []binarySource // binaries: where each file comes from
	image    *imageSpec     // images: how the image is assembled
}

// Dir is the artifact's folder under the artifact folder root.
func (a Artifact) Dir(root, arch string) string {
	return path.Join(root, a.Name, a.Version, OS+"-"+arch)
}

// binarySource names one output of a Go build.
type binarySource struct {
	build string // key of goBuilds
	file  string // output file name of that build
}

// goBinary is one main package of a Go build and the file it becomes.
type goBinary struct {
	pkg  string
	file string
}

// goBuild is one `go build` in a scratch module under modules/.
type goBuild struct {
	module string // folder under modules/
	// ldflags beyond "-s -w" (symbol tables stripped, as every upstream
	// release build does).
	ldflags []string
	// cgoArchs lists the architectures built with cgo; every other one is
	// built with CGO_ENABLED=0. A cgo build links statically.
	cgoArchs []string
	tags     []string
	bins     []goBinary
}

func (b goBuild) cgo(arch string) bool {
	for _, a := range b.cgoArchs {
		if a == arch {
			return true
		}
	}
	return false
}

// kubeVersionFlags are the -X flags hack/lib/version.sh sets, for both
// packages that report a version. buildDate is the release tag's time as the
// module proxy reports it, so that a rebuild is byte-identical.
func kubeVersionFlags(pkgs []string, version, major, minor, date string) []string {
	var flags []string
	for _, p := range pkgs {
		flags = append(flags,
			"-X "+p+".gitVersion="+version,
			"-X "+p+".gitMajor="+major,
			"-X "+p+".gitMinor="+minor,
			"-X "+p+".buildDate="+date)
	}
	return flags
}

// kubernetesBinaries are the programs a Kubernetes release's machines run,
// built by one `go build` so that the packages they share compile once: the
// kubelet on every node, the control plane on the controllers and
// kube-proxy on every node. Nothing else of k8s.io/kubernetes (kubectl,
// kubeadm) is built.
var kubernetesBinaries = []goBinary{
	{"k8s.io/kubernetes/cmd/kube-apiserver", "kube-apiserver"},
	{"k8s.io/kubernetes/cmd/kube-controller-manager", "kube-controller-manager"},
	{"k8s.io/kubernetes/cmd/kube-scheduler", "kube-scheduler"},
	{"k8s.io/kubernetes/cmd/kube-proxy", "kube-proxy"},
	{"k8s.io/kubernetes/cmd/kubelet", "kubelet"},
}

// goBuilds are the Go builds, keyed by name: the shared ones (named after
// their module's folder under modules/) and two per Kubernetes release.
var goBuilds = func() map[string]goBuild {
	builds := map[string]goBuild{}
	for name, b := range sharedGoBuilds {
		builds[name] = b
	}
	for _, k := range kubernetesReleases {
		minor, suffix := k.minor()
		builds[k.kubernetesBuild()] = goBuild{
			module: "kubernetes-" + suffix,
			ldflags: kubeVersionFlags([]string{"k8s.io/client-go/pkg/version", "k8s.io/component-base/version"},
				k.Version, "1", minor, k.BuildDate),
			bins: kubernetesBinaries,
		}
		builds[k.cloudProviderBuild()] = goBuild{
			module:  "cloud-provider-aws-" + suffix,
			ldflags: []string{"-X k8s.io/component-base/version.gitVersion=" + k.CloudProviderAWS},
			bins:    []goBinary{{"k8s.io/cloud-provider-aws/cmd/aws-cloud-controller-manager", "aws-cloud-controller-manager"}},
		}
	}
	return builds
}()

// sharedGoBuilds are the builds of the artifacts every release shares.
var sharedGoBuilds = map[string]goBuild{
	"etcd": {
		module: "etcd",
		bins: []goBinary{
			{"go.etcd.io/etcd/server/v3", "etcd"},
			{"go.etcd.io/etcd/etcdctl/v3", "etcdctl"},
			{"go.etcd.io/etcd/etcdutl/v3", "etcdutl"},
		},
	},
	"cni-plugins": {
		module:  "cni-plugins",
		ldflags: []string{"-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=" + CNIPluginsVersion},
		bins: []goBinary{
			{"github.com/containernetworking/plugins/plugins/meta/flannel", "flannel"},
			{"github.com/containernetworking/plugins/plugins/main/bridge", "bridge"},
			{"github.com/containernetworking/plugins/plugins/ipam/host-local", "host-local"},
			{"github.com/containernetworking/plugins/plugins/main/loopback", "loopback"},
			{"github.com/containernetworking/plugins/plugins/meta/portmap", "portmap"},
		},
	},
	"coredns": {
		module: "coredns",
		// 707c7c1 is the commit of the v1.12.1 tag (the module proxy's
		// Origin record), what CoreDNS's Makefile stamps.
		ldflags: []string{"-X github.com/coredns/coredns/coremain.GitCommit=707c7c1"},
		bins:    []goBinary{{"github.com/coredns/coredns", "coredns"}},
	},
	"flannel": {
		module:  "flannel",
		ldflags: []string{"-X github.com/flannel-io/flannel/pkg/version.Version=" + FlannelVersion},
		// On amd64 flannel's UDP backend is C (pkg/backend/udp needs cgo
		// there, so CGO_ENABLED=0 does not compile); upstream builds amd64
		// with cgo and links statically too. netgo and osusergo keep glibc's
		// resolver and user lookup out of the static binary.
		cgoArchs: []string{"amd64"},
		tags:     []string{"netgo", "osusergo"},
		bins:     []goBinary{{"github.com/flannel-io/flannel", "flanneld"}},
	},
	"pause": {
		module:  "pause",
		ldflags: []string{"-X main.version=" + PauseVersion},
		bins:    []goBinary{{"github.com/kube-aws/kube-aws/release/artifacts/modules/pause", "pause"}},
	},
}

// debianSet is a set of Debian packages (with their dependencies) extracted
// offline with mmdebstrap, and what the builder makes of it.
type debianSet struct {
	packages []string
	// keep lists the paths (relative, prefixes) taken from the extracted tree;
	// empty keeps everything but the paths every set drops (debianDrop).
	keep []string
	// links are symlinks added to the layer: path -> target. They stand in
	// for what maintainer scripts (update-alternatives) would have made.
	links map[string]string
	// bundle makes a CA bundle file instead of a layer.
	bundle bool
}

// debianDrop are paths no image needs: package manager state, documentation,
// device nodes, locales and glibc's character set converters.
var debianDrop = []string{
	"dev", "proc", "sys", "run", "tmp", "var",
	"etc/apt", "etc/dpkg", "etc/hostname", "etc/resolv.conf", "etc/fstab",
	"etc/ld.so.conf", "etc/ld.so.conf.d",
	"usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/lintian", "usr/share/locale",
	"usr/lib/x86_64-linux-gnu/gconv", "usr/lib/aarch64-linux-gnu/gconv",
}

// busyboxApplets are the busybox commands the flannel image offers: upstream
// is an Alpine image, and the flannel chart's install-cni init container runs
// `cp` from it.
var busyboxApplets = []string{
	"cat", "chmod", "cp", "echo", "grep", "ln", "ls", "mkdir", "mv", "rm", "sed", "sh", "sleep", "test", "wc",
}

// debianSuite is the Debian release of the machine image and of every
// package taken into an image.
const debianSuite = "bookworm"

var debianSets = map[string]debianSet{
	// iptables in nf_tables mode, the default of Debian bookworm and so of
	// the machine image: rules made in a container and on the host land in
	// the same tables. conntrack is what kube-proxy runs to flush UDP flows.
	"iptables": {
		packages: []string{"iptables", "conntrack"},
		links: map[string]string{
			"usr/sbin/iptables":          "iptables-nft",
			"usr/sbin/iptables-save":     "iptables-nft-save",
			"usr/sbin/iptables-restore":  "iptables-nft-restore",
			"usr/sbin/ip6tables":         "ip6tables-nft",
			"usr/sbin/ip6tables-save":    "ip6tables-nft-save",
			"usr/sbin/ip6tables-restore": "ip6tables-nft-restore",
		},
	},
	"busybox": {
		packages: []string{"busybox-static"},
		keep:     []string{"bin/busybox"},
		links:    appletLinks(),
	},
	"ca-certificates": {
		packages: []string{"ca-certificates"},
		keep:     []string{"usr/share/ca-certificates/mozilla"},
		bundle:   true,
	},
}

func appletLinks() map[string]string {
	links := map[string]string{}
	for _, a := range busyboxApplets {
		links["bin/"+a] = "busybox"
	}
	return links
}

// layerKind says where an image layer comes from.
type layerKind int

const (
	// layerBase: what distroless/static gives the upstream images: passwd and
	// group (root, nobody, nonroot), nsswitch.conf, the CA bundle, /tmp.
	layerBase layerKind = iota
	// layerDebian: a Debian set's layer.
	layerDebian
	// layerFiles: binaries from Go builds.
	layerFiles
)

type layerSpec struct {
	kind   layerKind
	debian string      // layerDebian: key of debianSets
	files  []imageFile // layerFiles
}

// imageFile is one binary placed in an image.
type imageFile struct {
	path string // absolute path in the image
	from binarySource
	// netBindService gives the file cap_net_bind_service=+ep, as upstream's
	// setcap does, so that a non-root process can bind ports below 1024.
	netBindService bool
}

// imageSpec is how one image is assembled; the config mirrors the upstream
// image's (see docs/artifacts.md for where they differ).
type imageSpec struct {
	layers       []layerSpec
	entrypoint   []string
	env          []string
	user         string
	workingDir   string
	exposedPorts []string
}

// distrolessEnv is the environment of the distroless base images that the
// upstream Kubernetes, CoreDNS and cloud controller manager images build on.
var distrolessEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
}

// defaultPath is what BuildKit gives an image that sets no PATH (pause, the
// Alpine-based flannel image).
var defaultPath = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

// kubeServerImage is an image of build/server-image: the binary in
// /usr/local/bin on registry.k8s.io/build-image/go-runner (distroless/static
// plus /go-runner). go-runner comes from k8s.io/release, which the module
// proxy refuses, so the image has no entrypoint: pods name the binary in
// `command`, as kubeadm's static pods and DaemonSets do.
func kubeServerImage(k KubernetesRelease, name string, netBindService bool, extra ...layerSpec) Artifact {
	layers := append([]layerSpec{{kind: layerBase}}, extra...)
	layers = append(layers, layerSpec{kind: layerFiles, files: []imageFile{{
		path:           "/usr/local/bin/" + name,
		from:           binarySource{k.kubernetesBuild(), name},
		netBindService: netBindService,
	}}})
	return Artifact{
		Name:    name,
		Version: k.Version,
		Files:   []string{imageTar},
		Image:   "registry.k8s.io/" + name + ":" + k.Version,
		image:   &imageSpec{layers: layers, env: distrolessEnv, workingDir: "/"},
	}
}

// imageTar is the file name of every image in the folder.
const imageTar = "image.tar"

// releaseArtifacts are the artifacts that follow one Kubernetes release.
func releaseArtifacts(k KubernetesRelease) []Artifact {
	return []Artifact{
		{
			Name: "kubelet", Version: k.Version, Files: []string{"kubelet"},
			binaries: []binarySource{{k.kubernetesBuild(), "kubelet"}},
		},
		// kube-apiserver gets cap_net_bind_service like upstream's
		// build/server-image/kube-apiserver/Dockerfile.
		kubeServerImage(k, "kube-apiserver", true),
		kubeServerImage(k, "kube-controller-manager", false),
		kubeServerImage(k, "kube-scheduler", false),
		// kube-proxy: upstream builds on distroless-iptables; here the
		// iptables layer comes from Debian bookworm packages.
		kubeServerImage(k, "kube-proxy", false, layerSpec{kind: layerDebian, debian: "iptables"}),
		{
			// cloud-provider-aws's Dockerfile: go-runner base,
			// /bin/aws-cloud-controller-manager as entrypoint.
			Name: "cloud-controller-manager", Version: k.CloudProviderAWS, Files: []string{imageTar},
			Image: "registry.k8s.io/provider-aws/cloud-controller-manager:" + k.CloudProviderAWS,
			image: &imageSpec{
				layers: []layerSpec{
					{kind: layerBase},
					{kind: layerFiles, files: []imageFile{{path: "/bin/aws-cloud-controller-manager", from: binarySource{k.cloudProviderBuild(), "aws-cloud-controller-manager"}}}},
				},
				entrypoint: []string{"/bin/aws-cloud-controller-manager"},
				env:        distrolessEnv,
				workingDir: "/",
			},
		},
	}
}

// shared are the artifacts every Kubernetes release of the folder uses:
// built once, one file each.
var shared = []Artifact{
	{
		Name: "etcd", Version: EtcdVersion, Files: []string{"etcd", "etcdctl", "etcdutl"},
		binaries: []binarySource{{"etcd", "etcd"}, {"etcd", "etcdctl"}, {"etcd", "etcdutl"}},
	},
	{
		Name: "cni-plugins", Version: CNIPluginsVersion,
		Files: []string{"flannel", "bridge", "host-local", "loopback", "portmap"},
		binaries: []binarySource{
			{"cni-plugins", "flannel"}, {"cni-plugins", "bridge"}, {"cni-plugins", "host-local"},
			{"cni-plugins", "loopback"}, {"cni-plugins", "portmap"},
		},
	},
	{
		// build/pause/Dockerfile: FROM scratch, /pause, USER 65535:65535.
		Name: "pause", Version: PauseVersion, Files: []string{imageTar},
		Image: "registry.k8s.io/pause:" + PauseVersion,
		image: &imageSpec{
			layers:     []layerSpec{{kind: layerFiles, files: []imageFile{{path: "/pause", from: binarySource{"pause", "pause"}}}}},
			entrypoint: []string{"/pause"},
			env:        defaultPath,
			user:       "65535:65535",
		},
	},
	{
		// CoreDNS's Dockerfile: distroless/static nonroot, /coredns with
		// cap_net_bind_service, USER nonroot:nonroot, EXPOSE 53 53/udp.
		Name: "coredns", Version: CoreDNSVersion, Files: []string{imageTar},
		Image: "registry.k8s.io/coredns/coredns:" + CoreDNSVersion,
		image: &imageSpec{
			layers: []layerSpec{
				{kind: layerBase},
				{kind: layerFiles, files: []imageFile{{path: "/coredns", from: binarySource{"coredns", "coredns"}, netBindService: true}}},
			},
			entrypoint:   []string{"/coredns"},
			env:          distrolessEnv,
			user:         "nonroot:nonroot",
			workingDir:   "/",
			exposedPorts: []string{"53/tcp", "53/udp"},
		},
	},
	{
		// flannel's images/Dockerfile: Alpine with iptables (nft and legacy),
		// /opt/bin/flanneld as entrypoint. Here: iptables from Debian, busybox
		// for the shell tools the chart's init container uses.
		Name: "flannel", Version: FlannelVersion, Files: []string{imageTar},
		Image: "ghcr.io/flannel-io/flannel:" + FlannelVersion,
		image: &imageSpec{
			layers: []layerSpec{
				{kind: layerBase},
				{kind: layerDebian, debian: "iptables"},
				{kind: layerDebian, debian: "busybox"},
				{kind: layerFiles, files: []imageFile{{path: "/opt/bin/flanneld", from: binarySource{"flannel", "flanneld"}}}},
			},
			entrypoint: []string{"/opt/bin/flanneld"},
			env:        defaultPath,
		},
	},
}

// Catalogue returns every artifact of a folder holding the given Kubernetes
// versions: each release's own artifacts, oldest release first, then the
// shared ones. An artifact two releases have in common (same name and
// version) is listed once.
func Catalogue(releases []KubernetesRelease) []Artifact {
	var out []Artifact
	seen := map[string]bool{}
	add := func(a Artifact) {
		if key := a.Name + "/" + a.Version; !seen[key] {
			seen[key] = true
			out = append(out, a)
		}
	}
	for _, k := range releases {
		for _, a := range releaseArtifacts(k) {
			add(a)
		}
	}
	for _, a := range shared {
		add(a)
	}
	return out
}

// Releases returns the releases of the given Kubernetes versions ("1.34.4"
// or "v1.34.4"), every known one when versions is empty, or an error naming
// the unknown versions and listing the known.
func Releases(versions []string) ([]KubernetesRelease, error) {
	if len(versions) == 0 {
		return KubernetesReleases(), nil
	}
	want := map[string]bool{}
	var unknown []string
	for _, v := range versions {
		p, err := kubeversion.Parse(v)
		if err != nil {
			return nil, fmt.Errorf("Kubernetes version %q: %v; the builder knows %s", v, err, strings.Join(KubernetesVersions(), ", "))
		}
		found := false
		for _, k := range kubernetesReleases {
			if k.Version == p.String() {
				found = true
			}
		}
		if !found {
			unknown = append(unknown, p.String())
		}
		want[p.String()] = true
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown Kubernetes version %s: the builder knows %s (a new one needs its scratch modules under release/artifacts/modules, see docs/artifacts.md)",
			strings.Join(unknown, ", "), strings.Join(KubernetesVersions(), ", "))
	}
	var out []KubernetesRelease
	for _, k := range kubernetesReleases {
		if want[k.Version] {
			out = append(out, k)
		}
	}
	return out, nil
}

// Lookup returns the named artifacts of a folder holding the given
// releases (every artifact when names is empty; a name such as kubelet
// selects it for every release), or an error naming the unknown names and
// listing the known.
func Lookup(releases []KubernetesRelease, names []string) ([]Artifact, error) {
	all := Catalogue(releases)
	if len(names) == 0 {
		return all, nil
	}
	var known []string
	byName := map[string][]Artifact{}
	for _, a := range all {
		if byName[a.Name] == nil {
			known = append(known, a.Name)
		}
		byName[a.Name] = append(byName[a.Name], a)
	}
	var out []Artifact
	var unknown []string
	for _, n := range names {
		as, ok := byName[n]
		if !ok {
			unknown = append(unknown, n)
			continue
		}
		out = append(out, as...)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown artifact %s: the folder holds %s", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return out, nil
}

// needs lists the Go builds and Debian sets the artifacts are made from.
func needs(arts []Artifact) (builds, debs []string) {
	bs, ds := map[string]bool{}, map[string]bool{}
	for _, a := range arts {
		for _, b := range a.binaries {
			bs[b.build] = true
		}
		if a.image == nil {
			continue
		}
		for _, l := range a.image.layers {
			switch l.kind {
			case layerBase:
				ds["ca-certificates"] = true
			case layerDebian:
				ds[l.debian] = true
			case layerFiles:
				for _, f := range l.files {
					bs[f.from.build] = true
				}
			}
		}
	}
	return sortedKeys(bs), sortedKeys(ds)
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
