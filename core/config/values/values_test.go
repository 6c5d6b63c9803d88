package values

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
)

const dexSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["issuer"],
  "properties": {
    "issuer": {"type": "string", "pattern": "^https://"},
    "replicas": {"type": "integer", "minimum": 1},
    "clientSecret": {"type": "string", "pattern": "^[a-f0-9]+$", "x-kube-aws-sensitive": true},
    "connectors": {"type": "array", "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}}
  }
}`

const sentinel = "SENTINEL-d3adb33f"

func TestSchemaFailuresHavePathsAndLines(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KUBE_AWS_TEST_DEX_SECRET", sentinel)
	src := `kmsKeyArn: arn:aws:kms:us-east-1:123456789012:key/abc
nodePools:
  - name: a
  - name: b
    plugins:
      dex:
        values:
          replicas: 0
plugins:
  dex:
    values:
      issuer: http://insecure
      replicas: two
      clientSecret: {valueFrom: {env: KUBE_AWS_TEST_DEX_SECRET}}
      connectors:
        - {type: github}
      isuer: typo
`
	c, diags := config.Parse(filepath.Join(dir, "cluster.yaml"), []byte(src))
	if len(diags) != 0 {
		t.Fatal(diags.Error())
	}
	vals, _ := config.EffectiveValues(c, dir)
	r, diags := config.ResolveSecrets(c, vals, map[string]json.RawMessage{"dex": json.RawMessage(dexSchema)}, dir)
	if len(diags) != 0 {
		t.Fatal(diags.Error())
	}
	got := Validate(c, "dex", json.RawMessage(dexSchema), r.Plain["dex"], r.Secrets)
	file := filepath.Join(dir, "cluster.yaml")
	for _, w := range []struct {
		path string
		line int
		msg  string
	}{
		{"plugins.dex.values.issuer", 12, `'http://insecure' does not match pattern '^https://'`},
		{"plugins.dex.values.replicas", 13, "got string, want integer"},
		{"plugins.dex.values.clientSecret", 14, "((secret:dex/values/clientSecret))"},
		{"plugins.dex.values.connectors[0]", 16, "missing property 'id'"},
		{"plugins.dex.values.isuer", 17, `unknown key "isuer" (did you mean "issuer"?)`},
		{"nodePools[1].plugins.dex.values.replicas", 8, "minimum: got 0, want 1"},
	} {
		found := false
		for _, d := range got {
			if d.Path == w.path && d.Line == w.line && d.File == file && strings.Contains(d.Message, w.msg) && d.Plugin == "dex" && d.Severity == diag.Fatal && d.Hint != "" {
				found = true
			}
		}
		if !found {
			t.Errorf("missing %+v in:\n%s", w, got.Error())
		}
	}
	// Pool a inherits the cluster-level failures: they are not repeated.
	// Pool b's own replicas error is one more.
	if len(got) != 6 {
		t.Errorf("want 6 diagnostics, got %d:\n%s", len(got), got.Error())
	}
	out, _ := json.Marshal(got)
	if strings.Contains(got.Error(), sentinel) || strings.Contains(string(out), sentinel) {
		t.Fatalf("a diagnostic echoes the secret:\n%s", got.Error())
	}
}

// An unknown key in a plugin's values is reported at the key, with the
// nearest key the schema allows there, as cluster.yaml's unknown keys are;
// the keys allowed are found wherever the schema declares them ($ref).
func TestUnknownValuesKeysSuggest(t *testing.T) {
	const schema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "retentionDays": {"type": "integer"},
    "bucket": {"$ref": "#/$defs/bucket"},
    "args": {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "string"}}, "additionalProperties": false}
  },
  "$defs": {"bucket": {"type": "object", "additionalProperties": false, "properties": {"name": {"type": "string"}, "prefix": {"type": "string"}}}}
}`
	src := `plugins:
  audit-trail:
    values:
      retentonDays: 7
      bucket:
        nmae: logs
        region: x
      args:
        Bad: x
`
	c, diags := config.Parse("cluster.yaml", []byte(src))
	if len(diags) != 0 {
		t.Fatal(diags.Error())
	}
	vals, _ := config.EffectiveValues(c, ".")
	got := Validate(c, "audit-trail", json.RawMessage(schema), vals["audit-trail"], nil)
	want := []struct {
		path, msg, hint string
		line            int
	}{
		{"plugins.audit-trail.values.retentonDays", `plugin audit-trail values: unknown key "retentonDays" (did you mean "retentionDays"?)`, "rename it to retentionDays", 4},
		{"plugins.audit-trail.values.bucket.nmae", `plugin audit-trail values: unknown key "nmae" in /bucket (did you mean "name"?)`, "rename it to name", 6},
		{"plugins.audit-trail.values.bucket.region", `plugin audit-trail values: unknown key "region" in /bucket`, "valid keys here: name, prefix", 7},
		{"plugins.audit-trail.values.args.Bad", `plugin audit-trail values: unknown key "Bad" in /args`, "rename or remove it (keys here match ^[a-z]+$;", 9},
	}
	if len(got) != len(want) {
		t.Fatalf("want %d diagnostics, got:\n%s", len(want), got.Error())
	}
	for _, w := range want {
		found := false
		for _, d := range got {
			if d.Path == w.path && d.Line == w.line && d.Message == w.msg &&
				strings.HasPrefix(d.Hint, w.hint) && strings.Contains(d.Hint, "kube-aws plugins describe audit-trail") {
				found = true
			}
		}
		if !found {
			t.Errorf("missing %+v in:\n%s", w, got.Error())
		}
	}
}

