package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/stage"
)

func jsonEq(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("bad JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatalf("bad want JSON %s: %v", want, err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestEffectiveValues(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "dex-base.yaml", "issuer: https://base\nreplicas: 2\nconnectors: [{id: github}]\nsecret: {valueFrom: {env: A}}\n")
	writeFile(t, dir, "dex-more.yaml", "replicas: 3\nextra: {a: 1, b: 2}\n")
	writeFile(t, dir, "pool.yaml", "extra: {b: null, c: 3}\n")
	src := `clusterName: demo
nodePools:
  - name: general
  - name: gpu
    plugins:
      dex:
        configFiles: [pool.yaml]
        values:
          replicas: 1
          connectors: []
          secret: {valueFrom: {file: gpu-secret}}
  - name: off
    plugins:
      dex: {enabled: false}
plugins:
  dex:
    configFiles: [dex-base.yaml, dex-more.yaml]
    values:
      issuer: https://dex.example.com
`
	_, vals := effectiveValuesOf(t, dir, src)
	dex := vals["dex"]
	jsonEq(t, dex.Values, `{"issuer":"https://dex.example.com","replicas":3,"connectors":[{"id":"github"}],"secret":{"valueFrom":{"env":"A"}},"extra":{"a":1,"b":2}}`)
	jsonEq(t, dex.NodePools["general"], string(dex.Values))
	// Pool: lists replace, null deletes, and the secret source is replaced
	// whole (env -> file), not merged into {env, file}.
	jsonEq(t, dex.NodePools["gpu"], `{"issuer":"https://dex.example.com","replicas":1,"connectors":[],"secret":{"valueFrom":{"file":"gpu-secret"}},"extra":{"a":1,"c":3}}`)
	if _, ok := dex.NodePools["off"]; ok {
		t.Fatal("a pool that disables the plugin still has values")
	}
}

func TestEffectiveValuesBadConfigFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "broken.yaml", "a: [1\n")
	writeFile(t, dir, "list.yaml", "- 1\n")
	src := `plugins:
  dex:
    configFiles: [missing.yaml, broken.yaml, list.yaml]
`
	c, _ := Parse(filepath.Join(dir, "cluster.yaml"), []byte(src))
	_, diags := EffectiveValues(c, dir)
	if len(diags) != 3 {
		t.Fatalf("want 3 diagnostics:\n%s", diags.Error())
	}
	d := diags[0]
	if d.Path != "plugins.dex.configFiles[0]" || d.Line != 3 || !strings.Contains(d.Message, "cannot read plugin config file missing.yaml") || !strings.Contains(d.Hint, "relative to the folder of cluster.yaml") {
		t.Fatalf("missing file: %+v", d)
	}
	if !strings.Contains(diags[1].Message, "invalid YAML") || diags[1].File != filepath.Join(dir, "broken.yaml") {
		t.Fatalf("broken file: %+v", diags[1])
	}
	if !strings.Contains(diags[2].Message, "must hold a mapping") {
		t.Fatalf("list file: %+v", diags[2])
	}
}

func TestValuesPath(t *testing.T) {
	c, _ := Parse("c.yaml", []byte(`nodePools:
  - name: a
    plugins:
      dex:
        values:
          list: [x, {y: 1}]
plugins:
  dex:
    values:
      "0": zero
      issuer: x
      odd/key~: 1
`))
	for _, tc := range []struct{ pool, ptr, want string }{
		{"", "/issuer", "plugins.dex.values.issuer"},
		{"", "/0", `plugins.dex.values.0`},
		{"", "/odd~1key~0", `plugins.dex.values["odd/key~"]`},
		{"a", "/list/1/y", "nodePools[0].plugins.dex.values.list[1].y"},
		{"a", "/issuer", "plugins.dex.values.issuer"},
		{"", "/missing/3", "plugins.dex.values.missing[3]"},
	} {
		if got := c.ValuesPath("dex", tc.pool, tc.ptr); got != tc.want {
			t.Errorf("ValuesPath(%q, %q) = %q, want %q", tc.pool, tc.ptr, got, tc.want)
		}
	}
}

// effectiveValuesOf parses src as dir's cluster.yaml and returns the cluster
// and its plugins' effective values, failing the test on any diagnostic.
func effectiveValuesOf(t *testing.T, dir, src string) (*Cluster, map[string]stage.PluginValues) {
	t.Helper()
	c, diags := Parse(filepath.Join(dir, "cluster.yaml"), []byte(src))
	if len(diags) != 0 {
		t.Fatal(diags.Error())
	}
	vals, diags := EffectiveValues(c, dir)
	if len(diags) != 0 {
		t.Fatal(diags.Error())
	}
	return c, vals
}
