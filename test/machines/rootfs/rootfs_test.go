package rootfs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestKey(t *testing.T) {
	base := Spec{Suite: "bookworm", Variant: "minbase", Packages: []string{"curl", "systemd"},
		Files: []File{{Path: "etc/a", Mode: 0o644, Content: []byte("a")}, {Path: "etc/b", Symlink: "/x"}}, Hooks: []string{"true"}}
	k0, err := base.Key()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		change func(*Spec)
		same   bool
	}{
		{"package order does not matter", func(s *Spec) { s.Packages = []string{"systemd", "curl"} }, true},
		{"file order does not matter", func(s *Spec) { s.Files[0], s.Files[1] = s.Files[1], s.Files[0] }, true},
		{"another package", func(s *Spec) { s.Packages = append(s.Packages, "jq") }, false},
		{"file content", func(s *Spec) { s.Files[0].Content = []byte("b") }, false},
		{"file mode", func(s *Spec) { s.Files[0].Mode = 0o755 }, false},
		{"symlink target", func(s *Spec) { s.Files[1].Symlink = "/y" }, false},
		{"hook", func(s *Spec) { s.Hooks = []string{"false"} }, false},
		{"suite", func(s *Spec) { s.Suite = "trixie" }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			s.Packages = append([]string(nil), base.Packages...)
			s.Files = append([]File(nil), base.Files...)
			tc.change(&s)
			k, err := s.Key()
			if err != nil {
				t.Fatal(err)
			}
			if (k == k0) != tc.same {
				t.Fatalf("key %s vs %s: same=%v, want %v", k, k0, k == k0, tc.same)
			}
		})
	}
}

func TestKeyReadsSources(t *testing.T) {
	p := filepath.Join(t.TempDir(), "debian.sources")
	os.WriteFile(p, []byte("Types: deb\n"), 0o644)
	s := Spec{Suite: "bookworm", Sources: p}
	k1, _ := s.Key()
	os.WriteFile(p, []byte("Types: deb deb-src\n"), 0o644)
	k2, _ := s.Key()
	if k1 == k2 {
		t.Fatal("a change of apt sources kept the key")
	}
	s.Sources = filepath.Join(t.TempDir(), "missing")
	if _, err := s.Key(); err == nil {
		t.Fatal("a missing sources file gave a key")
	}
}

// TestEnsureFindsCachedImage: a warm cache is used without mmdebstrap.
func TestEnsureFindsCachedImage(t *testing.T) {
	dir := t.TempDir()
	s := Spec{Suite: "bookworm", Variant: "minbase", Packages: []string{"x"}}
	k, _ := s.Key()
	root := filepath.Join(dir, "rootfs")
	os.MkdirAll(filepath.Join(root, k), 0o755)
	os.WriteFile(filepath.Join(root, k+".tar"), []byte("tar"), 0o644)
	os.WriteFile(filepath.Join(root, k, ".kube-aws-rootfs-complete"), []byte(k), 0o644)
	t.Setenv("PATH", "") // no mmdebstrap, no tar: nothing may be run
	img, err := Ensure(t.Context(), dir, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if img.Built || img.Dir != filepath.Join(root, k) || img.Size != 3 {
		t.Fatalf("image %+v", img)
	}
	// An image of an older spec is pruned; the current one stays.
	os.MkdirAll(filepath.Join(root, "old"), 0o755)
	os.WriteFile(filepath.Join(root, "old.tar"), []byte("tar"), 0o644)
	os.WriteFile(filepath.Join(root, "old.lock"), nil, 0o644)
	if _, err := Ensure(t.Context(), dir, s, nil); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(root, "*"))
	if len(left) != 3 { // key/, key.tar, key.lock
		t.Fatalf("cache after pruning holds %v", left)
	}
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv("KUBE_AWS_E2E_CACHE", "/c")
	if d, _ := DefaultCacheDir(); d != "/c" {
		t.Fatalf("DefaultCacheDir = %s", d)
	}
	t.Setenv("KUBE_AWS_E2E_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/x")
	if d, _ := DefaultCacheDir(); d != "/x/kube-aws/e2e" {
		t.Fatalf("DefaultCacheDir = %s", d)
	}
}
