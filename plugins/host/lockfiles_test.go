package host_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// A script plugin is an entry script plus the code beside it; the lock
// covers both, and a changed file is refused before anything runs.
func TestLockCoversTheFilesBesideAUserPlugin(t *testing.T) {
	cluster := t.TempDir()
	dir := filepath.Join(cluster, "plugins", "py")
	marker := filepath.Join(cluster, "ran")
	// The entry script would leave a marker if it were ever started.
	if err := os.MkdirAll(filepath.Join(dir, "lib", "__pycache__"), 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "py")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\ntouch "+marker+"\nexec python3 \"$(dirname \"$0\")/plugin.py\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code := filepath.Join(dir, "plugin.py")
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(code, "print('v1')\n")
	write(filepath.Join(dir, "lib", "util.py"), "X = 1\n")
	write(filepath.Join(dir, "lib", "__pycache__", "util.cpython-311.pyc"), "bytecode v1")

	cands, err := source.Discover(source.Folders{UserDirs: []string{filepath.Join(cluster, "plugins")}})
	if err != nil || len(cands) != 1 {
		t.Fatalf("discover: %v %+v", err, cands)
	}
	lock, err := source.LockCandidates(cands)
	if err != nil {
		t.Fatal(err)
	}
	if e := lock.Entry("py"); e == nil || len(e.Files) != 2 || len(e.Files["plugin.py"]) != 64 || len(e.Files["lib/util.py"]) != 64 {
		t.Fatalf("the entry records a hash of each of the folder's other files: %+v", e)
	}
	path := filepath.Join(cluster, source.LockfileName)
	if err := lock.Write(path); err != nil {
		t.Fatal(err)
	}
	back, err := source.ReadLockfile(path)
	if err != nil || !reflect.DeepEqual(back.Entry("py").Files, lock.Entry("py").Files) {
		t.Fatalf("files hash does not survive the file: %v %+v", err, back)
	}

	// The interpreter rewriting its byte-code cache is not a change.
	write(filepath.Join(dir, "lib", "__pycache__", "util.cpython-311.pyc"), "bytecode v2")
	if errs := back.Verify(cands); len(errs) != 0 {
		t.Fatalf("a rewritten __pycache__ must not fail verify: %v", errs)
	}

	// Changed code, then an added file: verify reports each, and the
	// plugin is refused before it starts.
	// In this order: "added file" restores the code that "changed code"
	// changed, and the added file would otherwise be a second error.
	for _, tc := range []struct {
		name   string
		change func()
		want   string
	}{
		{"changed code", func() { write(code, "print('v2: something else')\n") }, "plugin py: " + code + " does not match plugins.lock"},
		{"added file", func() { write(code, "print('v1')\n"); write(filepath.Join(dir, "lib", "extra.py"), "Y = 2\n") },
			"plugin py: " + filepath.Join(dir, "lib", "extra.py") + " is not in plugins.lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.change()
			errs := back.Verify(cands)
			if len(errs) != 1 {
				t.Fatalf("verify: want one error, got %v", errs)
			}
			mustContain(t, errs[0], tc.want, "kube-aws plugins lock")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := host.Launch(ctx, cands, host.Options{Lock: back, StartTimeout: 5 * time.Second})
			mustContain(t, err, tc.want)
			if _, statErr := os.Stat(marker); !errors.Is(statErr, os.ErrNotExist) {
				t.Fatal("the plugin was started although its files do not match the lock")
			}
		})
	}
}

// discoverAndLock finds the plugins in src and locks them, as `kube-aws
// plugins lock` does.
func discoverAndLock(t *testing.T, src source.Folders) ([]source.Candidate, *source.Lockfile) {
	t.Helper()
	cands, err := source.Discover(src)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := source.LockCandidates(cands)
	if err != nil {
		t.Fatal(err)
	}
	return cands, lock
}

