package charts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
)

// cachedRender renders releases with the cache of workDir and returns the
// packaged chart of each release file.
func cachedRender(t *testing.T, workDir string, releases ...construct.HelmRelease) (map[string][]byte, []string) {
	t.Helper()
	files, diags, err := Render(cluster, releases, OpenCache(workDir))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, d := range diags {
		msgs = append(msgs, d.Message)
	}
	return byPath(files), msgs
}

func entries(t *testing.T, workDir string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(workDir, filepath.FromSlash(CacheDir)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// writeEntry replaces the cache entry name with tgz, as put writes it.
func writeEntry(t *testing.T, workDir, name string, tgz []byte) {
	t.Helper()
	sum := sha256.Sum256(tgz)
	b := append([]byte(hex.EncodeToString(sum[:])+"\n"), tgz...)
	if err := os.WriteFile(filepath.Join(workDir, filepath.FromSlash(CacheDir), name), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCache(t *testing.T) {
	hello := construct.HelmRelease{Name: "greeter", Namespace: "apps", Chart: construct.Chart{Path: testChart(t, "hello")},
		Values: json.RawMessage(`{"greeting":"hi"}`)}
	schema := construct.HelmRelease{Name: "app", Namespace: "default", Chart: construct.Chart{Path: testChart(t, "schema")},
		Values: json.RawMessage(`{"replicas":3}`)}
	const helloFile = OutDir + "/greeter-0.1.0.tgz"

	for _, tc := range []struct {
		name string
		run  func(t *testing.T, dir string, fresh map[string][]byte)
	}{
		{"a second render uses the entry", func(t *testing.T, dir string, fresh map[string][]byte) {
			// An entry planted under the release's name is what the next
			// render writes: proof that it neither packaged nor checked.
			names := entries(t, dir)
			if len(names) != 1 {
				t.Fatalf("entries after one release: %v", names)
			}
			writeEntry(t, dir, names[0], []byte("planted"))
			got, diags := cachedRender(t, dir, hello)
			if len(diags) != 0 || string(got[helloFile]) != "planted" {
				t.Fatalf("second render: %q, %v", got[helloFile], diags)
			}
		}},
		{"a damaged entry is not used", func(t *testing.T, dir string, fresh map[string][]byte) {
			names := entries(t, dir)
			p := filepath.Join(dir, filepath.FromSlash(CacheDir), names[0])
			b, _ := os.ReadFile(p)
			b[len(b)-1] ^= 0xff
			os.WriteFile(p, b, 0o600)
			got, diags := cachedRender(t, dir, hello)
			if len(diags) != 0 || !bytes.Equal(got[helloFile], fresh[helloFile]) {
				t.Fatalf("render over a damaged entry differs from a fresh one (%v)", diags)
			}
		}},
		{"other values are checked again", func(t *testing.T, dir string, fresh map[string][]byte) {
			cachedRender(t, dir, schema)
			bad := schema
			bad.Values = json.RawMessage(`{"replicas":0}`)
			_, diags := cachedRender(t, dir, bad)
			if len(diags) != 1 || !strings.Contains(diags[0], "values.schema.json") {
				t.Fatalf("refused values after passing ones: %v", diags)
			}
			// A refused release leaves no entry: it is refused again.
			_, diags = cachedRender(t, dir, bad)
			if len(diags) != 1 {
				t.Fatalf("refused values, second time: %v", diags)
			}
		}},
		{"another Kubernetes version is checked again", func(t *testing.T, dir string, fresh map[string][]byte) {
			// The entry of 1.31.4 planted: a render for 1.30.2 must not
			// take it.
			names := entries(t, dir)
			writeEntry(t, dir, names[0], []byte("planted"))
			old := *cluster
			old.KubernetesVersion = "1.30.2"
			files, diags, err := Render(&old, []construct.HelmRelease{hello}, OpenCache(dir))
			if err != nil || len(diags) != 0 {
				t.Fatal(err, diags)
			}
			if got := byPath(files)[helloFile]; !bytes.Equal(got, fresh[helloFile]) {
				t.Fatalf("render for another version took the entry: %q", got)
			}
			if n := entries(t, dir); len(n) != 1 || n[0] == names[0] {
				t.Fatalf("entries %v after %v", n, names)
			}
		}},
		{"a changed chart is packaged again", func(t *testing.T, dir string, fresh map[string][]byte) {
			src := filepath.Join(t.TempDir(), "hello")
			if err := os.CopyFS(src, os.DirFS(testChart(t, "hello"))); err != nil {
				t.Fatal(err)
			}
			rel := hello
			rel.Chart.Path = src
			before, _ := cachedRender(t, dir, rel)
			// The same length, other bytes: only the content tells.
			tpl := filepath.Join(src, "templates", "configmap.yaml")
			b, err := os.ReadFile(tpl)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(tpl, bytes.Replace(b, []byte("-hello"), []byte("-howdy"), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			after, diags := cachedRender(t, dir, rel)
			if len(diags) != 0 || bytes.Equal(before[helloFile], after[helloFile]) {
				t.Fatalf("a template changed, the same package came out (%v)", diags)
			}
		}},
		{"a render keeps only the entries it used", func(t *testing.T, dir string, fresh map[string][]byte) {
			cachedRender(t, dir, hello, schema)
			if n := entries(t, dir); len(n) != 2 {
				t.Fatalf("two releases, entries: %v", n)
			}
			cachedRender(t, dir, schema)
			if n := entries(t, dir); len(n) != 1 {
				t.Fatalf("one release left, entries: %v", n)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fresh, diags := cachedRender(t, dir, hello)
			if len(diags) != 0 {
				t.Fatal(diags)
			}
			uncached, _, err := Render(cluster, []construct.HelmRelease{hello}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fresh[helloFile], byPath(uncached)[helloFile]) {
				t.Fatal("the first render with a cache differs from one without")
			}
			tc.run(t, dir, fresh)
		})
	}
}

func TestNoCacheWithoutWorkDir(t *testing.T) {
	if c := OpenCache(""); c != nil {
		t.Fatalf("cache without a work folder: %+v", c)
	}
}
