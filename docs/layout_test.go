package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// README's layout names every top-level folder and every program in cmd/,
// each with its job: a folder added without a line there fails here.
func TestReadmeLayoutNamesEveryFolder(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	block := regexp.MustCompile("(?s)```\n(.*?)```").FindStringSubmatch(layout)
	if block == nil {
		t.Fatal("README.md's layout has no code block")
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*([a-z][a-z0-9._/-]*/)\s+\S`).FindAllStringSubmatch(block[1], -1) {
		named[m[1]] = true
	}
	check := func(dir, want string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "bin" || e.Name() == "rendered" {
				continue
			}
			if name := e.Name() + "/"; !named[name] && !named[want+name] {
				t.Errorf("README.md's layout does not name %s%s: give it a line with its job", want, name)
			}
		}
	}
	check("..", "")
	check(filepath.Join("..", "cmd"), "cmd/")
}
