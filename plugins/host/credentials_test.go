package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCredentials(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "credentials")
	c := NewCredentials(dir)
	if _, ok, err := c.Get("pki", "ca.key"); ok || err != nil {
		t.Fatalf("missing secret: %v %v", ok, err)
	}
	m, err := c.Put("pki", "ca.key", []byte("PRIVATE"))
	if err != nil || m != "((secret:pki/generated/ca.key))" {
		t.Fatalf("put: %q %v", m, err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Join(dir, "pki"): 0o700 | os.ModeDir, filepath.Join(dir, "pki", "ca.key"): 0o600} {
		if st, err := os.Stat(p); err != nil || st.Mode() != want {
			t.Errorf("%s: %v %v, want %v", p, st.Mode(), err, want)
		}
	}
	// A later run finds it: Load reads what every plugin kept.
	again := NewCredentials(dir)
	if err := again.Load([]string{"pki", "etcd"}); err != nil {
		t.Fatal(err)
	}
	if got := again.Secrets(); len(got) != 1 || got[m] != "PRIVATE" {
		t.Fatalf("loaded secrets: %v", got)
	}
	for _, key := range []string{"", "../x", "a/b", ".hidden", strings.Repeat("k", 129)} {
		if _, err := c.Put("pki", key, []byte("x")); err == nil || !strings.Contains(err.Error(), "plugin pki: secret key") {
			t.Errorf("key %q: %v", key, err)
		}
	}
	// In memory (no cluster folder): the same API, nothing written.
	mem := NewCredentials("")
	if _, err := mem.Put("pki", "token", []byte("t")); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := mem.Get("pki", "token"); !ok || string(v) != "t" {
		t.Fatalf("memory get: %q %v", v, ok)
	}
}
