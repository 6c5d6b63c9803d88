package oci

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/plugins/oci/helper"
	"github.com/kube-aws/kube-aws/test/registrytest"
)

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one saying %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q\ndoes not say %q", err, p)
		}
	}
	t.Logf("message: %v", err)
}

// A registry that is down is named in the error; nothing is left in the
// cache.
func TestRegistryDown(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	f.push(t, pluginDir(t, "hello", nil), "plugins/hello:0.0.1")
	f.reg.Stop()
	_, err := f.install(t, helper.InstallRequest{Name: "hello", Source: f.reg.Ref("plugins/hello:0.0.1")})
	wantErr(t, err, "registry "+f.reg.Host+" is unreachable", "connection refused", "check that it is up")
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Registry != f.reg.Host {
		t.Errorf("err %T does not carry the registry", err)
	}
	if es, _ := f.cache.Entries(); len(es) != 0 {
		t.Errorf("cache holds %v", es)
	}
}

// An unknown tag lists the tags there are.
func TestUnknownTag(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	dir := pluginDir(t, "hello", nil)
	f.push(t, dir, "plugins/hello:0.0.1")
	f.push(t, dir, "plugins/hello:0.0.2")
	_, err := f.install(t, helper.InstallRequest{Name: "hello", Source: f.reg.Ref("plugins/hello:9.9.9")})
	wantErr(t, err, f.reg.Ref("plugins/hello:9.9.9"), "tag 9.9.9 not found in "+f.reg.Host+"/plugins/hello", "the tags there are: 0.0.1, 0.0.2")
	_, err = f.install(t, helper.InstallRequest{Name: "hello", Source: f.reg.Ref("plugins/nothing:1")})
	wantErr(t, err, "tag 1 not found", "the repository has no tags: push the plugin first")
}

// An artifact without a build for this machine lists the builds it has.
func TestNoBuildForThisPlatform(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	// A script plugin pushed for two other platforms: it runs here too,
	// so push can read its info, but it was not pushed for this one.
	dir := filepath.Join(t.TempDir(), "hello")
	bin := filepath.Join(t.TempDir(), "hello")
	copyFile(t, trivialBuild(t, HostPlatform()), bin, 0o755)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hello"), []byte("#!/bin/sh\nexec "+bin+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	others := []string{"plan9/arm", "windows/arm64"}
	f.push(t, dir, "plugins/hello:0.0.1", others...)
	_, err := f.install(t, helper.InstallRequest{Name: "hello", Source: f.reg.Ref("plugins/hello:0.0.1")})
	wantErr(t, err, "has no build of plugin hello for "+HostPlatform(), "it has plan9/arm, windows/arm64")
	var np *NoPlatformError
	if !errors.As(err, &np) {
		t.Errorf("err is %T", err)
	}
}

