package host_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/plugins/host"
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

	cands, err := host.Discover(host.Sources{UserDirs: []string{filepath.Join(cluster, "plugins")}})
	if err != nil || len(cands) != 1 {
		t.Fatalf("discover: %v %+v", err, cands)
	}
	lock, err := host.LockCandidates(cands)
	if err != nil {
		t.Fatal(err)
	}
	if e := lock.Entry("py"); e == nil || len(e.Files) != 64 {
		t.Fatalf("the entry records a hash of the folder's other files: %+v", e)
	}
	path := filepath.Join(cluster, host.LockfileName)
	if err := lock.Write(path); err != nil {
		t.Fatal(err)
	}
	back, err := host.ReadLockfile(path)
	if err != nil || back.Entry("py").Files != lock.Entry("py").Files {
		t.Fatalf("files hash does not survive the file: %v %+v", err, back)
	}

	// The interpreter rewriting its byte-code cache is not a change.
	write(filepath.Join(dir, "lib", "__pycache__", "util.cpython-311.pyc"), "bytecode v2")
	if errs := back.Verify(cands); len(errs) != 0 {
		t.Fatalf("a rewritten __pycache__ must not fail verify: %v", errs)
	}

	// Changed code, then an added file: verify reports each, and the
	// plugin is refused before it starts.
	for name, change := range map[string]func(){
		"changed code": func() { write(code, "print('v2: something else')\n") },
		"added file":   func() { write(code, "print('v1')\n"); write(filepath.Join(dir, "lib", "extra.py"), "Y = 2\n") },
	} {
		t.Run(name, func(t *testing.T) {
			change()
			errs := back.Verify(cands)
			if len(errs) != 1 {
				t.Fatalf("verify: want one error, got %v", errs)
			}
			mustContain(t, errs[0], "plugin py", "do not match plugins.lock", "kube-aws plugins lock")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := host.Launch(ctx, cands, host.Options{Lock: back, StartTimeout: 5 * time.Second})
			mustContain(t, err, "plugin py", "do not match plugins.lock")
			if _, statErr := os.Stat(marker); !errors.Is(statErr, os.ErrNotExist) {
				t.Fatal("the plugin was started although its files do not match the lock")
			}
		})
	}
}
