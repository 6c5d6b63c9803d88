package nodeplan

import (
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"
)

// ArtifactsPlan (ArtifactsPath) lists the binaries and container images a
// role needs, each with a source per CPU architecture. The `artifacts` step
// picks the source of the machine's architecture (kube-aws-node is built
// per architecture, so it is its own), downloads it, checks its sha256
// before using a byte of it, and installs it. Verified downloads are kept
// in StateDir/cache, so a second run downloads nothing.
type ArtifactsPlan struct {
	Binaries []Binary `json:"binaries,omitempty"`
	Images   []Image  `json:"images,omitempty"`
}

// Arch is a CPU architecture by Go's name for it.
type Arch string

const (
	AMD64 Arch = "amd64"
	ARM64 Arch = "arm64"
)

// Archs lists the architectures kube-aws builds machines for.
var Archs = []Arch{AMD64, ARM64}

// Binary is an executable (or any file) to install.
type Binary struct {
	// Name says what it is in messages ("kubelet").
	Name string `json:"name"`
	// Path is where it is installed, replacing what is there.
	Path string `json:"path"`
	// Mode is octal; "0755" when empty.
	Mode string `json:"mode,omitempty"`
	// Sources has one source per architecture the role may run on.
	Sources map[Arch]Source `json:"sources"`
}

// Source is where a binary comes from: the cluster's assets (air-gapped
// mode) or an upstream URL. SHA256 is always the downloaded object's.
type Source struct {
	// AssetKey is a key relative to the cluster's prefix, assets/<sha256>:
	// kube-aws uploaded it from the operator's artifact folder.
	AssetKey string `json:"assetKey,omitempty"`
	// URL is an upstream https URL, reached directly (through NAT from a
	// private subnet).
	URL string `json:"url,omitempty"`
	// SHA256 is the digest of the object at AssetKey or URL.
	SHA256 string `json:"sha256"`
	// Member, for a .tar.gz/.tgz/.tar object, is the path inside it of the
	// file to install ("etcd-v3.6.5-linux-amd64/etcd"); empty means the
	// object itself is the file.
	Member string `json:"member,omitempty"`
}

// Image is a container image to import into containerd's k8s.io namespace
// (the one the kubelet uses), so that no pod waits for a registry.
type Image struct {
	// Name says what it is in messages ("pause").
	Name string `json:"name"`
	// Reference is the name the kubelet and pods ask for, tag included
	// ("registry.k8s.io/pause:3.10.1"); the image is known by it once
	// imported.
	Reference string `json:"reference"`
	// Sources has one source per architecture the role may run on.
	Sources map[Arch]ImageSource `json:"sources"`
}

