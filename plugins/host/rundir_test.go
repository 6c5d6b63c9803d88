//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package host

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The run folder's life: made and locked by UseRunDir, kept by a sweep while
// its owner lives, removed by release; folders of dead owners and stale
// staging folders are swept, young ones kept.
func TestRunDirIsRemovedWhenItsOwnerIsGone(t *testing.T) {
	tmp, err := os.MkdirTemp("", "ka") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)

	release := UseRunDir()
	dir := os.Getenv("TMPDIR")
	base := filepath.Dir(dir)
	if filepath.Dir(base) != tmp || !ownedPrivateDir(base) {
		t.Fatalf("TMPDIR is %s, want a run folder under a private %s/kube-aws-<uid>", dir, tmp)
	}
	if _, err := os.Stat(filepath.Join(dir, ownerFile)); err != nil {
		t.Fatal(err)
	}

	mk := func(name string, owner bool, age time.Duration) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if owner {
			if err := os.WriteFile(filepath.Join(p, ownerFile), []byte("pid 1\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		old := time.Now().Add(-age)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := mk("run-dead", true, 0)                // its owner's lock is gone
	halfMade := mk("run-nolock", false, time.Hour) // died between mkdir and lock
	young := mk("tmp-young", false, 0)             // another kube-aws setting up right now
	stale := mk("tmp-stale", false, time.Hour)

	// A second kube-aws sweeps: the living run folder stays.
	os.Setenv("TMPDIR", tmp) // as that process would see it
	again := UseRunDir()
	for path, want := range map[string]bool{dir: true, dead: false, halfMade: false, young: true, stale: false} {
		_, err := os.Stat(path)
		if got := err == nil; got != want {
			t.Errorf("%s exists: %v, want %v", filepath.Base(path), got, want)
		}
	}
	if second := os.Getenv("TMPDIR"); second == dir || filepath.Dir(second) != base {
		t.Fatalf("the second run folder is %s", second)
	}
	again()
	if os.Getenv("TMPDIR") != tmp {
		t.Fatalf("release restores TMPDIR: %s", os.Getenv("TMPDIR"))
	}
	release()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("release leaves the run folder: %v", err)
	}
	if os.Getenv("TMPDIR") != tmp {
		t.Fatalf("release restores TMPDIR: %s", os.Getenv("TMPDIR"))
	}
}

// A temp dir so deep that go-plugin's socket paths would not fit is left
// as it is.
func TestRunDirIsNotUsedWhereSocketPathsWouldBeTooLong(t *testing.T) {
	deep := filepath.Join(t.TempDir(), "a-folder-deep-enough-that-a-socket-path-under-it-exceeds-the-limit")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", deep)
	release := UseRunDir()
	defer release()
	if got := os.Getenv("TMPDIR"); got != deep {
		t.Fatalf("TMPDIR is %s, want it unchanged", got)
	}
}
