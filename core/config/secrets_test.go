package config

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/test/pemtest"
)

const sentinel = "s3cr3t-SENTINEL-9f8e"

func TestResolveSecrets(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "token", "file-"+sentinel+"\n")
	t.Setenv("KUBE_AWS_TEST_SECRET", "env-"+sentinel)
	src := `kmsKeyArn: arn:aws:kms:us-east-1:123456789012:key/abc
nodePools:
  - name: a
  - name: b
    plugins:
      dex:
        values:
          password: other-` + sentinel + `
plugins:
  dex:
    values:
      issuer: https://dex.example.com
      clientSecret: {valueFrom: {env: KUBE_AWS_TEST_SECRET}}
      token: {valueFrom: {file: token}}
      password: plain-` + sentinel + `
      db: {user: u, pass: {x: 1}}
`
	c, vals := effectiveValuesOf(t, dir, src)
	schema := json.RawMessage(`{
	  "type": "object",
	  "properties": {
	    "password": {"type": "string", "x-kube-aws-sensitive": true},
	    "db": {"$ref": "#/$defs/db"}
	  },
	  "$defs": {"db": {"type": "object", "properties": {"pass": {"x-kube-aws-sensitive": true}}}}
	}`)
	r, diags := ResolveSecrets(c, vals, map[string]json.RawMessage{"dex": schema}, dir)
	if len(diags) != 0 {
		t.Fatal(diags.Error())
	}
	jsonEq(t, r.Values["dex"].Values, `{
	  "issuer": "https://dex.example.com",
	  "clientSecret": "((secret:dex/values/clientSecret))",
	  "token": "((secret:dex/values/token))",
	  "password": "((secret:dex/values/password))",
	  "db": {"user": "u", "pass": "((secret:dex/values/db/pass))"}
	}`)
	// Pool a inherits every secret and reuses the cluster-level markers;
	// pool b overrides the password, which gets its own marker.
	jsonEq(t, r.Values["dex"].NodePools["a"], string(r.Values["dex"].Values))
	var b map[string]any
	_ = json.Unmarshal(r.Values["dex"].NodePools["b"], &b)
	if b["password"] != "((secret:dex/nodePools/b/password))" || b["token"] != "((secret:dex/values/token))" {
		t.Fatalf("pool b: %v", b)
	}
	want := Secrets{
		"((secret:dex/values/clientSecret))":  "env-" + sentinel,
		"((secret:dex/values/token))":         "file-" + sentinel, // trailing newline removed
		"((secret:dex/values/password))":      "plain-" + sentinel,
		"((secret:dex/values/db/pass))":       `{"x":1}`,
		"((secret:dex/nodePools/b/password))": "other-" + sentinel,
	}
	if len(r.Secrets) != len(want) {
		t.Fatalf("secrets: %v", r.Secrets)
	}
	for m, p := range want {
		if r.Secrets[m] != p {
			t.Errorf("secret %s = %q, want %q", m, r.Secrets[m], p)
		}
	}
	// The plain values are there for schema validation.
	var plain map[string]any
	_ = json.Unmarshal(r.Plain["dex"].Values, &plain)
	if plain["clientSecret"] != "env-"+sentinel {
		t.Fatalf("plain: %v", plain)
	}
	// Nothing that leaves the process carries the sentinel.
	for _, pv := range r.Values {
		if strings.Contains(string(pv.Values), sentinel) {
			t.Fatalf("redacted values leak: %s", pv.Values)
		}
		for _, v := range pv.NodePools {
			if strings.Contains(string(v), sentinel) {
				t.Fatalf("redacted pool values leak: %s", v)
			}
		}
	}
	raw, err := json.Marshal(c)
	cfg := RedactJSON(raw, r.Secrets)
	if err != nil || strings.Contains(string(cfg), sentinel) {
		t.Fatalf("RedactedJSON leaks or fails (%v): %s", err, cfg)
	}
	if !strings.Contains(string(cfg), "((secret:dex/values/password))") {
		t.Fatalf("RedactedJSON did not mark the plain password: %s", cfg)
	}
}

