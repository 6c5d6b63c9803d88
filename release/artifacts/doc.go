// Package artifacts builds kube-aws's air-gapped artifact folder: every
// binary and image a cluster machine runs that its machine image lacks,
// built here from the Go module proxy (Kubernetes, etcd, the CNI plugins,
// CoreDNS, flannel, the AWS cloud controller manager, pause) and from Debian
// packages (iptables for kube-proxy and flannel), laid out as the cluster
// design fixes it:
//
//	<dir>/<name>/<version>/<os>-<arch>/<file>
//
// The folder holds every Kubernetes version the builder knows (or the ones
// Options.Kubernetes names): each release's kubelet, control-plane and
// kube-proxy images and cloud controller manager, built from that release's
// scratch modules, and once the artifacts the releases share.
//
// Images are OCI archives (an image layout in a tar) with zstd layers,
// written with go-containerregistry and named with their upstream
// references. Each Go build runs in a scratch
// module under modules/ with a committed go.mod and go.sum; a nested module,
// so that the main module's `go test ./...` never compiles Kubernetes.
//
// Builds are incremental: besides the Go build cache, a stamp per step skips
// any step whose inputs (module sources and versions, build flags, the
// builder's own source, the Go version) are unchanged and whose outputs are
// in place. docs/artifacts.md describes the folder, the sources, and the
// sizes and times measured.
package artifacts