// copyTree copies a folder, keeping file modes.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// plugins.lock is committed beside cluster.yaml and used on other machines,
// where kube-aws (and with it the contrib plugins) is installed elsewhere and
// the cluster folder is checked out elsewhere: the same binaries verify and
// start there, wherever they are.
func TestALockVerifiesACopyOfTheSameBinariesElsewhere(t *testing.T) {
	trivial := plugintest.Build(t, "../testdata/trivial")
	here, there := t.TempDir(), t.TempDir()
	layout := func(root string) source.Folders {
		return source.Folders{
			BuiltinDir: filepath.Join(root, "opt", "kube-aws-plugins", "builtin"),
			ContribDir: filepath.Join(root, "opt", "kube-aws-plugins", "contrib"),
			UserDirs:   []string{filepath.Join(root, "work", "cluster", "plugins"), filepath.Join(root, "work", "shared-plugins")},
		}
	}
	src := layout(here)
	copyFile(t, trivial, filepath.Join(src.BuiltinDir, "base"))
	copyFile(t, trivial, filepath.Join(src.ContribDir, "extra"))
	copyFile(t, trivial, filepath.Join(src.UserDirs[0], "mine", "mine"))
	if err := os.WriteFile(filepath.Join(src.UserDirs[0], "mine", "values.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	copyFile(t, trivial, filepath.Join(src.UserDirs[1], "shared", "shared")) // a --plugin-dir outside the cluster folder
	_, lock := discoverAndLock(t, src)
	path := filepath.Join(here, "work", "cluster", source.LockfileName)
	if err := lock.Write(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), here) {
		t.Fatalf("plugins.lock names paths of this machine:\n%s", raw)
	}
	for _, want := range []string{"path: plugins/mine/mine", "path: ../shared-plugins/shared/shared", "name: extra\n  sha256: "} {
		if !strings.Contains(string(raw), want) {
			t.Fatalf("plugins.lock lacks %q:\n%s", want, raw)
		}
	}

	// Another machine: the same files under another root.
	copyTree(t, filepath.Join(here, "opt"), filepath.Join(there, "opt"))
	copyTree(t, filepath.Join(here, "work"), filepath.Join(there, "work"))
	moved, err := source.Discover(layout(there))
	if err != nil {
		t.Fatal(err)
	}
	back, err := source.ReadLockfile(filepath.Join(there, "work", "cluster", source.LockfileName))
	if err != nil {
		t.Fatal(err)
	}
	if errs := back.Verify(moved); len(errs) != 0 {
		t.Fatalf("the same binaries at another path do not verify: %v", errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ps, err := host.Launch(ctx, moved, host.Options{Lock: back})
	if err != nil {
		t.Fatalf("the same binaries at another path are refused: %v", err)
	}
	host.KillAll(ps)
}

// verify and the launch of a plugin report every difference at once, each
// naming its file: a changed executable, a changed, an added and a removed
// file beside a user plugin, and a changed contrib plugin.
func TestEveryMismatchIsReportedNamingItsFile(t *testing.T) {
	cluster := t.TempDir()
	contribDir := t.TempDir()
	write := func(path, content string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(cluster, "plugins", "py")
	marker := filepath.Join(cluster, "ran")
	exe := filepath.Join(dir, "py")
	write(exe, "#!/bin/sh\ntouch "+marker+"\n", 0o755)
	write(filepath.Join(dir, "plugin.py"), "print('v1')\n", 0o644)
	write(filepath.Join(dir, "lib", "util.py"), "X = 1\n", 0o644)
	write(filepath.Join(contribDir, "extra"), "#!/bin/sh\ntouch "+marker+"\n", 0o755)
	cands, lock := discoverAndLock(t, source.Folders{ContribDir: contribDir, UserDirs: []string{filepath.Join(cluster, "plugins")}})

	write(exe, "#!/bin/sh\ntouch "+marker+"\necho changed\n", 0o755)
	write(filepath.Join(dir, "plugin.py"), "print('v2')\n", 0o644)
	write(filepath.Join(dir, "lib", "extra.py"), "Y = 2\n", 0o644)
	if err := os.Remove(filepath.Join(dir, "lib", "util.py")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(contribDir, "extra"), "#!/bin/sh\ntouch "+marker+"\necho changed\n", 0o755)
	want := []string{
		"plugin extra (" + filepath.Join(contribDir, "extra") + ") does not match plugins.lock",
		"plugin py (" + exe + ") does not match plugins.lock",
		"plugin py: " + filepath.Join(dir, "lib", "extra.py") + " is not in plugins.lock",
		"plugin py: " + filepath.Join(dir, "lib", "util.py") + ", locked in plugins.lock, is gone",
		"plugin py: " + filepath.Join(dir, "plugin.py") + " does not match plugins.lock",
	}
	errs := lock.Verify(cands)
	if len(errs) != len(want) {
		t.Fatalf("verify: %d errors, want %d: %v", len(errs), len(want), errs)
	}
	for i, w := range want {
		mustContain(t, errs[i], w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := host.Launch(ctx, cands, host.Options{Lock: lock})
	mustContain(t, err, want...)
	if _, statErr := os.Stat(marker); !errors.Is(statErr, os.ErrNotExist) {
		t.Fatal("a plugin that does not match the lock was started")
	}
}
