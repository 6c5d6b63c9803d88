package merge

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/kube-aws/kube-aws/core/construct"
)

// isSHA256 reports whether s is a sha256 in lower-case hex.
func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

type artifactAcc struct {
	a     construct.Artifact
	owner string
}

// addArtifact merges one artifact. An artifact is known by its name: the
// same name from two plugins (or for two targets) must be the same release,
// identical in everything but its target; one entry per target is kept.
func (m *merger) addArtifact(plugin string, in construct.Artifact) {
	path := fmt.Sprintf("constructs.artifacts[%s]", in.Name)
	if msg := artifactProblem(&in); msg != "" {
		m.fatal(plugin, path, fmt.Sprintf("plugin %q sends artifact %q for %s that %s", plugin, in.Name, in.Target, msg),
			"an artifact names a release (name, version, kind binary or image), its files or image reference, and a pinned source per architecture (docs/plugins.md)")
		return
	}
	in.Plugin = plugin
	// kube-aws fills Mirrored; whatever a plugin sent there is not trusted.
	sources := make(map[string]construct.ArtifactSource, len(in.Sources))
	for arch, src := range in.Sources {
		src.Mirrored = nil
		sources[arch] = src
	}
	in.Sources = sources
	def := artifactDefinition(in)
	if first := m.artifactByName[in.Name]; first != nil {
		if fd := artifactDefinition(first.a); !jsonEqual(fd, def) {
			m.conflict(plugin, first.owner, path,
				fmt.Sprintf("artifact %s is defined differently by %s: %s", in.Name, by(first.owner, plugin), describeJSONDiff(first.owner, fd, plugin, def)),
				resolveHint(first.owner, plugin, "the artifact")+" (one release of a name per cluster)")
			return
		}
	} else {
		m.artifactByName[in.Name] = &artifactAcc{a: in, owner: plugin}
	}
	key := targetName{in.Target, in.Name}
	if m.artifactSeen[key] {
		return
	}
	m.artifactSeen[key] = true
	m.artifacts = append(m.artifacts, artifactAcc{a: in, owner: plugin})
}

// artifactDefinition is what two contributions of one artifact must agree
// on: everything but the target and the plugin.
func artifactDefinition(a construct.Artifact) []byte {
	a.Target, a.Plugin = construct.Target{}, ""
	b, _ := json.Marshal(a)
	return b
}

// artifactProblem says what is wrong with an artifact, "" when nothing.
func artifactProblem(a *construct.Artifact) string {
	switch {
	case a.Name == "" || path.Base(a.Name) != a.Name || a.Name == "." || a.Name == "..":
		return "has no usable name (one path element: it names a folder of the mirror)"
	case a.Version == "" || path.Base(a.Version) != a.Version || a.Version == "." || a.Version == "..":
		return "has no usable version (one path element)"
	case len(a.Sources) == 0:
		return "has no source for any architecture"
	}
	archs := make([]string, 0, len(a.Sources))
	for arch := range a.Sources {
		archs = append(archs, arch)
	}
	sort.Strings(archs)
	for _, arch := range archs {
		if arch != "amd64" && arch != "arm64" {
			return fmt.Sprintf("has a source for architecture %q (amd64 or arm64)", arch)
		}
	}
	switch a.Kind {
	case construct.Binary:
		if len(a.Files) == 0 {
			return "is a binary release without files"
		}
		if a.Reference != "" {
			return "is a binary release with an image reference"
		}
		seen := map[string]bool{}
		for _, f := range a.Files {
			switch {
			case f.Name == "" || path.Base(f.Name) != f.Name:
				return fmt.Sprintf("has a file named %q (one path element)", f.Name)
			case seen[f.Name]:
				return fmt.Sprintf("lists file %q twice", f.Name)
			case !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path:
				return fmt.Sprintf("installs %s at %q, not an absolute clean path", f.Name, f.Path)
			}
			seen[f.Name] = true
		}
		for _, arch := range archs {
			src := a.Sources[arch]
			if src.URL == "" || !isSHA256(src.SHA256) || src.Digest != "" {
				return fmt.Sprintf("has a %s source without a URL and the sha256 (64 lower-case hex digits) of its download", arch)
			}
			for name := range src.Members {
				if !seen[name] {
					return fmt.Sprintf("has a %s member for %q, which is not one of its files", arch, name)
				}
			}
			if len(a.Files) > 1 && len(src.Members) < len(a.Files) {
				return fmt.Sprintf("has one %s download for several files: name each file's member of the tarball", arch)
			}
		}
	case construct.Image:
		if a.Reference == "" || len(a.Files) > 0 {
			return "is an image without a reference, or with files"
		}
		for _, arch := range archs {
			// An empty source is an image no public source pins a digest
			// of: it is only taken from the mirror folder (air-gapped
			// mode); without one, kube-aws refuses it after the merge.
			src := a.Sources[arch]
			badDigest := src.Digest != "" && (!strings.HasPrefix(src.Digest, "sha256:") || !isSHA256(src.Digest[len("sha256:"):]))
			if badDigest || src.URL != "" || src.SHA256 != "" {
				return fmt.Sprintf("has a %s source without the image's digest (sha256:<64 hex digits>)", arch)
			}
		}
	default:
		return fmt.Sprintf("is of kind %q (binary or image)", a.Kind)
	}
	return ""
}
