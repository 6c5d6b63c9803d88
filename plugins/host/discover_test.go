package host_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
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

	src := host.Sources{BuiltinDir: builtin, ContribDir: contrib,
		UserDirs: []string{filepath.Join(cluster, "plugins"), extra, filepath.Join(root, "missing"), filepath.Join(cluster, "plugins")}}
	cands, err := host.Discover(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []host.Candidate{
		{Name: "cloudformation", Path: filepath.Join(builtin, "cloudformation"), Dir: builtin, Source: host.SourceBuiltin},
		{Name: "iam", Path: filepath.Join(builtin, "iam"), Dir: builtin, Source: host.SourceBuiltin},
		{Name: "dex", Path: filepath.Join(contrib, "dex"), Dir: contrib, Source: host.SourceContrib},
		{Name: "bastion", Path: filepath.Join(extra, "bastion", "bastion"), Dir: filepath.Join(extra, "bastion"), Source: host.SourceUser},
		{Name: "hello", Path: filepath.Join(cluster, "plugins", "hello", "hello"), Dir: filepath.Join(cluster, "plugins", "hello"), Source: host.SourceUser},
	}
	if !reflect.DeepEqual(cands, want) {
		t.Errorf("got  %+v\nwant %+v", cands, want)
	}

	// Nothing anywhere is fine.
	if cands, err := host.Discover(host.Sources{BuiltinDir: filepath.Join(root, "nope")}); err != nil || len(cands) != 0 {
		t.Errorf("missing folders: %v %v", cands, err)
	}
}

func TestDefaultSources(t *testing.T) {
	t.Setenv("KUBE_AWS_BUILTIN_DIR", "/opt/b")
	t.Setenv("KUBE_AWS_CONTRIB_DIR", "")
	src := host.DefaultSources("/c", []string{"/p1", "/p2"})
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
	cands, err := host.Discover(host.Sources{BuiltinDir: builtin, UserDirs: []string{user, filepath.Join(root, "more")}})
	mustContain(t, err,
		"plugin helm is found twice: "+filepath.Join(builtin, "helm")+" (builtin) and "+filepath.Join(user, "helm", "helm")+" (user)",
		"plugin helm is found twice: "+filepath.Join(builtin, "helm")+" (builtin) and "+filepath.Join(root, "more", "helm", "helm")+" (user)",
	)
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
	cands, err := host.Discover(host.Sources{BuiltinDir: builtin, ContribDir: contrib, UserDirs: []string{user}})
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

func TestLockfileRoundTripAndVerify(t *testing.T) {
	cluster := t.TempDir()
	outside := t.TempDir()
	a := filepath.Join(cluster, "plugins", "a", "a")
	b := filepath.Join(outside, "b", "b")
	builtin := filepath.Join(outside, "builtin", "iam")
	writeExe(t, a, 0o755)
	writeExe(t, b, 0o755)
	writeExe(t, builtin, 0o755)
	cands := []host.Candidate{
		{Name: "iam", Path: builtin, Source: host.SourceBuiltin},
		{Name: "a", Path: a, Source: host.SourceUser},
		{Name: "b", Path: b, Source: host.SourceContrib},
	}
	lock, err := host.LockCandidates(cands)
	if err != nil {
		t.Fatal(err)
	}
	if len(lock.Plugins) != 2 || lock.Entry("iam") != nil {
		t.Fatalf("built-ins are not locked, the rest are: %+v", lock.Plugins)
	}
	path := filepath.Join(cluster, host.LockfileName)
	if err := lock.Write(path); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), "path: plugins/a/a") || strings.Contains(string(raw), outside) || !strings.HasPrefix(string(raw), "# plugins.lock") {
		t.Errorf("a user plugin's path is relative to cluster.yaml, a contrib plugin has none:\n%s", raw)
	}
	back, err := host.ReadLockfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, lock) {
		t.Errorf("read back %+v, wrote %+v", back, lock)
	}
	if errs := back.Verify(cands); len(errs) != 0 {
		t.Errorf("fresh lock does not verify: %v", errs)
	}

	// Change a, add c, remove b: every problem is reported.
	if err := os.WriteFile(a, []byte("#!/bin/sh\necho changed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(cluster, "plugins", "c", "c")
	writeExe(t, c, 0o755)
	errs := back.Verify([]host.Candidate{cands[0], cands[1], {Name: "c", Path: c, Source: host.SourceUser}})
	all := ""
	for _, e := range errs {
		all += e.Error() + "\n"
	}
	for _, want := range []string{
		"plugin a (" + a + ") does not match plugins.lock (want sha256 " + lock.Entry("a").SHA256 + ", have ",
		"if you changed it on purpose run `kube-aws plugins lock`",
		"plugin c (" + c + ") is not in plugins.lock",
		"plugins.lock lists plugin b (contrib) but it was not found",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("verify errors lack %q:\n%s", want, all)
		}
	}
}

