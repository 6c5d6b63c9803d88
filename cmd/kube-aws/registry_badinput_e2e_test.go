package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/plugins/source"
	"github.com/kube-aws/kube-aws/test/registrytest"
)

// Every bad input of plugin distribution through the kube-aws binary
// against a real registry: each is refused with its message, pointing at
// the setting in cluster.yaml, and no plugin is started.

type regLayout struct {
	*layout
	reg   *registrytest.Registry
	cache string
}

func newRegLayout(t *testing.T) *regLayout {
	t.Helper()
	cacheDir := registryEnv(t)
	t.Setenv("KUBE_AWS_CACHE_DIR", cacheDir)
	l := &regLayout{layout: newLayout(t), reg: registrytest.Start(t, registrytest.Options{}), cache: cacheDir}
	installHelper(t, l.kubeAWS)
	return l
}

// pluginFolder is the trivial test plugin as name, with extra files; with
// version set, built at that version.
func (l *regLayout) pluginFolder(name, version string, files map[string]string) string {
	l.t.Helper()
	dir := filepath.Join(l.t.TempDir(), name)
	if version == "" {
		copyFile(l.t, plugintest.Build(l.t, "github.com/kube-aws/kube-aws/plugins/testdata/trivial"), filepath.Join(dir, name))
	} else {
		ov := versionOverlay(l.t, filepath.Join("..", "..", "plugins", "testdata", "trivial", "main.go"), `Version: "0.0.1"`, `Version: "`+version+`"`)
		goBuild(l.t, "github.com/kube-aws/kube-aws/plugins/testdata/trivial", source.HostPlatform(), dir, name, "-overlay", ov)
		plat := filepath.Join(dir, strings.ReplaceAll(source.HostPlatform(), "/", "-"))
		if err := os.Rename(filepath.Join(plat, name), filepath.Join(dir, name+".tmp")); err != nil {
			l.t.Fatal(err)
		}
		os.Remove(plat)
		if err := os.Rename(filepath.Join(dir, name+".tmp"), filepath.Join(dir, name)); err != nil {
			l.t.Fatal(err)
		}
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			l.t.Fatal(err)
		}
	}
	return dir
}

// push pushes a folder with `kube-aws plugins push` and returns the digest.
func (l *regLayout) push(dir, repoAndTag string, args ...string) string {
	l.t.Helper()
	stdout, stderr, code := l.run(append([]string{"plugins", "push", dir, l.reg.Ref(repoAndTag)}, args...)...)
	if code != 0 {
		l.t.Fatalf("push: exit %d\n%s\n%s", code, stdout, stderr)
	}
	m := regexp.MustCompile(`digest: (sha256:[0-9a-f]{64})`).FindStringSubmatch(stdout)
	if m == nil {
		l.t.Fatalf("push printed no digest:\n%s", stdout)
	}
	return m[1]
}

// plugin sets plugins.<name> in cluster.yaml to the given YAML lines.
func (l *regLayout) plugin(name string, lines ...string) {
	l.t.Helper()
	path := filepath.Join(l.cluster, "cluster.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		l.t.Fatal(err)
	}
	s := strings.Replace(string(b), "\nplugins: {}\n", "\nplugins:\n", 1)
	// Drop an earlier entry of this plugin.
	re := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + `:\n(    .*\n)*`)
	s = re.ReplaceAllString(s, "")
	entry := "  " + name + ":\n"
	for _, line := range lines {
		entry += "    " + line + "\n"
	}
	s = strings.Replace(s, "\nplugins:\n", "\nplugins:\n"+entry, 1)
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		l.t.Fatal(err)
	}
}