// ImageSource is either an image tarball in the cluster's assets
// (air-gapped mode: AssetKey and SHA256, a docker-archive or OCI archive
// tagged with Reference) or the upstream image pinned by Digest.
type ImageSource struct {
	AssetKey string `json:"assetKey,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	// Digest is the upstream manifest (or index) digest, "sha256:<hex>":
	// the image is pulled as <repository>@<digest> and tagged Reference.
	Digest string `json:"digest,omitempty"`
}

// Validate implements Plan.
func (p *ArtifactsPlan) Validate() error {
	var c checker
	paths := map[string]int{}
	for i, b := range p.Binaries {
		field := fmt.Sprintf("binaries[%d]", i)
		if b.Name == "" {
			c.add(field+".name", "missing")
		}
		c.absPath(field+".path", b.Path)
		if j, dup := paths[b.Path]; dup && b.Path != "" {
			c.add(field+".path", "%s is installed by binaries[%d] too", b.Path, j)
		}
		paths[b.Path] = i
		c.mode(field+".mode", b.Mode)
		c.archs(field+".sources", len(b.Sources), sortedArchs(b.Sources))
		for _, a := range sortedArchs(b.Sources) {
			s, sf := b.Sources[a], fmt.Sprintf("%s.sources.%s", field, a)
			c.sha256(sf+".sha256", s.SHA256)
			switch {
			case (s.AssetKey == "") == (s.URL == ""):
				c.add(sf, "give exactly one of assetKey (air-gapped) and url (upstream)")
			case s.AssetKey != "":
				c.assetKey(sf+".assetKey", s.AssetKey, s.SHA256)
			default:
				c.url(sf+".url", s.URL)
			}
			if s.Member != "" && (path.IsAbs(s.Member) || path.Clean(s.Member) != strings.TrimPrefix(s.Member, "./") || strings.HasPrefix(path.Clean(s.Member), "..")) {
				c.add(sf+".member", "%q: want a clean relative path inside the archive", s.Member)
			}
		}
	}
	refs := map[string]int{}
	for i, im := range p.Images {
		field := fmt.Sprintf("images[%d]", i)
		if im.Name == "" {
			c.add(field+".name", "missing")
		}
		if err := checkReference(im.Reference); err != nil {
			c.add(field+".reference", "%v", err)
		}
		if j, dup := refs[im.Reference]; dup && im.Reference != "" {
			c.add(field+".reference", "%s is imported by images[%d] too", im.Reference, j)
		}
		refs[im.Reference] = i
		c.archs(field+".sources", len(im.Sources), sortedArchs(im.Sources))
		for _, a := range sortedArchs(im.Sources) {
			s, sf := im.Sources[a], fmt.Sprintf("%s.sources.%s", field, a)
			switch {
			case (s.AssetKey == "") == (s.Digest == ""):
				c.add(sf, "give exactly one of assetKey with sha256 (air-gapped) and digest (upstream)")
			case s.AssetKey != "":
				c.sha256(sf+".sha256", s.SHA256)
				c.assetKey(sf+".assetKey", s.AssetKey, s.SHA256)
			default:
				if s.SHA256 != "" {
					c.add(sf+".sha256", "only for an assetKey: an upstream image is pinned by digest")
				}
				if !strings.HasPrefix(s.Digest, "sha256:") || !IsSHA256(strings.TrimPrefix(s.Digest, "sha256:")) {
					c.add(sf+".digest", "%q: want sha256:<64 hex digits>", s.Digest)
				}
			}
		}
	}
	return c.err()
}

func (c *checker) archs(field string, n int, archs []Arch) {
	if n == 0 {
		c.add(field, "missing: want a source for %v (at least the architectures the role runs on)", Archs)
	}
	for _, a := range archs {
		if a != AMD64 && a != ARM64 {
			c.add(field, "%q is not an architecture: want one of %v", a, Archs)
		}
	}
}

func (c *checker) url(field, s string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		c.add(field, "%q is not an http(s) URL", s)
	}
}

func sortedArchs[T any](m map[Arch]T) []Arch {
	out := make([]Arch, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// checkReference checks an image reference with a registry host and a tag
// ("registry.k8s.io/pause:3.10.1"): the name containerd stores it under.
func checkReference(ref string) error {
	if ref == "" {
		return fmt.Errorf("missing: want an image reference such as registry.k8s.io/pause:3.10.1")
	}
	repo, tag, ok := SplitReference(ref)
	if !ok || tag == "" {
		return fmt.Errorf("%q: want <registry>/<repository>:<tag>, such as registry.k8s.io/pause:3.10.1 (a docker.io image is docker.io/library/<name>:<tag>)", ref)
	}
	host, _, _ := strings.Cut(repo, "/")
	if !strings.ContainsAny(host, ".:") && host != "localhost" {
		return fmt.Errorf("%q: the first element %q is not a registry host; containerd stores images by their full name (docker.io/library/<name>:<tag>)", ref, host)
	}
	return nil
}

// SplitReference splits "<repository>:<tag>" into repository and tag; a
// digest reference (with "@") is not a tagged reference.
func SplitReference(ref string) (repo, tag string, ok bool) {
	if strings.ContainsAny(ref, "@ \t\n") {
		return "", "", false
	}
	i := strings.LastIndexByte(ref, ':')
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ref, "", strings.Contains(ref, "/")
	}
	repo, tag = ref[:i], ref[i+1:]
	return repo, tag, strings.Contains(repo, "/") && tag != ""
}
