package oci

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"
)

// PushOptions say what Push uploads.
type PushOptions struct {
	Package *Package
	// Info is the plugin's, as its host-platform executable reported it.
	Info Info
	// Created is written as the artifact's creation time; a fixed value
	// (SOURCE_DATE_EPOCH) makes pushing the same files give the same digest.
	Created time.Time
	// Log receives a line per step (may be nil).
	Log func(string)
}

// Push uploads a plugin as an image index with one manifest per platform
// and tags it with the reference's tag. Blobs the registry already has are
// not uploaded again.
func Push(ctx context.Context, repo *remote.Repository, ref Reference, opts PushOptions) (*Artifact, error) {
	tag := ref.Tag()
	if _, err := ref.Digest(); err == nil || tag == "" {
		return nil, fmt.Errorf("%s: push to a tag (oci://REGISTRY/REPOSITORY:VERSION); a digest is what the push makes", ref.Source)
	}
	logf := func(format string, args ...any) {
		if opts.Log != nil {
			opts.Log(fmt.Sprintf(format, args...))
		}
	}
	if err := opts.Package.Rename(opts.Info.Name); err != nil {
		return nil, err
	}
	created := opts.Created.UTC().Format(time.RFC3339)
	a := &Artifact{Ref: ref, Info: opts.Info, Platforms: map[string]*Platform{}}
	idx := ocispec.Index{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageIndex,
		ArtifactType: ArtifactType,
		Annotations:  opts.Info.annotations(),
	}
	idx.Annotations[ocispec.AnnotationCreated] = created
	for _, pl := range opts.Package.PlatformNames() {
		pp := opts.Package.Platforms[pl]
		platform, err := parsePlatform(pl)
		if err != nil {
			return nil, err
		}
		p := &Platform{Files: map[string]ocispec.Descriptor{}}
		exe, err := pushFile(ctx, repo, ref, filepath.Join(pp.Dir, pp.Executable), pp.Executable, MediaTypeExecutable, pp.Mode)
		if err != nil {
			return nil, err
		}
		p.Executable = exe
		layers := []ocispec.Descriptor{exe}
		names := make([]string, 0, len(pp.Files))
		for n := range pp.Files {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			l, err := pushFile(ctx, repo, ref, filepath.Join(pp.Dir, filepath.FromSlash(n)), n, MediaTypeFile, pp.Files[n])
			if err != nil {
				return nil, err
			}
			p.Files[n] = l
			layers = append(layers, l)
		}
		ann := opts.Info.annotations()
		ann[AnnotationPlatform] = pl
		ann[ocispec.AnnotationCreated] = created
		m, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{
			Layers:              layers,
			ManifestAnnotations: ann,
		})
		if err != nil {
			return nil, explain(ref, "pushing the manifest for "+pl, err)
		}
		m.Platform = &platform
		m.ArtifactType = ArtifactType
		p.Manifest = m
		a.Platforms[pl] = p
		idx.Manifests = append(idx.Manifests, m)
		logf("pushed %s %s for %s (%s)", opts.Info.Name, opts.Info.Version, pl, m.Digest)
	}
	b, err := json.Marshal(idx)
	if err != nil {
		return nil, err
	}
	desc, err := oras.TagBytes(ctx, repo, ocispec.MediaTypeImageIndex, b, tag)
	if err != nil {
		return nil, explain(ref, "pushing the index", err)
	}
	a.Descriptor = desc
	return a, nil
}

// pushFile uploads one file as a layer, unless the registry has it.
func pushFile(ctx context.Context, repo *remote.Repository, ref Reference, path, title, mediaType string, mode fs.FileMode) (ocispec.Descriptor, error) {
	f, err := os.Open(path)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("reading %s: %w", path, err)
	}
	desc := ocispec.Descriptor{
		MediaType: mediaType,
		Digest:    digest.NewDigest(digest.SHA256, h),
		Size:      n,
		Annotations: map[string]string{
			ocispec.AnnotationTitle: title,
			AnnotationMode:          fmt.Sprintf("%04o", mode.Perm()),
		},
	}
	exists, err := repo.Exists(ctx, desc)
	if err != nil {
		return desc, explain(ref, "checking for "+title, err)
	}
	if exists {
		return desc, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return desc, err
	}
	if err := repo.Push(ctx, desc, f); err != nil {
		return desc, explain(ref, "uploading "+title, err)
	}
	return desc, nil
}
