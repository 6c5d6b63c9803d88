package fileutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteAtomicReplacesWholeFileWithMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "state.json")
	for _, content := range []string{"first version, longer than the second\n", "second\n"} {
		if err := WriteAtomic(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q (%v), want %q", got, err, content)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestWriteAtomicLeavesNoTempFileOnFailure(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	// A folder where the file should go: the rename fails.
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(target, []byte("x"), 0o644); err == nil {
		t.Fatal("writing over a non-empty folder must fail")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary file left behind after a failed write: %v", entries)
	}
}

func TestSHA256(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := SHA256(path)
	if want := "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; err != nil || got != want {
		t.Errorf("SHA256 = %s (%v), want %s", got, err, want)
	}
	if _, err := SHA256(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing file is an error")
	}
}

// A plugin folder's files, with slash paths, without Python's byte code.
func TestWalkPluginFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"run", "lib/a.py", "lib/__pycache__/a.cpython-311.pyc", "lib/b.pyc", "deep/x/y.txt"} {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("run", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := WalkPluginFiles(dir, func(path, rel string, d fs.DirEntry) error {
		if path != filepath.Join(dir, filepath.FromSlash(rel)) {
			t.Errorf("%s is not %s in %s", path, rel, dir)
		}
		got = append(got, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "deep/x/y.txt,lib/a.py,link,run" {
		t.Errorf("got %v", got)
	}
}
