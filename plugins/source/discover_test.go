package source_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/source"
)

func writeExe(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
}

func TestDiscoverLayout(t *testing.T) {
	root := t.TempDir()
	builtin, contrib := filepath.Join(root, "builtin"), filepath.Join(root, "contrib")
	cluster := filepath.Join(root, "cluster")
	extra := filepath.Join(root, "extra")
	writeExe(t, filepath.Join(builtin, "iam"), 0o755)
	writeExe(t, filepath.Join(builtin, "cloudformation"), 0o755)
	writeExe(t, filepath.Join(contrib, "dex"), 0o755)
	writeExe(t, filepath.Join(cluster, "plugins", "hello", "hello"), 0o755)
	writeExe(t, filepath.Join(cluster, "plugins", "hello", "values.json"), 0o644) // files beside a plugin are its own
	writeExe(t, filepath.Join(cluster, "plugins", ".gitkeep"), 0o644)
	writeExe(t, filepath.Join(extra, "bastion", "bastion"), 0o755)

	src := source.Folders{BuiltinDir: builtin, ContribDir: contrib,
		UserDirs: []string{filepath.Join(cluster, "plugins"), extra, filepath.Join(root, "missing"), filepath.Join(cluster, "plugins")}}
	cands, err := source.Discover(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []source.Candidate{
		{Name: "cloudformation", Path: filepath.Join(builtin, "cloudformation"), Dir: builtin, Source: source.Builtin},
		{Name: "iam", Path: filepath.Join(builtin, "iam"), Dir: builtin, Source: source.Builtin},
		{Name: "dex", Path: filepath.Join(contrib, "dex"), Dir: contrib, Source: source.Contrib},
		{Name: "bastion", Path: filepath.Join(extra, "bastion", "bastion"), Dir: filepath.Join(extra, "bastion"), Source: source.User},
		{Name: "hello", Path: filepath.Join(cluster, "plugins", "hello", "hello"), Dir: filepath.Join(cluster, "plugins", "hello"), Source: source.User},
	}
	if !reflect.DeepEqual(cands, want) {
		t.Errorf("got  %+v\nwant %+v", cands, want)
	}

	// Nothing anywhere is fine.
	if cands, err := source.Discover(source.Folders{BuiltinDir: filepath.Join(root, "nope")}); err != nil || len(cands) != 0 {
		t.Errorf("missing folders: %v %v", cands, err)
	}
}

func TestDefaultFolders(t *testing.T) {
	t.Setenv("KUBE_AWS_BUILTIN_DIR", "/opt/b")
	t.Setenv("KUBE_AWS_CONTRIB_DIR", "")
	src := source.DefaultFolders("/c", []string{"/p1", "/p2"})
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	if src.BuiltinDir != "/opt/b" || src.ContribDir != filepath.Join(filepath.Dir(exe), "kube-aws-plugins", "contrib") ||
		!reflect.DeepEqual(src.UserDirs, []string{"/c/plugins", "/p1", "/p2"}) {
		t.Errorf("%+v", src)
	}
}

func TestDiscoverBadInput(t *testing.T) {
	root := t.TempDir()
	builtin := filepath.Join(root, "builtin")
	user := filepath.Join(root, "plugins")
	writeExe(t, filepath.Join(builtin, "helm"), 0o755)
	writeExe(t, filepath.Join(user, "helm", "helm"), 0o755)         // same name as a built-in
	writeExe(t, filepath.Join(root, "more", "helm", "helm"), 0o755) // and a third helm
	cands, err := source.Discover(source.Folders{BuiltinDir: builtin, UserDirs: []string{user, filepath.Join(root, "more")}})
	if l := lacks(err,
		"plugin helm is found twice: "+filepath.Join(builtin, "helm")+" (builtin) and "+filepath.Join(user, "helm", "helm")+" (user)",
		"plugin helm is found twice: "+filepath.Join(builtin, "helm")+" (builtin) and "+filepath.Join(root, "more", "helm", "helm")+" (user)",
	); len(l) > 0 {
		t.Errorf("error %v does not say %q", err, l)
	}
	if len(cands) == 0 || cands[0].Name != "helm" {
		t.Errorf("the candidates found are still returned: %+v", cands)
	}
}

// A plugin that cannot be started is no error of discovery: only an enabled
// plugin needs its executable (the caller decides), so each comes back with
// the problem said, and nothing else is held up by it.
func TestDiscoverReturnsWhatCannotStartWithItsProblem(t *testing.T) {
	root := t.TempDir()
	builtin := filepath.Join(root, "builtin")
	contrib := filepath.Join(root, "contrib")
	user := filepath.Join(root, "plugins")
	writeExe(t, filepath.Join(builtin, "iam"), 0o644)                // not executable
	writeExe(t, filepath.Join(contrib, "dex"), 0o755)                // fine
	writeExe(t, filepath.Join(user, "lazy", "lazy"), 0o644)          // not executable
	writeExe(t, filepath.Join(user, "stray"), 0o755)                 // a file, not a folder
	writeExe(t, filepath.Join(user, "source", "main.go"), 0o644)     // a plugin's source before its first build
	writeExe(t, filepath.Join(user, "nested", "nested", "x"), 0o755) // its "executable" is a folder
	writeExe(t, filepath.Join(user, "dex", "main.go"), 0o644)        // source of a plugin a contrib one of the name shadows
	writeExe(t, filepath.Join(user, "ok", "ok"), 0o755)
	cands, err := source.Discover(source.Folders{BuiltinDir: builtin, ContribDir: contrib, UserDirs: []string{user}})
	if err != nil {
		t.Fatalf("discovery fails on plugins that cannot start: %v", err)
	}
	problems := map[string]string{}
	var names []string
	for _, c := range cands {
		names = append(names, c.Name)
		problems[c.Name] = c.Problem
	}
	if want := []string{"iam", "dex", "lazy", "nested", "ok", "source", "stray"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("candidates %v, want %v", names, want)
	}
	for name, want := range map[string]string{
		"iam":    filepath.Join(builtin, "iam") + " is not executable: run `chmod +x " + filepath.Join(builtin, "iam") + "`",
		"lazy":   filepath.Join(user, "lazy", "lazy") + " is not executable",
		"stray":  filepath.Join(user, "stray") + " is a file, but a user plugin is a folder holding an executable of the same name: move it to " + filepath.Join(user, "stray", "stray"),
		"source": "plugin folder " + filepath.Join(user, "source") + " has no executable named source: build the plugin to " + filepath.Join(user, "source", "source"),
		"nested": filepath.Join(user, "nested", "nested") + " is a folder, not an executable",
		"dex":    "",
		"ok":     "",
	} {
		if (want == "") != (problems[name] == "") || !strings.Contains(problems[name], want) {
			t.Errorf("%s: problem %q, want %q", name, problems[name], want)
		}
	}
}

// lacks returns the parts err's message does not say: all of them when
// there is no error.
func lacks(err error, parts ...string) []string {
	if err == nil {
		return parts
	}
	var out []string
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			out = append(out, p)
		}
	}
	return out
}
