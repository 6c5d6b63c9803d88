package artifacts

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// OpenImage reads an image.tar of the folder the way containerd's importer
// does, and checks it is what the builder writes: an OCI image layout whose
// index holds exactly one image, named ref (io.containerd.image.name, with
// its tag in org.opencontainers.image.ref.name), with an OCI manifest and
// zstd layers. The layout is extracted into work, an empty folder that must
// outlive the image returned.
func OpenImage(archive, work, ref string) (v1.Image, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := extractLayout(archive, work); err != nil {
		return nil, fmt.Errorf("%s: %w", archive, err)
	}
	if _, err := os.Stat(filepath.Join(work, "oci-layout")); err != nil {
		return nil, fmt.Errorf("%s is not an OCI image layout (no oci-layout file)", archive)
	}
	idx, err := layout.ImageIndexFromPath(work)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", archive, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", archive, err)
	}
	if len(im.Manifests) != 1 {
		return nil, fmt.Errorf("%s: the index holds %d images, want 1", archive, len(im.Manifests))
	}
	d := im.Manifests[0]
	if got := d.Annotations["io.containerd.image.name"]; got != tag.Name() {
		return nil, fmt.Errorf("%s: the image is named %q (io.containerd.image.name), want %q", archive, got, tag.Name())
	}
	if got := d.Annotations["org.opencontainers.image.ref.name"]; got != tag.TagStr() {
		return nil, fmt.Errorf("%s: org.opencontainers.image.ref.name is %q, want %q", archive, got, tag.TagStr())
	}
	if d.MediaType != types.OCIManifestSchema1 || d.Platform == nil || d.Platform.OS != OS {
		return nil, fmt.Errorf("%s: the index names a %s for platform %+v, want an OCI manifest for %s", archive, d.MediaType, d.Platform, OS)
	}
	img, err := idx.Image(d.Digest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", archive, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", archive, err)
	}
	for i, l := range layers {
		if mt, err := l.MediaType(); err != nil || mt != types.OCILayerZStd {
			return nil, fmt.Errorf("%s: layer %d is %s, want %s", archive, i, mt, types.OCILayerZStd)
		}
	}
	return img, nil
}

// extractLayout extracts an uncompressed tar of files and folders (an image
// layout) into dir.
func extractLayout(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		rel := filepath.FromSlash(h.Name)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("entry %s is outside the layout", h.Name)
		}
		dest := filepath.Join(dir, rel)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dest, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
				return err
			}
			out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %s is of tar type %q; an image layout holds files and folders", h.Name, h.Typeflag)
		}
	}
}
