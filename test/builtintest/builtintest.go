// Package builtintest gives tests the built-in plugins as kube-aws ships
// them: one executable, cmd/kube-aws-builtins, that serves every built-in
// and is called by name (sdk.ServeAll). A test gets a path named after one
// built-in, linked to that executable, which plugintest.Run launches as that
// plugin, exactly as kube-aws launches the built-in folder's links.
package builtintest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// Executable is the import path of the built-ins' executable.
const Executable = "github.com/kube-aws/kube-aws/cmd/kube-aws-builtins"

// Path builds the built-ins' executable (once per test binary, through
// plugintest.Build) and returns a path named name that links to it, in a
// folder of the test's own.
func Path(t testing.TB, name string) string {
	t.Helper()
	bin := plugintest.Build(t, Executable)
	link := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(bin, link); err != nil {
		t.Fatalf("builtintest: %v", err)
	}
	return link
}

// Install lays built-ins out in pluginDir (a kube-aws-plugins folder) as
// `make build` does: the executable at libexec/kube-aws-builtins and, for
// each name, a link builtin/<name> to it. Only the named built-ins are
// found by kube-aws.
func Install(t testing.TB, pluginDir string, names ...string) {
	t.Helper()
	bin := plugintest.Build(t, Executable)
	exe := filepath.Join(pluginDir, "libexec", "kube-aws-builtins")
	if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
		t.Fatalf("builtintest: %v", err)
	}
	// A link, not a symbolic one: deploy finds kube-aws-node beside its
	// own executable, which a symbolic link would resolve to the build's
	// folder.
	if err := fileutil.LinkOrCopy(bin, exe); err != nil {
		t.Fatalf("builtintest: %v", err)
	}
	Link(t, pluginDir, names...)
}

// Link adds builtin/<name> links to pluginDir's libexec/kube-aws-builtins,
// for a test that built the executable there itself.
func Link(t testing.TB, pluginDir string, names ...string) {
	t.Helper()
	dir := filepath.Join(pluginDir, "builtin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("builtintest: %v", err)
	}
	for _, n := range names {
		if err := os.Symlink(filepath.Join("..", "libexec", "kube-aws-builtins"), filepath.Join(dir, n)); err != nil {
			t.Fatalf("builtintest: %v", err)
		}
	}
}
