package config

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/diag"
)

type pool struct {
	Name    string `json:"name"`
	MaxSize int    `json:"maxSize"`
}

type doc struct {
	Region    string            `json:"region"`
	Pools     []pool            `json:"nodePools"`
	Labels    map[string]string `json:"labels"`
	Enabled   bool              `json:"enabled"`
	Values    json.RawMessage   `json:"values"`
	Unwritten string            `json:"unwritten"`
}

func messages(ds diag.List) string {
	var s []string
	for _, d := range ds {
		s = append(s, d.Path+"@"+itoa(d.Line)+":"+itoa(d.Column)+" "+d.Message+" | "+d.Hint)
	}
	return strings.Join(s, "\n")
}

// Every kind of mistake is a fatal diagnostic at its line and config path,
// and the rest of the document is still decoded.
func TestDecodeStrictly(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		opts       decodeOpts
		want       []string // parts of the diagnostics, in order
		bad        string   // a path Positions.Bad holds
	}{
		{name: "unknown key, with the closest one", yaml: "regoin: x\n",
			want: []string{`regoin@1:1 unknown key "regoin" (did you mean "region"?) | rename it to region`}, bad: "regoin"},
		{name: "unknown key, far from any", yaml: "nodePools:\n- name: a\n  colour: red\n",
			want: []string{`nodePools[0].colour@3:3 unknown key "colour" in nodePools[0] | valid keys here: maxSize, name`}},
		{name: "duplicate key", yaml: "region: a\nregion: b\n",
			want: []string{`region@2:1 key "region" appears more than once`}},
		{name: "wrong type", yaml: "nodePools:\n- name: a\n  maxSize: many\n",
			want: []string{`nodePools[0].maxSize@3:12 nodePools[0].maxSize must be an integer, not the string "many" | write a whole number, like maxSize: 3`}, bad: "nodePools[0].maxSize"},
		{name: "a string read as a number", yaml: "region: 1.10\n",
			want: []string{`region@1:9 region must be a string, but 1.10 is read as a number | quote it: region: "1.10"`}},
		{name: "the caller's quote hint", yaml: "region: 1.10\n",
			opts: decodeOpts{QuoteHint: func(path, value string) string { return "quote " + path + " " + value }},
			want: []string{`| quote region 1.10`}},
		{name: "yes is a string in YAML 1.2", yaml: "enabled: yes\n",
			want: []string{`enabled must be true or false, not the string "yes" | write enabled: true or enabled: false`}},
		{name: "not a mapping, with the caller's hint", yaml: "- a\n", opts: decodeOpts{TopLevelHint: "write keys"},
			want: []string{`@1:1 the configuration must be a mapping, not a list | write keys`}},
		{name: "two documents", yaml: "region: a\n---\nregion: b\n",
			want: []string{`@2:1 c.yaml holds more than one YAML document`}},
		{name: "aliases past the bound", yaml: "values: &a [1, 2, 3]\nlabels: {x: y}\n", opts: decodeOpts{MaxNodes: 3},
			want: []string{`the document expands to more than 3 YAML nodes`}},
		{name: "quoted keys in paths", yaml: "labels:\n  a.b/c: 1\n",
			want: []string{`labels["a.b/c"]@2:10 labels["a.b/c"] must be a string, but 1 is read as a integer`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d doc
			pos, diags := decodeStrict("c.yaml", []byte(tc.yaml), &d, tc.opts)
			got := messages(diags)
			if len(diags) != len(tc.want) || !diags.HasFatal() {
				t.Fatalf("diagnostics:\n%s\nwant %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if line := messages(diags[i : i+1]); !strings.Contains(line, w) {
					t.Errorf("diagnostic %d:\n%s\nwant %q", i, line, w)
				}
			}
			if tc.bad != "" && !pos.Bad[tc.bad] {
				t.Errorf("Bad %v lacks %s", pos.Bad, tc.bad)
			}
		})
	}
}

