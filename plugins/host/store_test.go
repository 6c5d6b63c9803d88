package host

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store", "p.json")
	s := NewStore(path)
	if _, ok, err := s.Get("a"); ok || err != nil {
		t.Fatalf("empty store: %v %v", ok, err)
	}
	for k, v := range map[string]string{"a/1": "x", "a/2": "y", "b": "\x00binary"} {
		if err := s.Put(k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete("a/2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("never"); err != nil {
		t.Fatal(err)
	}
	// A fresh Store reads what the first one wrote.
	s2 := NewStore(path)
	keys, err := s2.List("a/")
	if err != nil || !reflect.DeepEqual(keys, []string{"a/1"}) {
		t.Errorf("list: %v %v", keys, err)
	}
	if v, ok, _ := s2.Get("b"); !ok || string(v) != "\x00binary" {
		t.Errorf("get b: %q %v", v, ok)
	}
	if err := s2.Put("", nil); err == nil {
		t.Error("empty key accepted")
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("store folder holds %v", entries)
	}

	if err := os.WriteFile(path, []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = NewStore(path).Get("a")
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "move it aside") {
		t.Errorf("corrupt store: %v", err)
	}
}

func TestStderrSinkLines(t *testing.T) {
	var out strings.Builder
	s := newStderrSink("p", &out)
	a, b := s.writer(), s.writer()
	_, _ = a.Write([]byte("hel"))
	_, _ = b.Write([]byte("other\n"))
	_, _ = a.Write([]byte("lo\npanic: oops\ngoroutine 1"))
	a.flush()
	want := "[p] other\n[p] hello\n[p] panic: oops\n[p] goroutine 1\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	if s.panicLine() != "panic: oops" {
		t.Errorf("panic line %q", s.panicLine())
	}
}
