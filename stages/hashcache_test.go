package stages

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestHashCacheHashesAFileOnceForAllItsLinks: the built-ins are links to one
// executable; a run that finds them all changed reads that file once, and
// every link gets its hash and its cache entry. Where the system gives no
// inodes (inode_other.go), nothing tells one file from another, so every
// path is read, and still hashed right.
func TestHashCacheHashesAFileOnceForAllItsLinks(t *testing.T) {
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
	wantReads, why := int32(2), "the links' target once, and the other file"
	if fi, err := os.Stat(target); err != nil || inode(fi) == 0 {
		wantReads, why = int32(len(paths)), "no inodes here: each path on its own"
	}
	if n := calls.Load(); n != wantReads {
		t.Errorf("%d files read, want %d (%s)", n, wantReads, why)
	}
}
