package builtin

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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

// No plugin imports another plugin's package, and no program but the
// built-ins' executable imports a plugin's: what two plugins agree on is
// in core/, what built-ins share in builtin/internal (docs/design.md).
func TestNoPluginImportsAnother(t *testing.T) {
	const mod = "github.com/kube-aws/kube-aws/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", mod+"builtin/...", mod+"contrib/plugins/...", mod+"cmd/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	// owner says which plugin a package is of ("" for none): builtin/<name>/...
	// but builtin/internal, and contrib/plugins/<name>/....
	owner := func(pkg string) string {
		rest, ok := strings.CutPrefix(pkg, mod)
		if !ok {
			return ""
		}
		parts := strings.Split(rest, "/")
		switch {
		case len(parts) >= 2 && parts[0] == "builtin" && parts[1] != "internal":
			return "builtin/" + parts[1]
		case len(parts) >= 3 && parts[0] == "contrib" && parts[1] == "plugins":
			return "contrib/plugins/" + parts[2]
		}
		return ""
	}
	pkgs := strings.Fields(string(out))
	checked := 0
	for _, p := range pkgs {
		self := owner(p)
		if self == "" && !strings.HasPrefix(p, mod+"cmd/") || p == mod+"cmd/kube-aws-builtins" {
			continue
		}
		deps, err := exec.Command("go", "list", "-deps", p).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", p, err, deps)
		}
		checked++
		for _, d := range strings.Fields(string(deps)) {
			if o := owner(d); o != "" && o != self {
				t.Errorf("%s imports %s, a package of plugin %s", p, d, o)
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d packages of %v", checked, pkgs)
	}
}

// The built-ins render charts offline, so their executable links neither
// client-go's scheme nor any k8s.io/api group: their package init was the
// largest part of the process's start, paid on every command. The patched
// Helm under third_party/ keeps them out (third_party/README.md); a new
// import that brings them back fails here.
func TestBuiltinsLinkNoKubernetesAPIGroups(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/kube-aws/kube-aws/cmd/kube-aws-builtins").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "helm.sh/helm/v3/pkg/engine") {
		t.Fatalf("the built-ins no longer link Helm's engine; this test has nothing to check:\n%s", out)
	}
	for _, d := range deps {
		if d == "k8s.io/client-go/kubernetes/scheme" || d == "k8s.io/client-go/discovery" || strings.HasPrefix(d, "k8s.io/api/") {
			t.Errorf("cmd/kube-aws-builtins links %s", d)
		}
	}
}
