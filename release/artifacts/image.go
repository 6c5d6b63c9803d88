package artifacts

import (
	"archive/tar"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// baseFiles are the files of the base layer besides the CA bundle: the
// users and groups of distroless/static (root, nobody, nonroot) and the
// nsswitch.conf Kubernetes ships in its images (files before DNS).
var baseFiles = []entry{
	{path: "/etc/passwd", typ: tar.TypeReg, mode: 0o644, data: []byte(
		"root:x:0:0:root:/root:/sbin/nologin\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
	{path: "/etc/group", typ: tar.TypeReg, mode: 0o644, data: []byte(
		"root:x:0:\n" + "tty:x:5:\n" + "staff:x:50:\n" + "nobody:x:65534:\n" + "nonroot:x:65532:\n")},
	{path: "/etc/nsswitch.conf", typ: tar.TypeReg, mode: 0o644, data: []byte("hosts: files dns\n")},
	{path: "/tmp", typ: tar.TypeDir, mode: 0o1777},
	{path: "/root", typ: tar.TypeDir, mode: 0o700},
	{path: "/home/nonroot", typ: tar.TypeDir, mode: 0o700, uid: 65532, gid: 65532},
}

// caBundlePath is where distroless (and Debian) keep the CA bundle.
const caBundlePath = "/etc/ssl/certs/ca-certificates.crt"

// imageInputs describes everything an image's bytes depend on: its spec and
// the hashes of the files its layers are made of.
func (r *run) imageInputs(a Artifact) (map[string]any, error) {
	var layers []map[string]any
	for _, l := range a.image.layers {
		switch l.kind {
		case layerBase:
			sum, err := r.hashOf(r.debianOut["ca-certificates"])
			if err != nil {
				return nil, err
			}
			layers = append(layers, map[string]any{"base": sum})
		case layerDebian:
			sum, err := r.hashOf(r.debianOut[l.debian])
			if err != nil {
				return nil, err
			}
			layers = append(layers, map[string]any{"debian": l.debian, "sha256": sum})
		case layerFiles:
			var files []map[string]any
			for _, f := range l.files {
				sum, err := r.hashOf(r.binaries[f.from])
				if err != nil {
					return nil, err
				}
				files = append(files, map[string]any{"path": f.path, "sha256": sum, "netBindService": f.netBindService})
			}
			layers = append(layers, map[string]any{"files": files})
		}
	}
	return map[string]any{
		"builder": r.builderHash, "ref": a.Image, "arch": r.arch, "layers": layers,
		"entrypoint": a.image.entrypoint, "env": a.image.env, "user": a.image.user,
		"workingDir": a.image.workingDir, "ports": a.image.exposedPorts,
	}, nil
}

// writeImage assembles a's image and writes it to out as an OCI archive (an
// image layout in a tar) whose one image is named with the upstream
// reference. Layers it makes itself, and the layout, go to work (a temporary
// folder).
//
// An OCI archive rather than a docker-archive, because only an OCI manifest
// can say that a layer is zstd: containerd's docker-archive importer labels
// every compressed layer gzip.
func (r *run) writeImage(a Artifact, work, out string) error {
	tag, err := name.NewTag(a.Image, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image %s: reference %q: %w", a.Name, a.Image, err)
	}
	var adds []mutate.Addendum
	for i, l := range a.image.layers {
		var file, createdBy string
		switch l.kind {
		case layerBase:
			file = filepath.Join(work, "layer-"+strconv.Itoa(i)+".tar.zst")
			entries := append([]entry{{path: caBundlePath, typ: tar.TypeReg, mode: 0o644, src: r.debianOut["ca-certificates"]}}, baseFiles...)
			if err := writeLayer(file, entries); err != nil {
				return err
			}
			createdBy = "kube-aws artifacts: base (users, nsswitch.conf, CA bundle)"
		case layerDebian:
			file = r.debianOut[l.debian]
			createdBy = "kube-aws artifacts: Debian " + debianSuite + " packages " + fmt.Sprint(debianSets[l.debian].packages)
		case layerFiles:
			file = filepath.Join(work, "layer-"+strconv.Itoa(i)+".tar.zst")
			var entries []entry
			for _, f := range l.files {
				e := entry{path: f.path, typ: tar.TypeReg, mode: 0o755, src: r.binaries[f.from]}
				if f.netBindService {
					e.caps = capNetBindService
				}
				entries = append(entries, e)
				createdBy += " " + f.path
			}
			if err := writeLayer(file, entries); err != nil {
				return err
			}
			createdBy = "kube-aws artifacts: COPY" + createdBy
		}
		layer, err := tarball.LayerFromFile(file, tarball.WithMediaType(types.OCILayerZStd))
		if err != nil {
			return fmt.Errorf("image %s: layer %s: %w", a.Name, file, err)
		}
		adds = append(adds, mutate.Addendum{Layer: layer, History: v1.History{CreatedBy: createdBy, Created: v1.Time{Time: epoch}}})
	}

	cfg := &v1.ConfigFile{
		Architecture: r.arch,
		OS:           OS,
		Created:      v1.Time{Time: epoch},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint: a.image.entrypoint,
			Env:        a.image.env,
			User:       a.image.user,
			WorkingDir: a.image.workingDir,
		},
	}
	if r.arch == "arm64" {
		cfg.Variant = "v8"
	}
	if len(a.image.exposedPorts) > 0 {
		cfg.Config.ExposedPorts = map[string]struct{}{}
		ports := append([]string(nil), a.image.exposedPorts...)
		sort.Strings(ports)
		for _, p := range ports {
			cfg.Config.ExposedPorts[p] = struct{}{}
		}
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.ConfigFile(base, cfg)
	if err != nil {
		return err
	}
	if img, err = mutate.Append(img, adds...); err != nil {
		return fmt.Errorf("image %s: %w", a.Name, err)
	}
	dir := filepath.Join(work, "layout")
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("image %s: %w", a.Name, err)
	}
	err = lp.AppendImage(img,
		layout.WithPlatform(v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}),
		layout.WithAnnotations(map[string]string{
			// containerd (ctr images import, and so the kubelet's CRI) names
			// the image by the first; other OCI tools read the tag from the
			// second.
			"io.containerd.image.name":          tag.Name(),
			"org.opencontainers.image.ref.name": tag.TagStr(),
		}))
	if err != nil {
		return fmt.Errorf("image %s: %w", a.Name, err)
	}
	if err := writeTree(out, dir); err != nil {
		return fmt.Errorf("image %s: write %s: %w", a.Name, out, err)
	}
	return nil
}