func TestMissingSecretSources(t *testing.T) {
	dir := t.TempDir()
	src := `nodePools:
  - name: a
    plugins:
      dex:
        values:
          token: {valueFrom: {file: nope.txt}}
plugins:
  dex:
    values:
      clientSecret:
        valueFrom:
          env: KUBE_AWS_TEST_UNSET_VARIABLE
      bad: {valueFrom: {env: A, file: B}}
      endless: {valueFrom: {file: /dev/zero}}
`
	c, _ := Parse(filepath.Join(dir, "cluster.yaml"), []byte(src))
	vals, _ := EffectiveValues(c, dir)
	_, diags := ResolveSecrets(c, vals, nil, dir)
	if len(diags) != 4 {
		t.Fatalf("want 4 diagnostics:\n%s", diags.Error())
	}
	for _, w := range []want{
		{path: "plugins.dex.values.endless.valueFrom.file", line: 14, msg: "cannot read secret file /dev/zero: it is larger than the 1.0 MiB limit (read up to the limit)"},
		{path: "plugins.dex.values.clientSecret.valueFrom.env", line: 12, col: 16, msg: "environment variable KUBE_AWS_TEST_UNSET_VARIABLE is not set", hint: "export KUBE_AWS_TEST_UNSET_VARIABLE"},
		{path: "nodePools[0].plugins.dex.values.token.valueFrom.file", line: 6, msg: "cannot read secret file nope.txt", hint: "relative to the folder of cluster.yaml"},
		{path: "plugins.dex.values.bad.valueFrom", line: 13, msg: "valueFrom must have exactly one of env or file"},
	} {
		found := false
		for _, d := range diags {
			if d.Path == w.path && d.Line == w.line && (w.col == 0 || d.Column == w.col) && strings.Contains(d.Message, w.msg) && strings.Contains(d.Hint, w.hint) && d.Plugin == "dex" {
				found = true
			}
		}
		if !found {
			t.Errorf("missing %+v in\n%s", w, diags.Error())
		}
	}
}

func TestSensitiveValuesNeedKMSKey(t *testing.T) {
	t.Setenv("KUBE_AWS_TEST_SECRET", "long-enough-secret")
	c, _ := Parse("cluster.yaml", []byte("plugins: {dex: {values: {s: {valueFrom: {env: KUBE_AWS_TEST_SECRET}}}}}\n"))
	vals, _ := EffectiveValues(c, ".")
	_, diags := ResolveSecrets(c, vals, nil, ".")
	if len(diags) != 1 || diags[0].Path != "kmsKeyArn" || !strings.Contains(diags[0].Message, "no kmsKeyArn") {
		t.Fatalf("diags:\n%s", diags.Error())
	}
}