// What is right is decoded, and every value's position is kept.
func TestDecodePositions(t *testing.T) {
	src := "region: eu-west-1\nnodePools:\n- name: a\n  maxSize: 3\n- name: b\n  colour: red\nvalues: {a: [1, no, 1.5]}\n"
	var d doc
	pos, diags := decodeStrict("c.yaml", []byte(src), &d, decodeOpts{})
	if len(diags) != 1 || pos.Broken {
		t.Fatalf("diagnostics: %s", messages(diags))
	}
	if d.Region != "eu-west-1" || len(d.Pools) != 2 || d.Pools[0].MaxSize != 3 || d.Pools[1].Name != "b" {
		t.Errorf("decoded %+v", d)
	}
	if string(d.Values) != `{"a":[1,"no",1.5]}` {
		t.Errorf("values %s", d.Values)
	}
	for path, want := range map[string]position{
		"":                     {1, 1},
		"nodePools[0].maxSize": {4, 12},
		"nodePools[1].name":    {5, 9},
		"values.a[2]":          {7, 21},
	} {
		if got, ok := pos.Value[path]; !ok || got != want {
			t.Errorf("%s at %+v, want %+v", path, got, want)
		}
	}
	if _, ok := pos.Value["unwritten"]; ok {
		t.Error("a key the file does not write has a position")
	}

	// An empty document decodes nothing; a broken one says so.
	if pos, diags := decodeStrict("c.yaml", []byte("# nothing\n"), &d, decodeOpts{}); len(diags) != 0 || pos.Broken {
		t.Errorf("empty: %s", messages(diags))
	}
	if pos, diags := decodeStrict("c.yaml", []byte("a: [\n"), &d, decodeOpts{}); len(diags) != 1 || !pos.Broken {
		t.Errorf("broken: %v %s", pos.Broken, messages(diags))
	}
}

func TestToJSON(t *testing.T) {
	for _, tc := range []struct{ yaml, want, err string }{
		{yaml: "a: 1\nb: [x, 0x10, true, ~]\nc: 1e3\n", want: `{"a":1,"b":["x",16,true,null],"c":1000}`},
		{yaml: "<<: {a: 1}\nb: 2\na: 3\n", want: `{"a":3,"b":2}`},
		{yaml: "a: .inf\n", err: "a: .inf is not a number JSON can hold"},
		{yaml: "a: \xff\n", err: "byte 0xFF is not UTF-8"},
	} {
		js, diags := strictToJSON("v.yaml", []byte(tc.yaml), decodeOpts{})
		if tc.err != "" {
			if !strings.Contains(messages(diags), tc.err) || js != nil {
				t.Errorf("%q: %s, want %q", tc.yaml, messages(diags), tc.err)
			}
			continue
		}
		if len(diags) != 0 || string(js) != tc.want {
			t.Errorf("%q: %s %s, want %s", tc.yaml, js, messages(diags), tc.want)
		}
	}
}

func TestPaths(t *testing.T) {
	for _, tc := range []struct{ path, parent, last string }{
		{"nodePools[1].minSize", "nodePools[1]", "minSize"},
		{"nodePools[1]", "nodePools", "[1]"},
		{`nodePools[0].labels["a.b/c"]`, "nodePools[0].labels", "a.b/c"},
		{"region", "", "region"},
		{"", "", "the top level"},
	} {
		if got := parentPath(tc.path); got != tc.parent {
			t.Errorf("ParentPath(%q) = %q, want %q", tc.path, got, tc.parent)
		}
		if got := lastElem(tc.path); got != tc.last {
			t.Errorf("LastElem(%q) = %q, want %q", tc.path, got, tc.last)
		}
	}
	if got := JoinPath(IndexPath("nodePools", 0)+".labels", "a.b/c"); got != `nodePools[0].labels["a.b/c"]` {
		t.Errorf("JoinPath = %s", got)
	}
	if got := closest("regoin", []string{"region", "nodePools"}); got != "region" {
		t.Errorf("Closest = %q", got)
	}
}
