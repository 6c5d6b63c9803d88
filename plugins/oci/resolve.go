package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
)

// maxManifestBytes bounds what kube-aws reads as a manifest or index: a
// plugin's is a few KB, and a hostile registry must not fill memory.
const maxManifestBytes = 4 << 20

// Artifact is a plugin in a registry as kube-aws sees it after resolving
// its reference: the digest the reference stands for, the plugin's info
// and, for every platform, the digests of its files.
type Artifact struct {
	Ref Reference
	// Descriptor is what the reference resolved to: normally the image
	// index; cosign signs its digest.
	Descriptor ocispec.Descriptor
	Info       Info
	// Platforms by os/arch.
	Platforms map[string]*Platform
}

// Digest is the digest the reference resolved to.
func (a *Artifact) Digest() string { return a.Descriptor.Digest.String() }

// Platform is one platform's manifest.
type Platform struct {
	Manifest ocispec.Descriptor
	// Executable is the layer kube-aws starts.
	Executable ocispec.Descriptor
	// Files are the other layers, by slash path.
	Files map[string]ocispec.Descriptor
}

// PlatformNames lists the artifact's platforms, sorted.
func (a *Artifact) PlatformNames() []string { return slices.Sorted(maps.Keys(a.Platforms)) }

// ForPlatform returns the manifest for os/arch, or an error listing the
// platforms the artifact has.
func (a *Artifact) ForPlatform(platform string) (*Platform, error) {
	if p, ok := a.Platforms[platform]; ok {
		return p, nil
	}
	return nil, &NoPlatformError{Ref: a.Ref.Source, Name: a.Info.Name, Want: platform, Have: a.PlatformNames()}
}

// NoPlatformError is an artifact without a build for this machine.
type NoPlatformError struct {
	Ref, Name, Want string
	Have            []string
}

func (e *NoPlatformError) Error() string {
	return fmt.Sprintf("%s has no build of plugin %s for %s; it has %s: ask its author to push one for %s (kube-aws plugins push with a %s folder), or run kube-aws on one of those platforms",
		e.Ref, e.Name, e.Want, strings.Join(e.Have, ", "), e.Want, strings.ReplaceAll(e.Want, "/", "-"))
}

// Resolve looks the reference up (or, when pinned is a digest, that
// digest in the reference's repository, whatever the tag now says) and
// reads the index and every platform's manifest, verifying each against
// its digest. It downloads no layer.
func Resolve(ctx context.Context, repo *remote.Repository, ref Reference, pinned string) (*Artifact, error) {
	target := ref.Reference.Reference
	what := "tag " + target
	if pinned != "" {
		if _, err := digest.Parse(pinned); err != nil {
			return nil, fmt.Errorf("%s: pinned digest %q is not valid: %v", ref.Source, pinned, err)
		}
		target, what = pinned, "digest "+pinned
	} else if _, err := ref.Digest(); err == nil {
		what = "digest " + target
	}
	desc, err := repo.Resolve(ctx, target)
	if err != nil {
		err = explain(ref, what, err)
		if errors.Is(err, errdef.ErrNotFound) && pinned == "" {
			if tags := listTags(ctx, repo); len(tags) > 0 {
				return nil, fmt.Errorf("%w; the tags there are: %s", err, strings.Join(tags, ", "))
			}
			return nil, fmt.Errorf("%w; the repository has no tags: push the plugin first (kube-aws plugins push)", err)
		}
		return nil, err
	}
	return readArtifact(ctx, repo, ref, desc)
}

