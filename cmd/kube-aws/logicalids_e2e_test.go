package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/names"
)

// names.BuiltinResources is the plugin guide's table of the logical IDs a
// patch names. It must be what the built-ins render: every resource of
// cluster.yaml.example (network load balancer, hosted zone record, NAT
// gateways) and of the demo's copy (classic load balancer) is in it, and
// each of its entries is rendered by one of the two.
func TestBuiltinResourcesAreWhatTheBuiltinsRender(t *testing.T) {
	t.Parallel()
	l := newExampleLayout(t) // the demo's copy: apiLoadBalancer: classic
	example, err := os.ReadFile(filepath.Join("..", "..", "cluster.yaml.example"))
	if err != nil {
		t.Fatal(err)
	}
	demo := l.cluster
	asIs := filepath.Join(filepath.Dir(l.cluster), "example")
	if err := os.MkdirAll(asIs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(asIs, "cluster.yaml"), example, 0o644); err != nil {
		t.Fatal(err)
	}
	rows := names.BuiltinResources()
	rendered := make([]bool, len(rows))
	for _, dir := range []string{demo, asIs} {
		l.cluster = dir
		if out, errOut, code := l.run("render"); code != 0 {
			t.Fatalf("render %s: exit %d\n%s\n%s", dir, code, out, errOut)
		}
		files, err := filepath.Glob(filepath.Join(dir, "rendered", "stacks", "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no rendered stacks in %s (%v)", dir, err)
		}
		for _, f := range files {
			stack := strings.TrimSuffix(filepath.Base(f), ".json")
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var tmpl struct {
				Resources map[string]struct{ Type string }
			}
			if err := json.Unmarshal(b, &tmpl); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for id, r := range tmpl.Resources {
				found := false
				for i, row := range rows {
					if row.Matches(stack, id, r.Type) {
						found, rendered[i] = true, true
					}
				}
				if !found {
					t.Errorf("%s renders %s (%s) in stack %s, which names.BuiltinResources does not list: add it (a constant or function in core/names/logicalids.go), then run go test ./docs -update", filepath.Base(dir), id, r.Type, stack)
				}
			}
		}
	}
	for i, row := range rows {
		if !rendered[i] {
			t.Errorf("names.BuiltinResources lists %s %s (%s) in stack %s, which neither render made", row.Go, row.LogicalID, row.Type, row.Stack)
		}
	}
}
