package artifacts

import (
	"archive/tar"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestOpenImageRefuses covers what OpenImage checks on an archive that is
// not what the builder writes; TestBuildPause covers one that is.
func TestOpenImageRefuses(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "pause")
	if err := os.WriteFile(bin, []byte("not really pause"), 0o755); err != nil {
		t.Fatal(err)
	}
	pause, err := Lookup(nil, []string{"pause"})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{arch: "amd64", binaries: map[binarySource]string{{"pause", "pause"}: bin}, hashes: map[string]string{}}
	oci := filepath.Join(dir, "oci.tar")
	if err := r.writeImage(pause[0], t.TempDir(), oci); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenImage(oci, t.TempDir(), "registry.k8s.io/pause:"+PauseVersion); err != nil {
		t.Fatalf("the builder's own image: %v", err)
	}

	// A docker-archive of an image with a gzip layer, as the builder
	// wrote them before.
	docker := filepath.Join(dir, "docker.tar")
	if err := writeTar(filepath.Join(dir, "layer.tar"), []entry{{path: "/pause", typ: tar.TypeReg, mode: 0o755, src: bin}}, false); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromFile(filepath.Join(dir, "layer.tar"))
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("registry.k8s.io/pause:" + PauseVersion)
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer})
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(docker, tag, img); err != nil {
		t.Fatal(err)
	}
	// An entry that climbs out of the layout.
	escape := filepath.Join(dir, "escape.tar")
	f, _ := os.Create(escape)
	tw := tar.NewWriter(f)
	tw.WriteHeader(&tar.Header{Name: "../outside", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})
	tw.Write([]byte("x"))
	tw.Close()
	f.Close()

	for _, c := range []struct {
		name, archive, ref, want string
	}{
		{"another name", oci, "registry.k8s.io/pause:9.9", `named "registry.k8s.io/pause:` + PauseVersion + `"`},
		{"a docker-archive", docker, "registry.k8s.io/pause:" + PauseVersion, "not an OCI image layout"},
		{"an entry outside the layout", escape, "registry.k8s.io/pause:" + PauseVersion, "outside the layout"},
		{"no archive", filepath.Join(dir, "missing.tar"), "registry.k8s.io/pause:" + PauseVersion, "no such file"},
		{"a bad reference", oci, "Not A Reference", `image reference "Not A Reference"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenImage(c.archive, t.TempDir(), c.ref)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("OpenImage: %v, want an error with %q", err, c.want)
			}
		})
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	OpenImage(escape, work, "registry.k8s.io/pause:"+PauseVersion)
	if _, err := os.Stat(filepath.Join(dir, "outside")); err == nil {
		t.Fatal("an entry climbing out of the layout was written outside it")
	}
}