func TestValidValuesPass(t *testing.T) {
	c, _ := config.Parse("cluster.yaml", []byte("plugins: {dex: {values: {issuer: 'https://x', replicas: 2}}}\n"))
	vals, _ := config.EffectiveValues(c, ".")
	if d := ValidateAll(c, vals, map[string]json.RawMessage{"dex": json.RawMessage(dexSchema)}, nil); len(d) != 0 {
		t.Fatal(d.Error())
	}
}

func TestInvalidSchemaIsThePluginsBug(t *testing.T) {
	d := Validate(nil, "broken", json.RawMessage(`{"type": 12}`), stageValues(`{}`), nil)
	if len(d) != 1 || !strings.Contains(d[0].Message, "plugin broken declares an invalid values schema") || !strings.Contains(d[0].Hint, "bug in plugin broken") {
		t.Fatalf("%s", d.Error())
	}
	d = Validate(nil, "broken", json.RawMessage(`{not json`), stageValues(`{}`), nil)
	if len(d) != 1 || !strings.Contains(d[0].Message, "not JSON") {
		t.Fatalf("%s", d.Error())
	}
}

// A name under plugins: that no source provides is refused with the
// nearest available name, enabled or not, unless it is disabled.
func TestUnknownPlugins(t *testing.T) {
	on, off := true, false
	d := UnknownPluginsDiag(map[string]*bool{"cloudformation": nil, "dexx": &on, "mine": &on, "cloudformaton": nil, "gone": &off},
		[]string{"cloudformation", "dex", "helm"})
	if len(d) != 3 {
		t.Fatalf("%s", d.Error())
	}
	if d[0].Path != "plugins.cloudformaton" || d[0].Message != `unknown plugin "cloudformaton" in plugins: no plugin source provides it, so its settings would be ignored (did you mean "cloudformation"?)` ||
		!strings.HasPrefix(d[0].Hint, "rename it to cloudformation; ") || !strings.Contains(d[0].Hint, "enabled: false") {
		t.Fatalf("%+v", d[0])
	}
	if d[1].Path != "plugins.dexx" || d[1].Message != `plugin dexx is enabled but no plugin source provides it (did you mean "dex"?)` ||
		!strings.HasPrefix(d[1].Hint, "rename it to dex; ") || !strings.Contains(d[1].Hint, "available plugins: cloudformation, dex, helm") {
		t.Fatalf("%+v", d[1])
	}
	if strings.Contains(d[2].Message, "did you mean") || !strings.Contains(d[2].Hint, "plugins/mine/mine") {
		t.Fatalf("%+v", d[2])
	}
	if d := UnknownPluginsDiag(map[string]*bool{"a": &on}, nil); len(d) != 1 || !strings.Contains(d[0].Hint, "no plugins were found") {
		t.Fatalf("%s", d.Error())
	}
}

func stageValues(s string) stage.PluginValues { return stage.PluginValues{Values: json.RawMessage(s)} }

// The JSON Schema library compiles a draft's metaschema the first time a
// schema of that draft is checked (third_party/README.md), so plugins'
// schemas checked at once, of one draft or several, must each still be
// checked against their metaschema: an invalid one refused, a valid one
// compiled. make test runs this under -race.
func TestSchemasOfEveryDraftAreCheckedAtOnce(t *testing.T) {
	drafts := []string{
		"http://json-schema.org/draft-04/schema#",
		"http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2019-09/schema",
		"https://json-schema.org/draft/2020-12/schema",
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4*len(drafts))
	for round := 0; round < 2; round++ {
		for _, d := range drafts {
			wg.Add(2)
			go func() {
				defer wg.Done()
				if _, err := Compile("ok", json.RawMessage(`{"$schema": "`+d+`", "type": "object"}`)); err != nil {
					errs <- d + ": a valid schema was refused: " + err.Error()
				}
			}()
			go func() {
				defer wg.Done()
				if _, err := Compile("bad", json.RawMessage(`{"$schema": "`+d+`", "type": 12}`)); err == nil || !strings.Contains(err.Error(), "invalid values schema") {
					errs <- fmt.Sprintf("%s: an invalid schema gave %v", d, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