func TestRedact(t *testing.T) {
	secrets := Secrets{
		"((secret:a/values/x))": "hunter2",
		"((secret:a/values/y))": "hunter2-long",
		"((secret:a/values/z))": "line1\n\"quoted\"",
		"((secret:a/values/e))": "",
	}
	in := `log: hunter2-long and hunter2; json: {"v":"line1\n\"quoted\""}; raw: line1
"quoted"`
	got := Redact(in, secrets)
	want := `log: ((secret:a/values/y)) and ((secret:a/values/x)); json: {"v":"((secret:a/values/z))"}; raw: ((secret:a/values/z))`
	if got != want {
		t.Fatalf("Redact:\n got %s\nwant %s", got, want)
	}
	if Redact("nothing", nil) != "nothing" {
		t.Fatal("Redact without secrets changed the text")
	}
	// Text is first searched for each secret: the one form found, whichever
	// it is, is enough for the whole text to be redacted.
	for text, want := range map[string]string{
		`{"v":"line1\n\"quoted\""}`: `{"v":"((secret:a/values/z))"}`,
		"a line1\n\"quoted\" b":     "a ((secret:a/values/z)) b",
		"only hunter2":              "only ((secret:a/values/x))",
		"no secret, hunter":         "no secret, hunter",
	} {
		if got := Redact(text, secrets); got != want {
			t.Errorf("Redact(%q) = %q, want %q", text, got, want)
		}
	}
	// A secret with an HTML character in JSON, escaped as json.Marshal
	// escapes it or as an Encoder without HTML escaping writes it.
	html := Secrets{"((secret:a/values/h))": "p<w>&d\n2"}
	for text, want := range map[string]string{
		`{"v":"p\u003cw\u003e\u0026d\n2"}`: `{"v":"((secret:a/values/h))"}`,
		`{"v":"p<w>&d\n2"}`:                `{"v":"((secret:a/values/h))"}`,
		"p<w>&d\n2":                        "((secret:a/values/h))",
	} {
		if got := Redact(text, html); got != want {
			t.Errorf("Redact(%q) = %q, want %q", text, got, want)
		}
	}
	for _, ptr := range []string{"/values/a~1b", "/values/my key (old)", "/nodePools/gpu/ünï/0", "/values/((secret:x))"} {
		m := Marker("dex", ptr)
		if got := MarkerPattern.FindAllString("x"+m+"y", -1); len(got) != 1 || got[0] != m {
			t.Errorf("MarkerPattern does not find %s: %v", m, got)
		}
	}
	if got := Marker("dex", "/values/my key (old)"); got != "((secret:dex/values/my%20key%20%28old%29))" {
		t.Errorf("Marker = %s", got)
	}
}

// A secret too short to search text for is warned about, and Redact leaves
// text alone rather than replace every occurrence of a common letter.
func TestShortSecretWarnedAndNotScrubbed(t *testing.T) {
	t.Setenv("KUBE_AWS_TEST_SECRET", "y")
	c, _ := Parse("cluster.yaml", []byte("kmsKeyArn: arn:aws:kms:us-east-1:123456789012:key/abc\nplugins: {dex: {values: {s: {valueFrom: {env: KUBE_AWS_TEST_SECRET}}}}}\n"))
	vals, _ := EffectiveValues(c, ".")
	r, diags := ResolveSecrets(c, vals, nil, ".")
	if len(diags) != 1 || diags[0].Severity != diag.Warning || diags[0].Path != "plugins.dex.values.s" || !strings.Contains(diags[0].Message, "1 character") {
		t.Fatalf("want one warning at plugins.dex.values.s, got:\n%s", diags.Error())
	}
	if got := Redact(`{"key":"yes"}`, r.Secrets); got != `{"key":"yes"}` {
		t.Errorf("Redact mangled text with a 1-character secret: %s", got)
	}
	if string(r.Values["dex"].Values) == `{"s":"y"}` {
		t.Errorf("the value itself must still become a marker: %s", r.Values["dex"].Values)
	}
}

