package oci

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The shape of a kube-aws plugin in a registry (docs/plugins.md, section 12):
//
//	image index  (annotations: the plugin's info)
//	├── manifest for linux/amd64  (artifactType ArtifactType, empty config)
//	│   ├── layer: the executable, titled with the plugin's name
//	│   └── layer per file beside it, titled with its slash path
//	└── manifest for darwin/arm64 ...
//
// Every file is one layer holding its bytes as they are (not a tarball), so
// a layer's digest is the sha256 of the file: plugins.lock can record every
// platform's hashes from the manifests alone, without downloading them.
const (
	// ArtifactType marks a manifest (and the index) as a kube-aws plugin.
	ArtifactType = "application/vnd.kube-aws.plugin.v1"
	// MediaTypeExecutable is the layer that kube-aws starts.
	MediaTypeExecutable = "application/vnd.kube-aws.plugin.executable.v1"
	// MediaTypeFile is any other file of the plugin (a script plugin's code).
	MediaTypeFile = "application/vnd.kube-aws.plugin.file.v1"

	annotationPrefix = "io.github.kube-aws.plugin."
	// AnnotationName and the others carry the plugin's info, as GetInfo
	// reported it when the artifact was pushed.
	AnnotationName             = annotationPrefix + "name"
	AnnotationVersion          = annotationPrefix + "version"
	AnnotationProtocolVersions = annotationPrefix + "protocol-versions"
	AnnotationStages           = annotationPrefix + "stages"
	AnnotationDescription      = annotationPrefix + "description"
	// AnnotationPlatform is on each manifest: os/arch, as in the index.
	AnnotationPlatform = annotationPrefix + "platform"
	// AnnotationMode is a layer's file mode, octal ("0644").
	AnnotationMode = annotationPrefix + "mode"
)

// Info is what an artifact says about the plugin it holds.
type Info struct {
	Name             string   `json:"name"`
	Version          string   `json:"version"`
	Description      string   `json:"description,omitempty"`
	ProtocolVersions []int    `json:"protocolVersions"`
	Stages           []string `json:"stages"`
}

// annotations writes info as annotations, with the standard title, version
// and description keys as well so that generic tools show them.
func (i Info) annotations() map[string]string {
	pv := make([]string, len(i.ProtocolVersions))
	for k, v := range i.ProtocolVersions {
		pv[k] = strconv.Itoa(v)
	}
	a := map[string]string{
		AnnotationName:             i.Name,
		AnnotationVersion:          i.Version,
		AnnotationProtocolVersions: strings.Join(pv, ","),
		AnnotationStages:           strings.Join(i.Stages, ","),
		ocispec.AnnotationTitle:    i.Name,
		ocispec.AnnotationVersion:  i.Version,
	}
	if i.Description != "" {
		a[AnnotationDescription] = i.Description
		a[ocispec.AnnotationDescription] = i.Description
	}
	return a
}

// infoFrom reads the info annotations; what identifies a kube-aws plugin
// (its name) must be there.
func infoFrom(a map[string]string) (Info, error) {
	i := Info{
		Name:        a[AnnotationName],
		Version:     a[AnnotationVersion],
		Description: a[AnnotationDescription],
	}
	if i.Name == "" {
		return i, fmt.Errorf("it has no %s annotation, so it is not a kube-aws plugin (push plugins with `kube-aws plugins push`)", AnnotationName)
	}
	for _, s := range strings.Split(a[AnnotationProtocolVersions], ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return i, fmt.Errorf("its %s annotation %q is not a list of numbers", AnnotationProtocolVersions, a[AnnotationProtocolVersions])
		}
		i.ProtocolVersions = append(i.ProtocolVersions, n)
	}
	for _, s := range strings.Split(a[AnnotationStages], ",") {
		if s = strings.TrimSpace(s); s != "" {
			i.Stages = append(i.Stages, s)
		}
	}
	return i, nil
}

// SpeaksAny says whether the plugin speaks one of the protocol versions.
func (i Info) SpeaksAny(versions []int) bool {
	for _, v := range i.ProtocolVersions {
		if slices.Contains(versions, v) {
			return true
		}
	}
	return false
}

// platformString is an OCI platform as os/arch (with /variant if any).
func platformString(p *ocispec.Platform) string {
	if p == nil {
		return ""
	}
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// parsePlatform reads os/arch[/variant].
func parsePlatform(s string) (ocispec.Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return ocispec.Platform{}, fmt.Errorf("platform %q is not os/arch (linux/amd64, darwin/arm64...)", s)
	}
	p := ocispec.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}
