package builtin

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// `make build` links a name in the built-in folder for every
// builtin/<name>/plugin.go; the executable must serve exactly those names,
// or kube-aws would start a name it cannot call, or never find a plugin.
func TestPluginsMatchTheirFolders(t *testing.T) {
	files, err := filepath.Glob("*/plugin.go")
	if err != nil {
		t.Fatal(err)
	}
	var folders, served []string
	for _, f := range files {
		folders = append(folders, filepath.Dir(f))
	}
	for _, p := range Plugins() {
		served = append(served, p.Info().Name)
	}
	slices.Sort(folders)
	slices.Sort(served)
	if !slices.Equal(folders, served) || len(folders) == 0 {
		t.Errorf("folders with a plugin.go: %v\nplugins served: %v", folders, served)
	}
	if _, err := os.Stat(filepath.Join("internal", "plugin.go")); err == nil {
		t.Error("builtin/internal is shared code, not a plugin")
	}
}