// refused runs kube-aws and wants exit code, each of parts in stderr, and
// a file:line position for the setting path.
func (l *regLayout) refused(code int, path string, parts []string, args ...string) string {
	l.t.Helper()
	stdout, stderr, got := l.run(args...)
	if got != code {
		l.t.Fatalf("kube-aws %v: exit %d, want %d\n%s\n%s", args, got, code, stdout, stderr)
	}
	if path != "" && !regexp.MustCompile(`cluster\.yaml:\d+:\d+:? `+regexp.QuoteMeta(path)).MatchString(stderr) {
		l.t.Errorf("kube-aws %v: no position for %s in:\n%s", args, path, stderr)
	}
	for _, p := range parts {
		if !strings.Contains(stderr, p) {
			l.t.Errorf("kube-aws %v: stderr does not say %q:\n%s", args, p, stderr)
		}
	}
	l.t.Logf("kube-aws %s:\n%s", strings.Join(args, " "), stderr)
	return stderr
}

func (l *regLayout) ok(args ...string) (string, string) {
	l.t.Helper()
	stdout, stderr, code := l.run(args...)
	if code != 0 {
		l.t.Fatalf("kube-aws %v: exit %d\n%s\n%s", args, code, stdout, stderr)
	}
	return stdout, stderr
}

// A registry that is down: a cold cache is a clear error naming it; a
// pinned, cached plugin renders without it, and without even the helper.
func TestRegistryDownCLI(t *testing.T) {
	l := newRegLayout(t)
	l.push(l.pluginFolder("hello", "", nil), "plugins/hello:0.0.1")
	l.plugin("hello", "source: "+l.reg.Ref("plugins/hello:0.0.1"))
	l.reg.Stop()
	l.refused(1, "plugins.hello.source", []string{"registry " + l.reg.Host + " is unreachable", "connection refused"}, "render")
	if err := l.reg.Restart(); err != nil {
		t.Fatal(err)
	}
	_, stderr := l.ok("render")
	if !strings.Contains(stderr, "plugins: pinned plugin hello 0.0.1 (sha256:") {
		t.Errorf("the first render does not say it pinned the plugin:\n%s", stderr)
	}
	l.reg.Stop()
	// No helper at all: a warm render must not need it.
	t.Setenv("KUBE_AWS_OCI", filepath.Join(t.TempDir(), "no-helper"))
	stdout, stderr := l.ok("render")
	if strings.Contains(stderr, "plugins: ") || !strings.Contains(stdout+stderr, "hello") {
		t.Errorf("warm render:\n%s\n%s", stdout, stderr)
	}
}

// An unknown tag lists the tags there are.
func TestUnknownTagCLI(t *testing.T) {
	l := newRegLayout(t)
	l.push(l.pluginFolder("hello", "", nil), "plugins/hello:0.0.1")
	l.plugin("hello", "source: "+l.reg.Ref("plugins/hello:0.0.2"))
	l.refused(1, "plugins.hello.source", []string{"tag 0.0.2 not found in " + l.reg.Host + "/plugins/hello", "the tags there are: 0.0.1"}, "plugins", "install")
}

// No build for this platform: the builds there are listed.
func TestNoBuildForThisPlatformCLI(t *testing.T) {
	l := newRegLayout(t)
	bin := filepath.Join(t.TempDir(), "hello")
	copyFile(t, plugintest.Build(t, "github.com/kube-aws/kube-aws/plugins/testdata/trivial"), bin)
	dir := filepath.Join(t.TempDir(), "hello")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hello"), []byte("#!/bin/sh\nexec "+bin+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l.push(dir, "plugins/hello:0.0.1", "--platform", "plan9/arm,windows/arm64")
	l.plugin("hello", "source: "+l.reg.Ref("plugins/hello:0.0.1"))
	l.refused(1, "plugins.hello.source", []string{"has no build of plugin hello for " + source.HostPlatform() + "; it has plan9/arm, windows/arm64"}, "render")
}

