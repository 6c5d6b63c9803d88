package cloudformation

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current render")

// TestGolden compares every rendered template and the StackSpecs with
// testdata/golden/<fixture>/. Run `go test ./builtin/cloudformation -update`
// after an intended change and review the diff.
func TestGolden(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			res := renderFixture(t, name)
			want := map[string][]byte{}
			for _, f := range res.Files {
				want[f.Path] = f.Content
			}
			specs, err := cfn.Marshal(res.Stacks, true)
			if err != nil {
				t.Fatal(err)
			}
			want["stacks.json"] = specs
			dir := filepath.Join("testdata", "golden", name)
			if *update {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				for p, b := range want {
					if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			var have []string
			err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
				if err != nil || info.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(dir, p)
				have = append(have, filepath.ToSlash(rel))
				return nil
			})
			if err != nil {
				t.Fatalf("%v (run go test ./builtin/cloudformation -update)", err)
			}
			sort.Strings(have)
			for _, p := range have {
				if _, ok := want[p]; !ok {
					t.Errorf("golden %s is no longer rendered (run with -update)", p)
				}
			}
			for p, b := range want {
				g, err := os.ReadFile(filepath.Join(dir, p))
				if err != nil {
					t.Errorf("%s: %v (run with -update)", p, err)
					continue
				}
				if !bytes.Equal(g, b) {
					t.Errorf("%s differs from testdata/golden/%s/%s (run with -update and review the diff)", p, name, p)
				}
			}
		})
	}
}

// TestDeterministic renders each fixture twice and wants identical bytes:
// rendered output is committed and diffed, so map order must never leak.
func TestDeterministic(t *testing.T) {
	for _, name := range lintFixtures {
		a, b := renderFixture(t, name), renderFixture(t, name)
		if len(a.Files) != len(b.Files) {
			t.Fatalf("%s: %d files, then %d", name, len(a.Files), len(b.Files))
		}
		for i := range a.Files {
			if a.Files[i].Path != b.Files[i].Path || !bytes.Equal(a.Files[i].Content, b.Files[i].Content) {
				t.Errorf("%s: %s differs between two renders", name, a.Files[i].Path)
			}
		}
		sa, _ := cfn.Marshal(a.Stacks, false)
		sb, _ := cfn.Marshal(b.Stacks, false)
		if !bytes.Equal(sa, sb) {
			t.Errorf("%s: stack specs differ between two renders", name)
		}
	}
}
