package stages

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestHashCacheHashesAFileOnceForAllItsLinks: the built-ins are links to one
// executable; a run that finds them all changed reads that file once, and
// every link gets its hash and its cache entry.
func TestHashCacheHashesAFileOnceForAllItsLinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("inodes are what tell one file from another")
	}
	dir := t.TempDir()
	target := filepath.Join(dir, "kube-aws-builtins")
	if err := os.WriteFile(target, []byte("#!/bin/sh\n# built-ins\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, n := range []string{"iam", "pki", "etcd", "helm", "userdata"} {
		p := filepath.Join(dir, n)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("#!/bin/sh\n# built-ins\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, other) // same size and content, another file

	var calls atomic.Int32
	orig := sha256File
	sha256File = func(p string) (string, error) { calls.Add(1); return orig(p) }
	t.Cleanup(func() { sha256File = orig })

	c := loadHashCache(filepath.Join(dir, "cache.json"))
	sums := make([]string, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.hash(p)
			if err != nil {
				t.Error(err)
			}
			sums[i] = s
		}()
	}
	wg.Wait()
	want := sha256Hex([]byte("#!/bin/sh\n# built-ins\n"))
	for i, s := range sums {
		if s != want {
			t.Errorf("%s: hash %s, want %s", paths[i], s, want)
		}
		if e := c.entries[paths[i]]; e.SHA256 != want {
			t.Errorf("%s: cache entry %+v", paths[i], e)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d files read, want 2 (the links' target once, and the other file)", n)
	}
}