// A layer whose bytes do not match its digest: nothing is installed.
func TestLayerDigestMismatchCLI(t *testing.T) {
	l := newRegLayout(t)
	l.push(l.pluginFolder("hello", "", map[string]string{"notes.txt": "version one\n"}), "plugins/hello:0.0.1")
	l.plugin("hello", "source: "+l.reg.Ref("plugins/hello:0.0.1"))
	blob := l.reg.BlobPath("sha256:" + sha256Hex("version one\n"))
	if err := os.WriteFile(blob, []byte("version two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l.refused(1, "plugins.hello.source", []string{"the file notes.txt (layer sha256:" + sha256Hex("version one\n") + ") that registry " + l.reg.Host + " served does not match its digest", "nothing was installed"}, "plugins", "install")
	if es, _ := os.ReadDir(filepath.Join(l.cache, "sha256")); len(es) != 0 {
		t.Errorf("cache holds %v", es)
	}
}

// A tag moved after the lock: render keeps the pin, install refuses the
// move, upgrade moves the pin printing both versions.
func TestTagMovedAfterLockCLI(t *testing.T) {
	l := newRegLayout(t)
	first := l.push(l.pluginFolder("hello", "", nil), "plugins/hello:stable")
	l.plugin("hello", "source: "+l.reg.Ref("plugins/hello:stable"))
	l.ok("plugins", "install")
	second := l.push(l.pluginFolder("hello", "0.0.2", nil), "plugins/hello:stable")
	l.refused(1, "plugins.hello.source", []string{"the tag of " + l.reg.Ref("plugins/hello:stable") + " has moved",
		"plugins.lock pins plugin hello 0.0.1 (" + first + ")", "the tag now points at 0.0.2 (" + second + ")", "run `kube-aws plugins upgrade hello`"}, "plugins", "install")
	if _, stderr := l.ok("render"); strings.Contains(stderr, "plugins: ") {
		t.Errorf("render followed or reported the moved tag:\n%s", stderr)
	}
	stdout, _ := l.ok("plugins", "upgrade", "hello")
	if !strings.Contains(stdout, "hello: 0.0.1 ("+first+") -> 0.0.2 ("+second+") from "+l.reg.Ref("plugins/hello:stable")+"; downloaded") {
		t.Errorf("upgrade:\n%s", stdout)
	}
	l.ok("plugins", "install")
	stdout, _ = l.ok("plugins", "upgrade")
	if !strings.Contains(stdout, "hello: 0.0.2 ("+second+") from "+l.reg.Ref("plugins/hello:stable")+"; up to date") {
		t.Errorf("a second upgrade:\n%s", stdout)
	}
	// A new source in cluster.yaml is not installed silently either.
	l.push(l.pluginFolder("hello", "0.0.3", nil), "plugins/hello:0.0.3")
	l.plugin("hello", "source: "+l.reg.Ref("plugins/hello:0.0.3"))
	l.refused(1, "plugins.hello.source", []string{"plugins.hello.source is " + l.reg.Ref("plugins/hello:0.0.3") + ", but plugins.lock pins plugin hello 0.0.2"}, "render")
	l.ok("plugins", "upgrade", "hello")
	l.ok("render")
}

// A missing and a wrong signature are refused at plugins.NAME.verify.
func TestSignaturesCLI(t *testing.T) {
	l := newRegLayout(t)
	cosign := registrytest.NewCosign(t)
	_, pub := cosign.GenerateKeyPair(t, l.cluster)
	otherKey, _ := cosign.GenerateKeyPair(t, t.TempDir())
	digest := l.push(l.pluginFolder("hello", "", nil), "plugins/hello:0.0.1")
	l.plugin("hello", "source: "+l.reg.Ref("plugins/hello:0.0.1"), "verify: {key: "+filepath.Base(pub)+"}")
	l.refused(1, "plugins.hello.verify", []string{"plugin hello from " + l.reg.Ref("plugins/hello:0.0.1") + " (" + digest + ") is refused: it has no cosign signature",
		"sign it with `cosign sign --key cosign.key --tlog-upload=false --use-signing-config=false REGISTRY/REPOSITORY@" + digest + "`"}, "render")
	cosign.Sign(t, otherKey, l.reg.Host+"/plugins/hello@"+digest, registrytest.SimpleSigning)
	l.refused(1, "plugins.hello.verify", []string{"is refused: none of its 1 cosign signature(s) verifies with the key " + pub}, "plugins", "install")
	if _, err := os.Stat(filepath.Join(l.cluster, source.LockfileName)); err == nil {
		t.Error("a refused plugin was pinned in plugins.lock")
	}
}

// An artifact whose info names another plugin is refused.
func TestArtifactNamesAnotherPluginCLI(t *testing.T) {
	l := newRegLayout(t)
	l.push(l.pluginFolder("hello", "", nil), "plugins/other:0.0.1")
	l.plugin("other", "source: "+l.reg.Ref("plugins/other:0.0.1"))
	l.refused(1, "plugins.other.source", []string{`holds plugin "hello", not "other"`}, "render")
}

// A cache entry changed on disk is downloaded again, or refused when the
// registry is down, and never run; a change the cheap check cannot see is
// refused by the sha256 check before the plugin starts.
func TestTamperedCacheEntryCLI(t *testing.T) {
	l := newRegLayout(t)
	l.push(l.pluginFolder("hello", "", nil), "plugins/hello:0.0.1")
	l.plugin("hello", "source: "+l.reg.Ref("plugins/hello:0.0.1"))
	l.ok("plugins", "install")
	lock, err := source.ReadLockfile(filepath.Join(l.cluster, source.LockfileName))
	if err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(l.cache, "sha256", strings.TrimPrefix(lock.Entry("hello").Platforms[source.HostPlatform()].Manifest, "sha256:"))
	exe := filepath.Join(entry, "hello")
	good, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	evil := []byte("#!/bin/sh\ntouch " + marker + "\n")
	tamper := func() {
		if err := os.WriteFile(exe, evil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tamper()
	_, stderr := l.ok("render")
	if !strings.Contains(stderr, "plugins: plugin hello: its cached copy had been changed on disk and was downloaded again") {
		t.Errorf("render:\n%s", stderr)
	}
	if b, _ := os.ReadFile(exe); string(b) != string(good) {
		t.Error("the executable was not restored")
	}
	restored, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	tamper()
	l.reg.Stop()
	l.refused(1, "plugins.hello.source", []string{"registry " + l.reg.Host + " is unreachable", "because its cached copy " + entry + " was changed on disk and is never run so"}, "render")

	// Same size and time as the real file: only the sha256 can tell.
	padded := append(append([]byte{}, evil...), make([]byte, len(good)-len(evil))...)
	if err := os.WriteFile(exe, padded, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(exe, time.Now(), restored.ModTime()); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := l.run("render")
	if code == 0 || !strings.Contains(stderr, "plugin hello ("+exe+") does not match plugins.lock") ||
		!strings.Contains(stderr, "its copy in the plugin cache was changed on disk: run `kube-aws plugins install`") {
		t.Errorf("render with a same-size change: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a tampered cache entry was run")
	}
}

// A source and a user plugin folder for one name: one name, one place.
func TestSourceAndUserFolderCLI(t *testing.T) {
	l := newRegLayout(t)
	l.push(l.pluginFolder("hello", "", nil), "plugins/hello:0.0.1")
	copyFile(t, plugintest.Build(t, "github.com/kube-aws/kube-aws/plugins/testdata/trivial"), filepath.Join(l.cluster, "plugins", "hello", "hello"))
	l.plugin("hello", "source: "+l.reg.Ref("plugins/hello:0.0.1"))
	stderr := l.refused(2, "", []string{"plugin hello is found twice: plugins.hello.source (" + l.reg.Ref("plugins/hello:0.0.1") + ") and the user plugin " + filepath.Join(l.cluster, "plugins", "hello")}, "render")
	if strings.Contains(stderr, "plugins: ") {
		t.Errorf("something was installed before the conflict was reported:\n%s", stderr)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Every malformed source is a configuration error at its line, exit 2,
// whichever the mistake, before anything is installed; so is an empty
// source, which would otherwise quietly mean "no source".
func TestMalformedSourcesCLI(t *testing.T) {
	l := newLayout(t)
	t.Setenv("KUBE_AWS_CACHE_DIR", registryEnv(t))
	installHelper(t, l.kubeAWS)
	rl := &regLayout{layout: l}
	for _, tc := range []struct{ source, want string }{
		{`""`, "plugins.hello.source is empty"},
		{"https://ghcr.io/acme/hello:1", "is not an oci:// reference"},
		{"oci://ghcr.io", "names no registry and repository"},
		{"oci://ghcr.io/acme/hello", "names no tag or digest"},
		{"oci://ghcr.io/Acme/hello:1", `names the repository "Acme/hello", which is not a valid repository name`},
		{"oci://ghcr.io/acme/hello:+1", `has the tag "+1", which is not a valid tag`},
		{"oci://ghcr.io/acme/hello@sha256:abc", `pins "sha256:abc", which is not a sha256 digest`},
		{"'oci://ghcr io/acme/hello:1'", `names the registry "ghcr io"`},
	} {
		rl.plugin("hello", "source: "+tc.source)
		for _, cmd := range [][]string{{"render"}, {"plugins", "install"}} {
			stderr := rl.refused(2, "plugins.hello.source", []string{tc.want}, cmd...)
			if strings.Contains(stderr, "plugins: ") {
				t.Errorf("%s: something was installed:\n%s", tc.source, stderr)
			}
		}
	}
}

// A plugin from a registry without verify.key is a warning at its source
// (the first pin trusts whoever can push there); --warnings-as-errors makes
// it fatal before anything is downloaded.
func TestUnsignedSourceWarnsCLI(t *testing.T) {
	l := newRegLayout(t)
	l.push(l.pluginFolder("hello", "", nil), "plugins/hello:0.0.1")
	l.plugin("hello", "source: "+l.reg.Ref("plugins/hello:0.0.1"))
	l.refused(2, "plugins.hello.source", []string{"warning", "plugin hello comes from a registry and its signature is not checked",
		"set plugins.hello.verify.key"}, "--warnings-as-errors", "plugins", "install")
	if es, _ := os.ReadDir(filepath.Join(l.cache, "sha256")); len(es) != 0 {
		t.Errorf("installed with --warnings-as-errors: %v", es)
	}
	_, stderr := l.ok("plugins", "install")
	if !regexp.MustCompile(`warning \S*cluster\.yaml:\d+:\d+ plugins\.hello\.source: plugin hello comes from a registry and its signature is not checked`).MatchString(stderr) {
		t.Errorf("plugins install does not warn:\n%s", stderr)
	}
	if _, stderr := l.ok("render"); !strings.Contains(stderr, "its signature is not checked") {
		t.Errorf("render does not warn:\n%s", stderr)
	}
}

// plugins verify on a machine whose cache lacks a plugin from a registry
// says which, why and what to run, at its setting.
func TestVerifyWithNothingCachedCLI(t *testing.T) {
	l := newRegLayout(t)
	l.push(l.pluginFolder("hello", "", nil), "plugins/hello:0.0.1")
	l.plugin("hello", "source: "+l.reg.Ref("plugins/hello:0.0.1"))
	l.refused(1, "plugins.hello.source", []string{"plugin hello (" + l.reg.Ref("plugins/hello:0.0.1") + ") is not installed: run `kube-aws plugins install`"},
		"plugins", "verify")
	l.ok("plugins", "install")
	empty := t.TempDir()
	t.Setenv("KUBE_AWS_CACHE_DIR", empty)
	l.refused(1, "plugins.hello.source", []string{"plugin hello 0.0.1 (sha256:", "is not in the plugin cache (" + empty + "): run `kube-aws plugins install`"},
		"plugins", "verify")
	stdout, _, code := l.run("plugins", "verify", "--output", "json")
	if code != 1 || !strings.Contains(stdout, `"path": "plugins.hello.source"`) || !strings.Contains(stdout, "is not in the plugin cache") ||
		!strings.Contains(stdout, `"lockfile": "`+filepath.Join(l.cluster, source.LockfileName)+`"`) {
		t.Errorf("plugins verify --output json: exit %d\n%s", code, stdout)
	}
}
