package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/plugins/source"
	"github.com/kube-aws/kube-aws/test/awstest"
	"github.com/kube-aws/kube-aws/test/registrytest"
)

// These tests run kube-aws against a real OCI registry (the CNCF
// distribution registry on 127.0.0.1) with signatures made by the cosign
// CLI, as a plugin author and an operator would: push, sign, name the
// plugin by its source in cluster.yaml, run.

// pythonVenv is the interpreter with grpcio, for the Python example.
func pythonVenv(t testing.TB) string {
	t.Helper()
	py, err := awstest.VenvBin("python")
	if err != nil {
		t.Fatalf("no Python virtual environment with grpcio (%v): run make venv", err)
	}
	return py
}

// installHelper puts kube-aws-oci where `make build` puts it, beside the
// kube-aws under test.
func installHelper(t testing.TB, kubeAWS string) {
	t.Helper()
	copyFile(t, plugintest.Build(t, "github.com/kube-aws/kube-aws/cmd/kube-aws-oci"),
		filepath.Join(filepath.Dir(kubeAWS), "kube-aws-plugins", "libexec", "kube-aws-oci"))
}

// registryEnv keeps the user's logins and cache out of a test.
func registryEnv(t testing.TB) (cacheDir string) {
	t.Helper()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	return t.TempDir()
}

// pythonExampleDir copies the Python example's plugin files (not its Go
// test) into a folder named after the plugin, as docs/plugins.md says.
func pythonExampleDir(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "examples", "python-plugin")
	dst := filepath.Join(t.TempDir(), "python-example")
	for _, f := range []string{"python-example", "plugin.py", "kube_aws_plugin/__init__.py", "kube_aws_plugin/plugin_pb2.py", "kube_aws_plugin/plugin_pb2_grpc.py"} {
		copyFile(t, filepath.Join(src, filepath.FromSlash(f)), filepath.Join(dst, filepath.FromSlash(f)))
	}
	return dst
}

// goBuild builds a main package for os/arch into dir/<os>-<arch>/name,
// with extra build flags.
func goBuild(t testing.TB, pkg, platform, dir, name string, flags ...string) {
	t.Helper()
	goos, goarch, _ := strings.Cut(platform, "/")
	out := filepath.Join(dir, goos+"-"+goarch, name)
	cmd := exec.Command("go", append(append([]string{"build", "-trimpath"}, flags...), "-o", out, pkg)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s for %s: %v\n%s", pkg, platform, err, b)
	}
}