func TestReadLockfileBad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, host.LockfileName)
	for name, content := range map[string]string{
		"unknown field": "version: 2\nplugins: []\nextra: 1\n",
		"version":       "version: 7\nplugins: []\n",
		"version 1":     "version: 1\nplugins:\n- name: a\n  path: /opt/kube-aws/contrib/a\n  sha256: " + strings.Repeat("0", 64) + "\n",
		"sha":           "version: 2\nplugins:\n- name: a\n  sha256: xyz\n",
		"file sha":      "version: 2\nplugins:\n- name: a\n  sha256: " + strings.Repeat("0", 64) + "\n  files: {x.py: xyz}\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := host.ReadLockfile(path)
		mustContain(t, err, path, "kube-aws plugins lock")
		_ = name
	}
	_, err := host.ReadLockfile(filepath.Join(dir, "absent"))
	if !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("a missing lock file must be recognisable: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// A plugin changed after `plugins lock` is refused before it starts: the
// changed binary here would leave a marker file if it ran at all.
func TestChangedBinaryRefusedBeforeStart(t *testing.T) {
	cluster := t.TempDir()
	cand := userPlugin(t, cluster, plugintest.Build(t, "../testdata/trivial"), "trivial")
	lock, err := host.LockCandidates([]host.Candidate{cand})
	if err != nil {
		t.Fatal(err)
	}
	// The locked binary starts.
	p, err := launchOne(t, cand, host.Options{Lock: lock})
	if err != nil {
		t.Fatalf("locked plugin refused: %v", err)
	}
	p.Kill()

	marker := filepath.Join(cluster, "ran")
	if err := os.WriteFile(cand.Path, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	have, _ := fileutil.SHA256(cand.Path)
	_, err = launchOne(t, cand, host.Options{Lock: lock})
	mustContain(t, err, "plugin trivial ("+cand.Path+") does not match plugins.lock (want sha256 "+lock.Plugins[0].SHA256+", have "+have+")",
		"if you changed it on purpose run `kube-aws plugins lock`")
	if _, err := os.Stat(marker); err == nil {
		t.Error("the changed binary ran")
	}
}

// With a lock, a non-built-in plugin missing from it is refused; built-ins
// are not checked.
func TestUnlockedPluginRefused(t *testing.T) {
	cluster := t.TempDir()
	bin := plugintest.Build(t, "../testdata/trivial")
	cand := userPlugin(t, cluster, bin, "trivial")
	marker := filepath.Join(cluster, "ran")
	if err := os.WriteFile(cand.Path, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	lock := &host.Lockfile{Version: 1}
	_, err := host.Launch(context.Background(), []host.Candidate{cand}, host.Options{Lock: lock})
	mustContain(t, err, "plugin trivial ("+cand.Path+") is not in plugins.lock", "run `kube-aws plugins lock`")
	if _, err := os.Stat(marker); err == nil {
		t.Error("the unlocked plugin ran")
	}

	builtin := cand
	builtin.Path, builtin.Source = bin, host.SourceBuiltin
	if _, err := launchOne(t, builtin, host.Options{Lock: lock}); err != nil {
		t.Errorf("built-in refused by the lock: %v", err)
	}
}
