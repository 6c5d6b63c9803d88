package chartcache

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

func chart(version string) fstest.MapFS {
	return fstest.MapFS{
		"charts/demo/Chart.yaml":             {Data: []byte("apiVersion: v2\nname: demo\nversion: " + version + "\n")},
		"charts/demo/values.yaml":            {Data: []byte("replicas: 1\n")},
		"charts/demo/templates/_helpers.tpl": {Data: []byte("{{- define \"x\" -}}x{{- end -}}\n")},
		"charts/demo/templates/cm.yaml":      {Data: []byte("kind: ConfigMap\n")},
	}
}

func TestExtractWritesTheChartUnderItsHash(t *testing.T) {
	work := t.TempDir()
	p, err := Extract(chart("0.1.0"), "charts/demo", work, "demo")
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := Hash(chart("0.1.0"), "charts/demo")
	want := filepath.Join(work, ".kube-aws", "cache", "plugins", "demo", sum[:32], "demo")
	if p != want {
		t.Errorf("path %s, want %s", p, want)
	}
	for _, f := range []string{"Chart.yaml", "values.yaml", "templates/_helpers.tpl", "templates/cm.yaml"} {
		fi, err := os.Stat(filepath.Join(p, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v", f, fi.Mode())
		}
	}
	// No temporary folders left behind.
	entries, _ := os.ReadDir(filepath.Dir(filepath.Dir(p)))
	if len(entries) != 1 {
		t.Errorf("cache holds %d entries, want 1", len(entries))
	}
}

func TestChangedChartGetsANewFolder(t *testing.T) {
	work := t.TempDir()
	a, _ := Extract(chart("0.1.0"), "charts/demo", work, "demo")
	b, err := Extract(chart("0.2.0"), "charts/demo", work, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("a changed chart reused the old folder")
	}
	got, _ := os.ReadFile(filepath.Join(b, "Chart.yaml"))
	if !strings.Contains(string(got), "0.2.0") {
		t.Errorf("new folder holds %q", got)
	}
}

func TestTamperedCacheIsRewritten(t *testing.T) {
	work := t.TempDir()
	p, _ := Extract(chart("0.1.0"), "charts/demo", work, "demo")
	if err := os.WriteFile(filepath.Join(p, "templates", "cm.yaml"), []byte("kind: Secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(p, "values.yaml")); err != nil {
		t.Fatal(err)
	}
	q, err := Extract(chart("0.1.0"), "charts/demo", work, "demo")
	if err != nil || q != p {
		t.Fatalf("re-extract: %s %v", q, err)
	}
	got, _ := os.ReadFile(filepath.Join(p, "templates", "cm.yaml"))
	if string(got) != "kind: ConfigMap\n" {
		t.Errorf("tampered file kept: %q", got)
	}
	if _, err := os.Stat(filepath.Join(p, "values.yaml")); err != nil {
		t.Errorf("removed file not restored: %v", err)
	}
}

// TestConcurrentExtracts: plugins run concurrently and two kube-aws runs may
// share a folder; every caller gets the same, complete chart.
func TestConcurrentExtracts(t *testing.T) {
	work := t.TempDir()
	var wg sync.WaitGroup
	paths := make([]string, 16)
	errs := make([]error, 16)
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], errs[i] = Extract(chart("0.1.0"), "charts/demo", work, "demo")
		}()
	}
	wg.Wait()
	for i := range paths {
		if errs[i] != nil || paths[i] != paths[0] {
			t.Errorf("extract %d: %s %v", i, paths[i], errs[i])
		}
	}
	if ok, err := complete(chart("0.1.0"), "charts/demo", paths[0]); !ok || err != nil {
		t.Errorf("cache incomplete after concurrent extracts: %v", err)
	}
}

func TestExtractErrors(t *testing.T) {
	if _, err := Extract(chart("0.1.0"), "charts/demo", "", "demo"); err == nil || !strings.Contains(err.Error(), "WorkDir") {
		t.Errorf("empty work dir: %v", err)
	}
	if _, err := Extract(chart("0.1.0"), "charts", t.TempDir(), "demo"); err == nil || !strings.Contains(err.Error(), "Chart.yaml") {
		t.Errorf("no Chart.yaml: %v", err)
	}
}
