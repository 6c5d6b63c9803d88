package oci

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/oci/helper"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
	"github.com/kube-aws/kube-aws/test/registrytest"
)

// A plugin pushed with its side files comes back byte for byte, with its
// modes, under its manifest digest; the second install finds it in the
// cache.
func TestPushAndInstall(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	dir := pluginDir(t, "hello", map[string]string{"lib/data.txt": "data\n", "README.md": "# hello\n"})
	if err := os.Chmod(filepath.Join(dir, "lib", "data.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	pushed := f.push(t, dir, "plugins/hello:0.0.1")
	if pushed.Name != "hello" || pushed.Version != "0.0.1" || len(pushed.Platforms) != 1 || pushed.Platforms[0] != hostPlatform() {
		t.Fatalf("pushed %+v", pushed)
	}
	src := f.reg.Ref("plugins/hello:0.0.1")
	got, err := f.install(t, helper.InstallRequest{Name: "hello", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != pushed.Digest || got.Version != "0.0.1" || !got.Downloaded {
		t.Fatalf("installed %+v, pushed %+v", got, pushed)
	}
	want, _ := fileutil.SHA256(filepath.Join(dir, "hello"))
	p := got.Platforms[hostPlatform()]
	if p.SHA256 != want || p.Files["lib/data.txt"] == "" || p.Files["README.md"] == "" || len(p.Files) != 2 {
		t.Fatalf("lock platform %+v, want executable sha256 %s", p, want)
	}
	if have, _ := fileutil.SHA256(filepath.Join(got.Dir, "hello")); have != want {
		t.Errorf("cached executable sha256 %s, want %s", have, want)
	}
	for name, mode := range map[string]os.FileMode{"hello": 0o755, "lib/data.txt": 0o600, "README.md": 0o644} {
		fi, err := os.Stat(filepath.Join(got.Dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), mode)
		}
	}
	if !strings.HasSuffix(got.Dir, strings.TrimPrefix(p.Manifest, "sha256:")) {
		t.Errorf("entry %s is not named after the manifest digest %s", got.Dir, p.Manifest)
	}
	again, err := f.install(t, helper.InstallRequest{Name: "hello", Source: src, Pinned: got.Digest})
	if err != nil {
		t.Fatal(err)
	}
	if again.Downloaded || again.Dir != got.Dir {
		t.Errorf("second install %+v: want the cached entry %s, not a download", again, got.Dir)
	}
	// By digest, too.
	byDigest, err := f.install(t, helper.InstallRequest{Name: "hello", Source: f.reg.Ref("plugins/hello@" + got.Digest)})
	if err != nil || byDigest.Digest != got.Digest {
		t.Fatalf("install by digest: %+v, %v", byDigest, err)
	}
}

// Pushing the same files with the same creation time gives the same digest.
func TestPushIsReproducible(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	dir := pluginDir(t, "hello", nil)
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	a := f.push(t, dir, "plugins/hello:a")
	b := f.push(t, dir, "plugins/hello:b")
	if a.Digest != b.Digest {
		t.Errorf("two pushes of the same plugin: %s and %s", a.Digest, b.Digest)
	}
}

// InstallAll installs several plugins at once and reports each one's
// outcome: one failure does not hide the others.
func TestInstallAllConcurrently(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	var reqs []helper.InstallRequest
	for _, n := range []string{"a", "b", "c"} {
		f.push(t, pluginDir(t, n, nil), "plugins/"+n+":1")
		reqs = append(reqs, helper.InstallRequest{Name: n, Source: f.reg.Ref("plugins/" + n + ":1")})
	}
	reqs = append(reqs, helper.InstallRequest{Name: "d", Source: f.reg.Ref("plugins/d:1")})
	got := f.h.InstallAll(ctxT(t), f.cache, HostPlatform(), []int{1}, reqs)
	for i, r := range got[:3] {
		if r.Error != "" || r.Name != reqs[i].Name || r.Dir == "" {
			t.Errorf("%d: %+v", i, r)
		}
	}
	if got[3].Error == "" || got[3].ErrorField != "source" || !strings.Contains(got[3].Error, "not found") {
		t.Errorf("missing plugin: %+v", got[3])
	}
}
