package substitute

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// hard holds every character the formats treat specially: quotes, a
// backslash, newlines, a shell expansion, a YAML indicator and a tab.
const hard = "pa\"ss\\word\nline two: 'x' $HOME `id` # not a comment\n\tend\\"

const (
	mA = "((secret:dex/values/a))"
	mB = "((secret:dex/values/b))"
)

var values = map[string]string{mA: hard, mB: "simple"}

func lookup(m string) (string, error) {
	v, ok := values[m]
	if !ok {
		return "", errors.New("no secret for " + m)
	}
	return v, nil
}

func TestJSON(t *testing.T) {
	in := "{\n  \"password\": \"" + mA + "\",\n  \"port\": 8080.50,\n  \"url\": \"https://u:" + mB + "@h/\",\n  \"" + mB + "\": [true, null, \"" + mA + "\"],\n  \"untouched\": \"a \\\"quoted\\\" \\u0041\"\n}\n"
	out, n, err := File(nodeplan.FormatJSON, []byte(in), lookup)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("replaced %d markers, want 4", n)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if got["password"] != hard || got["url"] != "https://u:simple@h/" || got["simple"].([]any)[2] != hard {
		t.Errorf("values not exact: %#v", got)
	}
	// Everything but the strings that held markers is kept byte for byte.
	for _, keep := range []string{"\"port\": 8080.50,", `"untouched": "a \"quoted\" \u0041"`, "{\n  \"password\": "} {
		if !strings.Contains(string(out), keep) {
			t.Errorf("output lost %q:\n%s", keep, out)
		}
	}
}

func TestYAML(t *testing.T) {
	in := "# a comment naming " + mA + " stays\nkey: " + mA + "\nnested:\n  list:\n    - " + mB + "\n    - 3\n  text: |\n    prefix " + mB + "\n---\nsecond: '" + mA + "'\nanchor: &x " + mB + "\nalias: *x\n"
	out, n, err := File(nodeplan.FormatYAML, []byte(in), lookup)
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Errorf("replaced %d markers, want 5", n)
	}
	if !strings.Contains(string(out), "# a comment naming "+mA+" stays") {
		t.Errorf("comment changed:\n%s", out)
	}
	docs := strings.Split(string(out), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("want 2 documents:\n%s", out)
	}
	// Read back by yaml.v3 and by sigs.k8s.io/yaml, as Kubernetes reads.
	var first struct {
		Key    string
		Nested struct {
			List []any
			Text string
		}
	}
	if err := yaml.Unmarshal([]byte(docs[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first.Key != hard || first.Nested.List[0] != "simple" || first.Nested.List[1] != 3 || first.Nested.Text != "prefix simple\n" {
		t.Errorf("first document = %#v\n%s", first, out)
	}
	var second map[string]string
	if err := k8syaml.Unmarshal([]byte(docs[1]), &second); err != nil {
		t.Fatal(err)
	}
	if second["second"] != hard || second["anchor"] != "simple" || second["alias"] != "simple" {
		t.Errorf("second document = %#v", second)
	}
}

func TestEnv(t *testing.T) {
	in := "# " + mA + " in a comment\nPASSWORD=" + mA + "\nURL=\"https://u:" + mB + "@h\"\nOTHER='kept as is'\n"
	out, n, err := File(nodeplan.FormatEnv, []byte(in), lookup)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("replaced %d, want 2", n)
	}
	if !strings.HasPrefix(string(out), "# "+mA+" in a comment\n") || !strings.HasSuffix(string(out), "\nOTHER='kept as is'\n") {
		t.Errorf("other lines changed:\n%s", out)
	}
	p := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command("/bin/sh", "-c", `. "$1" && printf '%s|%s' "$PASSWORD" "$URL"`, "sh", p).Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != hard+"|https://u:simple@h" {
		t.Errorf("sh read %q", got)
	}
}

func TestWhole(t *testing.T) {
	out, n, err := File(nodeplan.FormatWhole, []byte("  "+mA+"\n"), lookup)
	if err != nil || n != 1 || string(out) != hard {
		t.Fatalf("whole = %q, %d, %v", out, n, err)
	}
	// Run again on its own output: already substituted, kept.
	again, n, err := File(nodeplan.FormatWhole, out, lookup)
	if err != nil || n != 0 || string(again) != hard {
		t.Errorf("second run = %q, %d, %v", again, n, err)
	}
	if _, _, err := File(nodeplan.FormatWhole, []byte("key="+mA), lookup); err == nil || !strings.Contains(err.Error(), "exactly one marker") {
		t.Errorf("marker among text: %v", err)
	}
}

// A second run finds nothing to do and changes nothing.
func TestIdempotent(t *testing.T) {
	inputs := map[nodeplan.Format]string{
		nodeplan.FormatJSON: `{"a": "` + mA + `"}`,
		nodeplan.FormatYAML: "a: " + mA + "\n",
		nodeplan.FormatEnv:  "A=" + mA + "\n",
	}
	for f, in := range inputs {
		once, _, err := File(f, []byte(in), lookup)
		if err != nil {
			t.Fatal(err)
		}
		twice, n, err := File(f, once, lookup)
		if err != nil || n != 0 || string(twice) != string(once) {
			t.Errorf("%s: second run replaced %d: %v\n%s\n%s", f, n, err, once, twice)
		}
	}
}

func TestErrors(t *testing.T) {
	missing := "((secret:dex/values/missing))"
	tests := []struct {
		format nodeplan.Format
		in     string
		want   string
	}{
		{nodeplan.FormatJSON, "{\n\"a\": \"" + missing + "\"}", "no secret for " + missing},
		{nodeplan.FormatJSON, "{\n\"a\": ,}", "not JSON: line 2"},
		{nodeplan.FormatJSON, `{"a": "`, "not JSON"},
		{nodeplan.FormatYAML, "a: " + missing, "no secret for"},
		{nodeplan.FormatYAML, "a: [\n", "not YAML"},
		{nodeplan.FormatEnv, "A=1\nB=" + missing, "B (line 2): no secret for"},
		{nodeplan.FormatEnv, "not an assignment", "not an environment file: line 1"},
		{nodeplan.FormatWhole, missing, "no secret for"},
		{"toml", "", "unknown format"},
	}
	for _, tt := range tests {
		out, _, err := File(tt.format, []byte(tt.in), lookup)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %q: error = %v, want %q", tt.format, tt.in, err, tt.want)
		}
		if out != nil {
			t.Errorf("%s %q: output despite the error", tt.format, tt.in)
		}
	}
}
