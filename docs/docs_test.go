// Package docs_test keeps the guides true to the code: the tables of
// docs/plugins.md that list what the code defines are made from it, and a
// promise a guide makes about a limit names the limit the code has. Run
// `go test ./docs -update` after changing what a table is made from, and
// review the diff.
package docs_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/merge"
	"github.com/kube-aws/kube-aws/core/names"
)

var update = flag.Bool("update", false, "rewrite the generated sections of the guides from the code")

const pluginGuide = "plugins.md"

// generated is a section of a guide between two markers, made by a
// function of the code.
type generated struct {
	name string
	make func() string
}

var sections = []generated{
	{"logical IDs", logicalIDTable},
	{"keyed lists", keyedListTable},
}

func begin(name string) string {
	return "<!-- generated from the code by `go test ./docs -update`: " + name + " -->\n"
}

func end(name string) string { return "<!-- end of the generated " + name + " -->\n" }

// TestGeneratedSectionsMatchTheCode compares each generated section of the
// plugin guide with what the code makes now.
func TestGeneratedSectionsMatchTheCode(t *testing.T) {
	doc, err := os.ReadFile(pluginGuide)
	if err != nil {
		t.Fatal(err)
	}
	out := doc
	for _, s := range sections {
		b, e := []byte(begin(s.name)), []byte(end(s.name))
		i := bytes.Index(out, b)
		j := bytes.Index(out, e)
		if i < 0 || j < i {
			t.Errorf("%s has no section %q between the markers %q and %q", pluginGuide, s.name, strings.TrimSpace(string(b)), strings.TrimSpace(string(e)))
			continue
		}
		body := out[i+len(b) : j]
		want := s.make()
		if string(body) == want {
			continue
		}
		if !*update {
			t.Errorf("the %s table of %s differs from the code: run go test ./docs -update and review the diff\nwant:\n%s", s.name, pluginGuide, want)
			continue
		}
		var next []byte
		next = append(next, out[:i+len(b)]...)
		next = append(next, want...)
		out = append(next, out[j:]...)
	}
	if *update && !bytes.Equal(out, doc) {
		if err := os.WriteFile(pluginGuide, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// logicalIDTable lists names.BuiltinResources.
func logicalIDTable() string {
	var b strings.Builder
	b.WriteString("| stack | logical ID | in Go | type | made by | rendered |\n|---|---|---|---|---|---|\n")
	for _, r := range names.BuiltinResources() {
		when := r.When
		if when == "" {
			when = "always"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | `%s` | `%s` | %s | %s |\n", r.Stack, r.LogicalID, r.Go, r.Type, r.MadeBy, when)
	}
	return b.String()
}

// keyedListTable lists merge.KeyedLists.
func keyedListTable() string {
	var b strings.Builder
	b.WriteString("| list | an item is known by | where kube-aws renders one |\n|---|---|---|\n")
	for _, k := range merge.KeyedLists() {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", k.Property, k.Key, k.Where)
	}
	return b.String()
}

// The guide's promise that no log holds a sensitive value in plain text
// has an exception, a value too short to scrub from plugin log lines, and
// the guide names it with the length the code uses.
func TestTheGuideNamesTheShortSecretException(t *testing.T) {
	doc, err := os.ReadFile(pluginGuide)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("shorter than %d characters", config.MinScrubLength)
	if !strings.Contains(string(doc), want) {
		t.Errorf("%s does not say that a sensitive value %s is not scrubbed from plugin log lines", pluginGuide, want)
	}
}
