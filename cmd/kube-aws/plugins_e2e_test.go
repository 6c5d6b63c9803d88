package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/plugintest"
)

// A folder under plugins/ without its executable is a plugin's source before
// its first build (the guide lays it out so): it holds up nothing while the
// plugin is not enabled, and is a clear error once it is.
func TestAPluginFolderWithoutItsExecutable(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	src := filepath.Join(l.cluster, "plugins", "hello")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	problem := "plugin folder " + src + " has no executable named hello"

	// Unknown to cluster.yaml, then disabled: a warning, and every command works.
	for _, entry := range []string{"", "  hello:\n    enabled: false\n"} {
		if entry != "" {
			b, _ := os.ReadFile(filepath.Join(l.cluster, "cluster.yaml"))
			if err := os.WriteFile(filepath.Join(l.cluster, "cluster.yaml"), []byte(strings.Replace(string(b), "\nplugins: {}\n", "\nplugins:\n"+entry, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, args := range [][]string{{"render"}, {"plugins", "list"}, {"plugins", "lock"}, {"plugins", "verify"}} {
			out, errOut, code := l.run(args...)
			warned := strings.Contains(errOut, problem) && strings.Contains(errOut, "warning")
			if code != 0 || (args[0] == "render" || args[1] == "list") && !warned {
				t.Fatalf("kube-aws %s with %q: exit %d, want 0 (with a warning naming the folder from render and list)\n%s\n%s", strings.Join(args, " "), entry, code, out, errOut)
			}
		}
	}

	// Enabled: an error naming the folder and cluster.yaml's line.
	b, _ := os.ReadFile(filepath.Join(l.cluster, "cluster.yaml"))
	if err := os.WriteFile(filepath.Join(l.cluster, "cluster.yaml"), []byte(strings.Replace(string(b), "  hello:\n    enabled: false\n", "  hello:\n    enabled: true\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := l.run("render")
	if code != 2 || !strings.Contains(errOut, "plugin hello is enabled but cannot be started: "+problem) ||
		!strings.Contains(errOut, filepath.Join(l.cluster, "cluster.yaml")+":") || !strings.Contains(errOut, "set plugins.hello.enabled: false") {
		t.Fatalf("render with the plugin enabled: exit %d, want 2 naming the folder and the line\n%s\n%s", code, out, errOut)
	}
	l.assertNoPluginLeft()
}

// Without cluster.yaml there is no cluster folder: a ./plugins folder where
// `kube-aws plugins list` runs is not taken for user plugins.
func TestPluginsListWithoutClusterYAMLIgnoresDotPlugins(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	dir := t.TempDir()
	copyFile(t, plugintest.Build(t, "github.com/kube-aws/kube-aws/plugins/testdata/trivial"), filepath.Join(dir, "plugins", "stray", "stray"))
	if err := os.MkdirAll(filepath.Join(dir, "plugins", "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := l.cmd("plugins", "list", "-o", "json")
	c.Dir = dir
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("plugins list: %v\n%s\n%s", err, out, stderr.String())
	}
	var doc struct {
		Plugins []struct{ Name, Source string }
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range doc.Plugins {
		if p.Source == "user" {
			t.Fatalf("./plugins taken for user plugins without a cluster.yaml: %+v", doc.Plugins)
		}
	}
	if len(doc.Plugins) != 1 || doc.Plugins[0].Name != "base" {
		t.Fatalf("plugins list: %+v, want the built-in only", doc.Plugins)
	}
}

// plugins.lock records contrib plugins by source and name: kube-aws
// installed at another path, with the same binaries, verifies and runs.
// And every mismatch is reported at once, each naming its file, by verify
// and by render.
func TestPluginsLockIsPortableAndNamesEveryMismatch(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	copyFile(t, plugintest.Build(t, "github.com/kube-aws/kube-aws/plugins/testdata/trivial"), filepath.Join(l.root, "bin", "kube-aws-plugins", "contrib", "trivial"))
	l.userPlugin("hello", "github.com/kube-aws/kube-aws/cmd/kube-aws/testdata/hello", "")
	b, _ := os.ReadFile(filepath.Join(l.cluster, "cluster.yaml"))
	if err := os.WriteFile(filepath.Join(l.cluster, "cluster.yaml"), []byte(strings.Replace(string(b), "\nplugins:\n", "\nplugins:\n  trivial:\n    enabled: true\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.cluster, "plugins", "hello", "greeting.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := l.run("plugins", "lock"); code != 0 || !strings.Contains(out, "locked 2 plugin(s)") {
		t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
	}
	lock, _ := os.ReadFile(filepath.Join(l.cluster, "plugins.lock"))
	if strings.Contains(string(lock), l.root) {
		t.Fatalf("plugins.lock holds this machine's paths:\n%s", lock)
	}

	// kube-aws installed elsewhere: the same binaries, another folder.
	moved := filepath.Join(t.TempDir(), "opt", "kube-aws")
	copyTree(t, filepath.Join(l.root, "bin"), moved)
	l.kubeAWS = filepath.Join(moved, "kube-aws")
	for _, args := range [][]string{{"plugins", "verify"}, {"render"}} {
		if out, errOut, code := l.run(args...); code != 0 {
			t.Fatalf("kube-aws %s from another install path: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
		}
	}

	// Three changes: the contrib binary, the user plugin's executable and
	// the file beside it. Each is reported, naming its file.
	appendFile(t, filepath.Join(moved, "kube-aws-plugins", "contrib", "trivial"), "tampered")
	appendFile(t, filepath.Join(l.cluster, "plugins", "hello", "hello"), "tampered")
	appendFile(t, filepath.Join(l.cluster, "plugins", "hello", "greeting.txt"), "tampered")
	want := []string{
		"plugin trivial (" + filepath.Join(moved, "kube-aws-plugins", "contrib", "trivial") + ") does not match plugins.lock",
		"plugin hello (" + filepath.Join(l.cluster, "plugins", "hello", "hello") + ") does not match plugins.lock",
		"plugin hello: " + filepath.Join(l.cluster, "plugins", "hello", "greeting.txt") + " does not match plugins.lock",
	}
	out, _, code := l.run("plugins", "verify", "-o", "json")
	var doc struct {
		Diagnostics []struct{ Message string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 || len(doc.Diagnostics) != len(want) {
		t.Fatalf("verify: exit %d %v, want 1 with %d diagnostics\n%s", code, err, len(want), out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("verify does not report %q:\n%s", w, out)
		}
	}
	out, errOut, code := l.run("render")
	if code != 1 || !strings.Contains(errOut, "3 fatal") {
		t.Fatalf("render: exit %d, want 1 with 3 fatal diagnostics\n%s\n%s", code, out, errOut)
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) {
			t.Fatalf("render does not report %q:\n%s", w, errOut)
		}
	}
	l.assertNoPluginLeft()
}

// copyTree copies a folder, keeping file modes.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		copyFile(t, path, filepath.Join(to, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