// Go builds for two platforms, one folder each: both are in the index and
// in the lock's hashes, and this machine gets its own.
func TestTwoPlatforms(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	other := "linux/arm64"
	if HostPlatform() == other {
		other = "linux/amd64"
	}
	dir := t.TempDir()
	for _, p := range []string{HostPlatform(), other} {
		copyFile(t, trivialBuild(t, p), filepath.Join(dir, strings.ReplaceAll(p, "/", "-"), "hello"), 0o755)
	}
	pushed := f.push(t, dir, "plugins/hello:0.0.1")
	if strings.Join(pushed.Platforms, ",") != strings.Join(sortedPair(HostPlatform(), other), ",") {
		t.Fatalf("pushed for %v", pushed.Platforms)
	}
	got, err := f.install(t, helper.InstallRequest{Name: "hello", Source: f.reg.Ref("plugins/hello:0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Platforms) != 2 || got.Platforms[other].SHA256 == got.Platforms[HostPlatform()].SHA256 {
		t.Errorf("lock platforms %+v", got.Platforms)
	}
	if _, err := ReadInfo(ctxT(t), filepath.Join(got.Dir, "hello")); err != nil {
		t.Errorf("the installed build does not run here: %v", err)
	}
}

func sortedPair(a, b string) []string {
	if a < b {
		return []string{a, b}
	}
	return []string{b, a}
}

// A registry whose storage serves other bytes than a layer's digest says:
// the download is refused and nothing is left in the cache.
func TestLayerDigestMismatch(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	dir := pluginDir(t, "hello", map[string]string{"code.txt": "print('hello')\n"})
	f.push(t, dir, "plugins/hello:0.0.1")
	src := f.reg.Ref("plugins/hello:0.0.1")
	// Find the layer of code.txt and replace its bytes in the registry's
	// storage by others of the same length.
	art := resolveT(t, f, src)
	l := art.Platforms[HostPlatform()].Files["code.txt"]
	blob := f.reg.BlobPath(l.Digest.String())
	// Same length, other bytes; then another length.
	for _, body := range []string{"print('HELLO')\n", "print('HACKED')\n"} {
		if err := os.WriteFile(blob, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := f.install(t, helper.InstallRequest{Name: "hello", Source: src})
		wantErr(t, err, "the file code.txt (layer "+l.Digest.String()+") that registry "+f.reg.Host+" served does not match its digest", "nothing was installed")
		var lm *LayerMismatchError
		if !errors.As(err, &lm) {
			t.Errorf("err is %T", err)
		}
		if es, _ := f.cache.Entries(); len(es) != 0 {
			t.Errorf("cache holds %v", es)
		}
		if left, _ := os.ReadDir(filepath.Join(f.cache.Root, "tmp")); len(left) != 0 {
			t.Errorf("staging folder left behind: %v", left)
		}
	}
}

func resolveT(t *testing.T, f *fixture, src string) *Artifact {
	t.Helper()
	ref, err := ParseReference(src)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := f.h.Remote.Repository(ref)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Resolve(ctxT(t), repo, ref, "")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A tag pushed again after the lock: the pinned digest is still what is
// installed, and the move is reported with the new version.
func TestTagMovedAfterLock(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	src := f.reg.Ref("plugins/hello:stable")
	first := f.push(t, pluginDir(t, "hello", nil), "plugins/hello:stable")
	locked, err := f.install(t, helper.InstallRequest{Name: "hello", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	second := f.push(t, pluginDir(t, "hello", map[string]string{"new": "file"}), "plugins/hello:stable")
	if second.Digest == first.Digest {
		t.Fatal("the second push did not make a new digest")
	}
	got, err := f.install(t, helper.InstallRequest{Name: "hello", Source: src, Pinned: locked.Digest, CheckTag: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != first.Digest || got.MovedTo == nil || got.MovedTo.Digest != second.Digest || got.MovedTo.Version != "0.0.1" {
		t.Errorf("installed %+v (moved to %+v); want the pinned %s, moved to %s", got, got.MovedTo, first.Digest, second.Digest)
	}
	// Upgrading is resolving the tag afresh.
	up, err := f.install(t, helper.InstallRequest{Name: "hello", Source: src})
	if err != nil || up.Digest != second.Digest {
		t.Errorf("upgrade: %+v, %v", up, err)
	}
	// A pinned digest deleted from the registry.
	ref, _ := ParseReference(src)
	repo, _ := f.h.Remote.Repository(ref)
	art := resolveT(t, f, f.reg.Ref("plugins/hello@"+first.Digest))
	if err := repo.Delete(ctxT(t), art.Descriptor); err != nil {
		t.Fatal(err)
	}
	_, err = f.install(t, helper.InstallRequest{Name: "hello", Source: src, Pinned: first.Digest})
	wantErr(t, err, "digest "+first.Digest+" not found", "plugins.lock pins plugin hello to that digest", "kube-aws plugins upgrade hello")
}

// An artifact whose info names another plugin is refused.
func TestInfoNamesAnotherPlugin(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	f.push(t, pluginDir(t, "hello", nil), "plugins/other:0.0.1")
	_, err := f.install(t, helper.InstallRequest{Name: "other", Source: f.reg.Ref("plugins/other:0.0.1")})
	wantErr(t, err, `holds plugin "hello", not "other"`, "point plugins.other.source at the other plugin, or configure this one as plugins.hello")
	if es, _ := f.cache.Entries(); len(es) != 0 {
		t.Errorf("cache holds %v", es)
	}
}

// A plugin built for a protocol this kube-aws does not speak is refused
// before download.
func TestProtocolMismatch(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	f.push(t, pluginDir(t, "hello", nil), "plugins/hello:0.0.1")
	_, err := f.h.Install(ctxT(t), f.cache, HostPlatform(), []int{7}, helper.InstallRequest{Name: "hello", Source: f.reg.Ref("plugins/hello:0.0.1")})
	wantErr(t, err, "speaks plugin protocol 1, but this kube-aws speaks 7")
}

// Something that is not a kube-aws plugin (another tool's artifact) is
// refused by name.
func TestNotAPlugin(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	ref, _ := ParseReference(f.reg.Ref("charts/thing:1.0"))
	repo, _ := f.h.Remote.Repository(ref)
	layer, err := oras.PushBytes(ctxT(t), repo, "application/vnd.cncf.helm.chart.content.v1.tar+gzip", []byte("not a plugin"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := oras.PackManifest(ctxT(t), repo, oras.PackManifestVersion1_1, "application/vnd.cncf.helm.config.v1+json", oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Tag(ctxT(t), m, "1.0"); err != nil {
		t.Fatal(err)
	}
	_, err = f.install(t, helper.InstallRequest{Name: "thing", Source: ref.Source})
	wantErr(t, err, "is not a kube-aws plugin", "kube-aws plugins push")
}

// A cache entry changed on disk is found by its hashes and downloaded
// again; with the registry down it is refused, never used.
func TestTamperedCacheEntry(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	f.push(t, pluginDir(t, "hello", map[string]string{"code.txt": "x\n"}), "plugins/hello:0.0.1")
	src := f.reg.Ref("plugins/hello:0.0.1")
	got, err := f.install(t, helper.InstallRequest{Name: "hello", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(got.Dir, "hello")
	good, _ := os.ReadFile(exe)
	for name, tamper := range map[string]func(){
		"changed executable": func() { appendTo(t, exe, "#") },
		"added file":         func() { writeFile(t, filepath.Join(got.Dir, "evil.sh"), "rm -rf /") },
		"removed file":       func() { os.Remove(filepath.Join(got.Dir, "code.txt")) },
	} {
		t.Run(name, func(t *testing.T) {
			tamper()
			if f.cache.Fresh(got.Platforms[HostPlatform()].Manifest) {
				t.Error("the stamp check did not notice")
			}
			again, err := f.install(t, helper.InstallRequest{Name: "hello", Source: src, Pinned: got.Digest})
			if err != nil {
				t.Fatal(err)
			}
			if again.Repaired == "" || !again.Downloaded {
				t.Errorf("not repaired: %+v", again)
			}
			if b, _ := os.ReadFile(exe); !bytes.Equal(b, good) {
				t.Error("the executable was not restored")
			}
			if err := CheckEntry(again.Dir, resolveT(t, f, src).Platforms[HostPlatform()]); err != nil {
				t.Error(err)
			}
		})
	}
	appendTo(t, exe, "#")
	f.reg.Stop()
	again, err := f.install(t, helper.InstallRequest{Name: "hello", Source: src, Pinned: got.Digest})
	wantErr(t, err, "registry "+f.reg.Host+" is unreachable")
	if again.Dir != "" {
		t.Errorf("a tampered entry was handed out: %+v", again)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString(s)
	fh.Close()
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A registry that wants a login: refused anonymously with what to do;
// credentials from Docker's config.json or from a credential helper work.
func TestAuthentication(t *testing.T) {
	f := newFixture(t, registrytest.Options{Users: map[string]string{"alice": "s3cret"}})
	src := f.reg.Ref("plugins/hello:0.0.1")
	_, err := f.install(t, helper.InstallRequest{Name: "hello", Source: src})
	wantErr(t, err, "registry "+f.reg.Host+" refused access to plugins/hello (HTTP 401", "docker login "+f.reg.Host)

	docker := t.TempDir()
	t.Setenv("DOCKER_CONFIG", docker)
	auth := base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))
	writeJSON(t, filepath.Join(docker, "config.json"), map[string]any{"auths": map[string]any{f.reg.Host: map[string]string{"auth": auth}}})
	f.h.Remote = &Remote{}
	f.push(t, pluginDir(t, "hello", nil), "plugins/hello:0.0.1")
	if _, err := f.install(t, helper.InstallRequest{Name: "hello", Source: src}); err != nil {
		t.Fatalf("with config.json: %v", err)
	}

	// A credential helper, as `docker login` sets up with credsStore or
	// credHelpers: docker-credential-<name> on PATH.
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "docker-credential-kubeawstest"), `#!/bin/sh
read server
echo '{"ServerURL":"'$server'","Username":"alice","Secret":"s3cret"}'
`)
	if err := os.Chmod(filepath.Join(bin, "docker-credential-kubeawstest"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	writeJSON(t, filepath.Join(docker, "config.json"), map[string]any{"credHelpers": map[string]string{f.reg.Host: "kubeawstest"}})
	f.h.Remote = &Remote{}
	if _, err := f.install(t, helper.InstallRequest{Name: "hello", Source: src}); err != nil {
		t.Fatalf("with a credential helper: %v", err)
	}

	// Helm's registry config, as `helm registry login` writes it.
	writeJSON(t, filepath.Join(docker, "config.json"), map[string]any{})
	helm := filepath.Join(t.TempDir(), "config.json")
	writeJSON(t, helm, map[string]any{"auths": map[string]any{f.reg.Host: map[string]string{"auth": auth}}})
	t.Setenv("HELM_REGISTRY_CONFIG", helm)
	f.h.Remote = &Remote{}
	if _, err := f.install(t, helper.InstallRequest{Name: "hello", Source: src}); err != nil {
		t.Fatalf("with helm's registry config: %v", err)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b))
}

// Bad sources are refused with the form to write.
func TestBadSources(t *testing.T) {
	for src, want := range map[string]string{
		"https://example.com/x:1":    "does not start with oci://",
		"oci://example.com/x":        "names no tag or digest: add :TAG",
		"oci://example.com/X:1":      "is not a valid OCI reference",
		"oci://example.com/x@sha1:1": "is not a valid OCI reference",
		"oci://":                     "is not a valid OCI reference",
	} {
		_, err := ParseReference(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
	r, err := ParseReference("oci://example.com/a/b:1.0@sha256:" + strings.Repeat("a", 64))
	if err != nil || r.Tag() != "1.0" || r.Repo() != "example.com/a/b" {
		t.Errorf("tag@digest: %+v %v", r, err)
	}
}

// cluster.yaml's validation (core/config, which cannot link the registry
// client) accepts a source exactly when the helper can parse it, so that
// every malformed source is a configuration error at its line, and none
// it lets through fails later.
func TestSourceValidationAgreesWithTheRegistryClient(t *testing.T) {
	d := strings.Repeat("0f", 32)
	for _, src := range []string{
		"oci://ghcr.io/acme/hello:0.1.0", "oci://127.0.0.1:5000/a/b/c:v1", "oci://[::1]:5000/acme/x:1",
		"oci://localhost/a__b.c-d/e:_x.Y-1", "oci://ghcr.io/acme/hello@sha256:" + d, "oci://ghcr.io/acme/hello:1@sha256:" + d,
		"oci://ghcr.io/acme/hello:" + strings.Repeat("t", 128),
		"https://ghcr.io/acme/hello:1", "oci://", "oci://ghcr.io", "oci://ghcr.io/", "oci:///acme/hello:1", "oci://ghcr.io/acme/hello",
		"oci://ghcr.io/acme/hello:", "oci://ghcr.io/acme/hello@", "oci://ghcr.io/Acme/hello:1", "oci://ghcr.io/acme//hello:1",
		"oci://ghcr.io/acme/hello-:1", "oci://ghcr io/acme/hello:1", "oci://ghcr.io:x/acme/hello:1", "oci://user@ghcr.io/acme/hello:1",
		"oci://ghcr.io/acme/hello:+1", "oci://ghcr.io/acme/hello:.1", "oci://ghcr.io/acme/hello:" + strings.Repeat("t", 129),
		"oci://ghcr.io/acme/hello@sha256:abc", "oci://ghcr.io/acme/hello@sha256:" + strings.ToUpper(d), "oci://ghcr.io/acme/hello@sha1:1",
	} {
		msg, _ := config.CheckPluginSource(src)
		_, err := ParseReference(src)
		if (msg == "") != (err == nil) {
			t.Errorf("%s: cluster.yaml validation says %q, the registry client %v", src, msg, err)
		}
	}
	// The one difference: the client ignores a tag before a digest, which
	// `plugins install` looks up to see whether it moved; validation checks
	// it too.
	if msg, _ := config.CheckPluginSource("oci://ghcr.io/acme/hello:+1@sha256:" + d); !strings.Contains(msg, `has the tag "+1"`) {
		t.Errorf("a bad tag before a digest: %q", msg)
	}
}

// Push refuses layouts it cannot package unambiguously, and builds for
// another platform than the folder says.
func TestPushErrors(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	other := "linux/arm64"
	if HostPlatform() == other {
		other = "linux/amd64"
	}
	wrongArch := t.TempDir()
	copyFile(t, trivialBuild(t, other), filepath.Join(wrongArch, strings.ReplaceAll(HostPlatform(), "/", "-"), "hello"), 0o755)
	mixed := t.TempDir()
	copyFile(t, trivialBuild(t, HostPlatform()), filepath.Join(mixed, strings.ReplaceAll(HostPlatform(), "/", "-"), "hello"), 0o755)
	writeFile(t, filepath.Join(mixed, "README.md"), "x")
	noExe := t.TempDir()
	writeFile(t, filepath.Join(noExe, "plugin.py"), "x")
	twoExe := t.TempDir()
	copyFile(t, trivialBuild(t, HostPlatform()), filepath.Join(twoExe, "a"), 0o755)
	copyFile(t, trivialBuild(t, HostPlatform()), filepath.Join(twoExe, "b"), 0o755)
	link := pluginDir(t, "hello", nil)
	if err := os.Symlink("/etc/passwd", filepath.Join(link, "passwd")); err != nil {
		t.Fatal(err)
	}
	hello := pluginDir(t, "hello", nil)
	onlyOther := t.TempDir()
	copyFile(t, trivialBuild(t, other), filepath.Join(onlyOther, strings.ReplaceAll(other, "/", "-"), "hello"), 0o755)
	renamed := t.TempDir()
	copyFile(t, trivialBuild(t, HostPlatform()), filepath.Join(renamed, strings.ReplaceAll(HostPlatform(), "/", "-"), "hello"), 0o755)
	copyFile(t, trivialBuild(t, other), filepath.Join(renamed, strings.ReplaceAll(other, "/", "-"), "hi"), 0o755)

	for _, tc := range []struct {
		name, dir, target string
		platforms         []string
		want              []string
	}{
		{"wrong arch", wrongArch, "p/hello:1", nil, []string{"is an executable for " + other + ", not for " + HostPlatform()}},
		{"files beside platform folders", mixed, "p/hello:1", nil, []string{"and other files (README.md)"}},
		{"platform folders and --platform", mixed, "p/hello:1", []string{"linux/amd64"}, []string{"--platform is not needed"}},
		{"no executable", noExe, "p/hello:1", nil, []string{"holds no executable file"}},
		{"two executables", twoExe, "p/hello:1", nil, []string{"several executable files (a, b)"}},
		{"symlink", link, "p/hello:1", nil, []string{"is a symbolic link"}},
		{"push to a digest", hello, "p/hello@sha256:" + strings.Repeat("a", 64), nil, []string{"push to a tag"}},
		{"bad platform", hello, "p/hello:1", []string{"linux"}, []string{`platform "linux" is not os/arch`}},
		{"no build for here", onlyOther, "p/hello:1", nil, []string{"none for this machine (" + HostPlatform() + ")"}},
		{"executable named otherwise", renamed, "p/hello:1", nil, []string{`the plugin calls itself "hello", but its executable for ` + other + " is", "name the executable hello on every platform"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.h.Push(ctxT(t), helper.PushRequest{Dir: tc.dir, Target: f.reg.Ref(tc.target), Platforms: tc.platforms})
			wantErr(t, err, tc.want...)
		})
	}
}