// listTags returns up to 20 tags of the repository for a "not found"
// message (signature tags left out), or none when listing fails.
func listTags(ctx context.Context, repo *remote.Repository) []string {
	var out []string
	_ = repo.Tags(ctx, "", func(tags []string) error {
		for _, t := range tags {
			if strings.HasPrefix(t, "sha256-") {
				continue // cosign signatures and referrers indexes
			}
			out = append(out, t)
		}
		if len(out) >= 20 {
			return errors.New("enough")
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func fetchJSON(ctx context.Context, repo *remote.Repository, ref Reference, desc ocispec.Descriptor, v any) error {
	if desc.Size > maxManifestBytes {
		return fmt.Errorf("%s: manifest %s is %d bytes, more than a kube-aws plugin's manifest can be", ref.Source, desc.Digest, desc.Size)
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return explain(ref, "manifest "+desc.Digest.String(), err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: manifest %s is not valid JSON: %v", ref.Source, desc.Digest, err)
	}
	return nil
}

func readArtifact(ctx context.Context, repo *remote.Repository, ref Reference, desc ocispec.Descriptor) (*Artifact, error) {
	a := &Artifact{Ref: ref, Descriptor: desc, Platforms: map[string]*Platform{}}
	switch desc.MediaType {
	case ocispec.MediaTypeImageIndex:
		var idx ocispec.Index
		if err := fetchJSON(ctx, repo, ref, desc, &idx); err != nil {
			return nil, err
		}
		info, err := infoFrom(idx.Annotations)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %v", ref.Source, desc.Digest, err)
		}
		a.Info = info
		for _, m := range idx.Manifests {
			pl := platformString(m.Platform)
			if pl == "" {
				continue // not a platform build (an attached signature, say)
			}
			p, _, err := readManifest(ctx, repo, ref, m)
			if err != nil {
				return nil, err
			}
			if _, dup := a.Platforms[pl]; dup {
				return nil, fmt.Errorf("%s: the index lists two manifests for %s", ref.Source, pl)
			}
			a.Platforms[pl] = p
		}
	case ocispec.MediaTypeImageManifest:
		// A digest pinning one platform's manifest.
		p, m, err := readManifest(ctx, repo, ref, desc)
		if err != nil {
			return nil, err
		}
		info, err := infoFrom(m.Annotations)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %v", ref.Source, desc.Digest, err)
		}
		a.Info = info
		pl := m.Annotations[AnnotationPlatform]
		if pl == "" {
			return nil, fmt.Errorf("%s: manifest %s does not say its platform (%s)", ref.Source, desc.Digest, AnnotationPlatform)
		}
		a.Platforms[pl] = p
	default:
		return nil, fmt.Errorf("%s resolves to a %s, not a kube-aws plugin (an OCI image index of %s manifests): push plugins with `kube-aws plugins push`",
			ref.Source, desc.MediaType, ArtifactType)
	}
	if len(a.Platforms) == 0 {
		return nil, fmt.Errorf("%s (%s) holds no platform build of plugin %s", ref.Source, desc.Digest, a.Info.Name)
	}
	return a, nil
}

func readManifest(ctx context.Context, repo *remote.Repository, ref Reference, desc ocispec.Descriptor) (*Platform, *ocispec.Manifest, error) {
	var m ocispec.Manifest
	if err := fetchJSON(ctx, repo, ref, desc, &m); err != nil {
		return nil, nil, err
	}
	if m.ArtifactType != ArtifactType {
		return nil, nil, fmt.Errorf("%s: manifest %s has artifact type %q, not %s: it is not a kube-aws plugin (push plugins with `kube-aws plugins push`)", ref.Source, desc.Digest, m.ArtifactType, ArtifactType)
	}
	p := &Platform{Manifest: desc, Files: map[string]ocispec.Descriptor{}}
	for _, l := range m.Layers {
		title := l.Annotations[ocispec.AnnotationTitle]
		if err := checkTitle(title); err != nil {
			return nil, nil, fmt.Errorf("%s: manifest %s: layer %s: %v", ref.Source, desc.Digest, l.Digest, err)
		}
		if l.Digest.Algorithm() != digest.SHA256 {
			return nil, nil, fmt.Errorf("%s: manifest %s: layer %s is not a sha256 digest", ref.Source, desc.Digest, title)
		}
		switch l.MediaType {
		case MediaTypeExecutable:
			if p.Executable.Digest != "" {
				return nil, nil, fmt.Errorf("%s: manifest %s has two executables", ref.Source, desc.Digest)
			}
			if strings.Contains(title, "/") {
				return nil, nil, fmt.Errorf("%s: manifest %s: the executable %q is not at the top of the plugin folder", ref.Source, desc.Digest, title)
			}
			p.Executable = l
		case MediaTypeFile:
			if _, dup := p.Files[title]; dup {
				return nil, nil, fmt.Errorf("%s: manifest %s lists %s twice", ref.Source, desc.Digest, title)
			}
			p.Files[title] = l
		default:
			return nil, nil, fmt.Errorf("%s: manifest %s: layer %s has media type %q, which kube-aws does not know", ref.Source, desc.Digest, title, l.MediaType)
		}
	}
	if p.Executable.Digest == "" {
		return nil, nil, fmt.Errorf("%s: manifest %s has no executable layer (%s)", ref.Source, desc.Digest, MediaTypeExecutable)
	}
	if _, clash := p.Files[p.Executable.Annotations[ocispec.AnnotationTitle]]; clash {
		return nil, nil, fmt.Errorf("%s: manifest %s lists its executable twice", ref.Source, desc.Digest)
	}
	return p, &m, nil
}

// checkTitle accepts a relative slash path that stays inside the plugin's
// folder: a registry must not be able to write anywhere else.
func checkTitle(title string) error {
	if title == "" {
		return fmt.Errorf("no %s annotation (the file's name)", ocispec.AnnotationTitle)
	}
	clean := path.Clean(title)
	if clean != title || path.IsAbs(title) || clean == "." || strings.HasPrefix(clean, "../") || clean == ".." || strings.Contains(title, "\\") {
		return fmt.Errorf("file name %q is not a plain relative path inside the plugin folder", title)
	}
	return nil
}
