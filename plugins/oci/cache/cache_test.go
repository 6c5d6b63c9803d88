package cache

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

var digest = "sha256:" + strings.Repeat("ab", 32)

func stage(t *testing.T, c Cache, files map[string]string) string {
	t.Helper()
	d, err := c.Stage()
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		p := filepath.Join(d, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func TestRoot(t *testing.T) {
	t.Setenv(EnvDir, "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if r, err := Root(); err != nil || r != "/xdg/kube-aws/plugins" {
		t.Errorf("XDG: %s %v", r, err)
	}
	t.Setenv(EnvDir, "/elsewhere")
	if r, _ := Root(); r != "/elsewhere" {
		t.Errorf("override: %s", r)
	}
}

func TestEntryDir(t *testing.T) {
	c := Cache{Root: "/c"}
	for d, ok := range map[string]bool{
		digest:                              true,
		"sha256:" + strings.Repeat("A", 64): false,
		"sha512:" + strings.Repeat("a", 64): false,
		"sha256:../../etc":                  false,
		"":                                  false,
	} {
		got, err := c.EntryDir(d)
		if (err == nil) != ok {
			t.Errorf("%q: %s %v", d, got, err)
		}
		if ok && got != "/c/sha256/"+strings.Repeat("ab", 32) {
			t.Errorf("%q: %s", d, got)
		}
	}
}

// Fresh notices a changed, added or removed file, and not Python's byte
// code.
func TestFresh(t *testing.T) {
	for name, change := range map[string]func(dir string) error{
		"changed size":  func(d string) error { return os.WriteFile(filepath.Join(d, "hello"), []byte("longer"), 0o755) },
		"changed mtime": func(d string) error { return os.Chtimes(filepath.Join(d, "hello"), time.Now(), time.Unix(1, 0)) },
		"changed mode":  func(d string) error { return os.Chmod(filepath.Join(d, "hello"), 0o777) },
		"added":         func(d string) error { return os.WriteFile(filepath.Join(d, "evil"), nil, 0o644) },
		"removed":       func(d string) error { return os.Remove(filepath.Join(d, "lib", "a.py")) },
	} {
		t.Run(name, func(t *testing.T) {
			c := Cache{Root: t.TempDir()}
			dir, err := c.Commit(stage(t, c, map[string]string{"hello": "x", "lib/a.py": "A"}), digest)
			if err != nil {
				t.Fatal(err)
			}
			if !c.Fresh(digest) {
				t.Fatal("a new entry is not fresh")
			}
			if err := os.MkdirAll(filepath.Join(dir, "lib", "__pycache__"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "lib", "__pycache__", "a.cpython-311.pyc"), []byte("b"), 0o644); err != nil {
				t.Fatal(err)
			}
			if !c.Fresh(digest) {
				t.Fatal("byte code made the entry stale")
			}
			if err := change(dir); err != nil {
				t.Fatal(err)
			}
			if c.Fresh(digest) {
				t.Error("still fresh")
			}
		})
	}
}

// Two processes committing the same digest: one entry, no leftovers.
func TestCommitRace(t *testing.T) {
	c := Cache{Root: t.TempDir()}
	var wg sync.WaitGroup
	dirs := make([]string, 8)
	errs := make([]error, 8)
	for i := range dirs {
		s := stage(t, c, map[string]string{"hello": "x"})
		wg.Add(1)
		go func() {
			defer wg.Done()
			dirs[i], errs[i] = c.Commit(s, digest)
		}()
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil || dirs[i] != dirs[0] {
			t.Errorf("commit %d: %s %v", i, dirs[i], errs[i])
		}
	}
	if left, _ := os.ReadDir(filepath.Join(c.Root, "tmp")); len(left) != 0 {
		t.Errorf("left in tmp: %v", left)
	}
	if !c.Fresh(digest) {
		t.Error("not fresh")
	}
	if es, _ := c.Entries(); len(es) != 1 || es[0] != digest {
		t.Errorf("entries %v", es)
	}
	if err := c.Remove(digest); err != nil {
		t.Fatal(err)
	}
	if es, _ := c.Entries(); len(es) != 0 || c.Fresh(digest) {
		t.Errorf("after Remove: %v", es)
	}
}

// A verification is recorded per digest and key, and only what was
// recorded is found: another key, another digest, a record edited to name
// another digest and a record that is not JSON are all "not checked".
func TestVerified(t *testing.T) {
	c := Cache{Root: t.TempDir()}
	key := "sha256:" + strings.Repeat("cd", 32)
	other := "sha256:" + strings.Repeat("ef", 32)
	v := Verified{Digest: digest, Key: key, Name: "hello", Platforms: map[string]Platform{
		"linux/amd64": {Manifest: other, SHA256: strings.Repeat("12", 32)},
	}}
	if _, ok := c.LookupVerified(digest, key); ok {
		t.Fatal("found before it was recorded")
	}
	if err := c.RecordVerified(v); err != nil {
		t.Fatal(err)
	}
	got, ok := c.LookupVerified(digest, key)
	if !ok || got.Name != "hello" || !reflect.DeepEqual(got.Platforms, v.Platforms) {
		t.Fatalf("LookupVerified = %+v, %v", got, ok)
	}
	for name, look := range map[string][2]string{
		"another key":    {digest, other},
		"another digest": {other, key},
		"not a digest":   {"sha256:../../x", key},
		"not a key":      {digest, "cosign.pub"},
	} {
		if _, ok := c.LookupVerified(look[0], look[1]); ok {
			t.Errorf("%s: found", name)
		}
	}
	if err := c.RecordVerified(Verified{Digest: digest, Key: "not a fingerprint"}); err == nil {
		t.Error("recorded a key that is not a fingerprint")
	}
	p, _ := c.verifiedPath(digest, key)
	// A record moved to another pair's name does not vouch for that pair.
	q, _ := c.verifiedPath(other, key)
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(q, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.LookupVerified(other, key); ok {
		t.Error("a record copied to another digest's name counts for it")
	}
	if err := os.WriteFile(p, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.LookupVerified(digest, key); ok {
		t.Error("a broken record counts")
	}
}