// versionOverlay is a `go build -overlay` file that builds path with old
// replaced by new: the plugin at another version, as its author would
// release it, without touching the checkout.
func versionOverlay(t testing.TB, path, old, new string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(src, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ov, err := json.Marshal(map[string]map[string]string{"Replace": {abs: src}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(file, ov, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func otherPlatform() string {
	if runtime.GOARCH == "arm64" {
		return runtime.GOOS + "/amd64"
	}
	return runtime.GOOS + "/arm64"
}

// The registry's promise: the example Python plugin and a Go plugin (the
// contrib kube2iam, at another version than the one kube-aws ships) pushed
// to a local registry, the Go one signed with cosign, named by source in
// cluster.yaml: kube-aws installs, verifies and pins them, and `up` runs
// them through all four stages against moto.
func TestPluginsFromARegistryThroughAllFourStages(t *testing.T) {
	py := pythonVenv(t)
	cacheDir := registryEnv(t)
	reg := registrytest.Start(t, registrytest.Options{})
	cosign := registrytest.NewCosign(t)
	l := newAWSLayout(t)
	l.env = []string{"KUBE_AWS_PYTHON=" + py, "KUBE_AWS_CACHE_DIR=" + cacheDir}
	installHelper(t, l.kubeAWS)
	// The shipped kube2iam, which the registry's version replaces.
	copyFile(t, plugintest.Build(t, "github.com/kube-aws/kube-aws/contrib/plugins/kube2iam"),
		filepath.Join(filepath.Dir(l.kubeAWS), "kube-aws-plugins", "contrib", "kube2iam"))

	// The author's side: push both, sign the Go one.
	pyRef := reg.Ref("plugins/python-example:0.1.0")
	stdout, stderr, code := l.run("plugins", "push", pythonExampleDir(t), pyRef, "--platform", source.HostPlatform()+","+otherPlatform())
	if code != 0 || !strings.Contains(stdout, "pushed python-example 0.1.0 for ") {
		t.Fatalf("push python-example: exit %d\n%s\n%s", code, stdout, stderr)
	}
	dist := t.TempDir()
	overlay := versionOverlay(t, filepath.Join("..", "..", "contrib", "plugins", "kube2iam", "main.go"), `Version = "0.1.0"`, `Version = "0.2.0-registry"`)
	for _, p := range []string{source.HostPlatform(), otherPlatform()} {
		goBuild(t, "github.com/kube-aws/kube-aws/contrib/plugins/kube2iam", p, dist, "kube2iam", "-overlay", overlay)
	}
	goRef := reg.Ref("plugins/kube2iam:0.2.0-registry")
	stdout, stderr, code = l.run("plugins", "push", dist, goRef, "--output", "json")
	if code != 0 {
		t.Fatalf("push kube2iam: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var pushed struct{ Digest, Repository, Version string }
	if err := json.Unmarshal([]byte(stdout), &pushed); err != nil || pushed.Version != "0.2.0-registry" {
		t.Fatalf("push --output json: %v %s", err, stdout)
	}
	keys := t.TempDir()
	priv, pub := cosign.GenerateKeyPair(t, keys)
	cosign.Sign(t, priv, pushed.Repository+"@"+pushed.Digest, registrytest.Bundle)
	copyFile(t, pub, filepath.Join(l.cluster, "keys", "acme.pub"))

	// The operator's side.
	l.edit("\n  deploy:\n    enabled: true\n", "\n  deploy:\n    enabled: true\n"+
		"  python-example:\n    source: "+pyRef+"\n    values:\n      greeting: hi from a registry\n"+
		"  kube2iam:\n    source: "+goRef+"\n    verify:\n      key: keys/acme.pub\n    values:\n      roleARNs: [arn:aws:iam::123456789012:role/k8s-*]\n")
	stdout, stderr, code = l.run("plugins", "install")
	if code != 0 || !strings.Contains(stdout, "kube2iam: pinned 0.2.0-registry ("+pushed.Digest+") from "+goRef+"; signature verified; downloaded") ||
		!strings.Contains(stdout, "python-example: pinned 0.1.0 (sha256:") || !strings.Contains(stdout, "plugins.lock updated: commit it") {
		t.Fatalf("plugins install: exit %d\n%s\n%s", code, stdout, stderr)
	}
	lock, err := source.ReadLockfile(filepath.Join(l.cluster, source.LockfileName))
	if err != nil {
		t.Fatal(err)
	}
	if e := lock.Entry("kube2iam"); e == nil || e.Source != source.OCI || e.Digest != pushed.Digest || e.Key == "" || len(e.Platforms) != 2 {
		t.Fatalf("lock entry for kube2iam: %+v", e)
	}
	if e := lock.Entry("python-example"); e == nil || e.Key != "" || len(e.Platforms[source.HostPlatform()].Files) != 4 {
		t.Fatalf("lock entry for python-example: %+v", e)
	}

	stdout, stderr, code = l.run("plugins", "list")
	for _, want := range []string{"kube2iam 0.2.0-registry", "python-example 0.1.0"} {
		if code != 0 || !strings.Contains(strings.Join(strings.Fields(stdout), " "), want+" oci true") {
			t.Errorf("plugins list does not show %q from oci, enabled:\n%s\n%s", want, stdout, stderr)
		}
	}
	if stdout, stderr, code := l.run("plugins", "verify"); code != 0 {
		t.Fatalf("plugins verify: exit %d\n%s\n%s", code, stdout, stderr)
	}

	stdout, stderr, code = l.run("up", "--endpoint-url", l.endpoint)
	out := stdout + stderr
	if code != 0 {
		t.Fatalf("up: exit %d\n%s", code, out)
	}
	for _, st := range []string{"initialise:", "render:", "deploy:", "validate:"} {
		line := lineWith(out, st)
		if !strings.Contains(line, "python-example") {
			t.Errorf("stage line %q does not name python-example", line)
		}
	}
	if line := lineWith(out, "initialise:"); !strings.Contains(line, "kube2iam") {
		t.Errorf("initialise did not run kube2iam: %q", line)
	}
	if strings.Contains(out, "plugins: ") {
		t.Errorf("up installed something although every plugin was pinned and cached:\n%s", out)
	}
	// The Python plugin's rendered file, recorded as its.
	manifest, err := os.ReadFile(filepath.Join(l.cluster, "rendered", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Files []struct{ Path, Plugin, Version string }
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range m.Files {
		found = found || (f.Path == "extra/python-example.json" && f.Plugin == "python-example" && f.Version == "0.1.0")
	}
	if !found {
		t.Errorf("manifest.json has no extra/python-example.json by python-example 0.1.0:\n%s", manifest)
	}
	// kube2iam's contribution: its chart in the helm built-in's releases.
	if b, err := os.ReadFile(filepath.Join(l.cluster, "rendered", "charts", "releases.json")); err != nil || !strings.Contains(string(b), "kube2iam") {
		t.Errorf("rendered/charts/releases.json has no kube2iam release: %v\n%s", err, b)
	}
}

func lineWith(s, prefix string) string {
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}