// Pools holding the same values resolve alike: a document with no secret is
// resolved once and each pool gets bytes of its own to append to; one with
// a secret source is resolved for each pool, which reuses the cluster-level
// marker; a pool's override is its own.
func TestPoolsSharingValuesResolveAlike(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KUBE_AWS_TEST_SECRET", "env-"+sentinel)
	for _, tc := range []struct {
		name      string
		values    string
		wantRed   string // what pools a and c resolve to
		wantPlain string
	}{
		{"no secret", `{b: 1, a: {y: 2, x: 1}}`, `{"a":{"x":1,"y":2},"b":1}`, `{"a":{"x":1,"y":2},"b":1}`},
		{"a secret source", `{b: 1, s: {valueFrom: {env: KUBE_AWS_TEST_SECRET}}}`,
			`{"b":1,"s":"((secret:p/values/s))"}`, `{"b":1,"s":"env-` + sentinel + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `kmsKeyArn: arn:aws:kms:us-east-1:123456789012:key/abc
nodePools:
  - name: a
  - name: b
    plugins:
      p:
        values: {b: 2}
  - name: c
plugins:
  p:
    values: ` + tc.values + "\n"
			c, vals := effectiveValuesOf(t, dir, src)
			r, diags := ResolveSecrets(c, vals, nil, dir)
			if len(diags) != 0 {
				t.Fatal(diags.Error())
			}
			red, plain := r.Values["p"].NodePools, r.Plain["p"].NodePools
			for _, pool := range []string{"a", "c"} {
				if string(red[pool]) != tc.wantRed || string(plain[pool]) != tc.wantPlain {
					t.Errorf("pool %s: %s and %s, want %s and %s", pool, red[pool], plain[pool], tc.wantRed, tc.wantPlain)
				}
			}
			if jsonEqual(red["b"], red["a"]) {
				t.Errorf("pool b's override resolved to the shared values: %s", red["b"])
			}
			for _, m := range []map[string]json.RawMessage{red, plain} {
				ea, ec := append(m["a"], '!'), append(m["c"], '?')
				if ea[len(ea)-1] != '!' || ec[len(ec)-1] != '?' {
					t.Errorf("pools a and c append into the same bytes: %s and %s", ea, ec)
				}
			}
		})
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// stateLike is JSON like a state file: certificates and their keys' markers,
// many a "-----BEGIN" but no secret.
func stateLike(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"path":"/etc/kubernetes/pki/node-%d.crt","content":"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIRAK-%d\n-----END CERTIFICATE-----\n","key":"((secret:pki/node-%d))"},`, i, i, i)
	}
	return b.String()
}

// Redact finds a PEM key as it is and inside a JSON string wherever it is
// in text full of other PEM blocks, and leaves text holding only pieces of
// it alone.
func TestRedactFindsKeysAmongCertificates(t *testing.T) {
	key := pemtest.Key(1)
	secrets := Secrets{"((secret:pki/key))": key}
	// A short text is searched for each secret in turn, a long one for
	// all at once.
	for _, size := range []int{4 << 10, searchAtOnce} {
		t.Run(fmt.Sprint(size), func(t *testing.T) { redactKeyAmongCertificates(t, key, secrets, stateLike(size)) })
	}
}

func redactKeyAmongCertificates(t *testing.T, key string, secrets Secrets, filler string) {
	quoted, _ := json.Marshal(key)
	for _, tc := range []struct {
		name, text, want string
	}{
		{"no key", filler, filler},
		{"the key as it is, last", filler + key, filler + "((secret:pki/key))"},
		{"the key in JSON, first", `{"k":` + string(quoted) + `}` + filler, `{"k":"((secret:pki/key))"}` + filler},
		{"the key less its last byte", filler + key[:len(key)-1], filler + key[:len(key)-1]},
		{"the key with another last byte", filler + key[:len(key)-1] + "X" + filler, filler + key[:len(key)-1] + "X" + filler},
		{"the key with another first byte", filler + "X" + key[1:], filler + "X" + key[1:]},
		{"its middle alone", filler + key[40:len(key)-40] + filler, filler + key[40:len(key)-40] + filler},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Redact(tc.text, secrets); got != tc.want {
				t.Errorf("Redact changed %d bytes into %d; want %d", len(tc.text), len(got), len(tc.want))
			}
			if got, want := ContainsSecret(tc.text, key), strings.Contains(tc.text, key); got != want {
				t.Errorf("ContainsSecret = %v, strings.Contains = %v", got, want)
			}
		})
	}
}

// BenchmarkRedactState is a state file of 100 node pools (a MB) holding
// none of ten keys, each looked for as it is and inside a JSON string: what
// kube-aws does to every state it writes.
func BenchmarkRedactState(b *testing.B) {
	text := stateLike(1 << 20)
	secrets := Secrets{}
	for i := range 10 {
		secrets[fmt.Sprintf("((secret:pki/key%d))", i)] = pemtest.Key(uint64(i))
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if Redact(text, secrets) != text {
			b.Fatal("redacted a text holding no secret")
		}
	}
}
