package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
)

// SensitiveKeyword marks a property sensitive in a plugin's values schema:
// {"type": "string", "x-kube-aws-sensitive": true}.
const SensitiveKeyword = "x-kube-aws-sensitive"

// Secrets maps each redaction marker to the plain text it stands for. It
// lives in memory only: this package never writes it anywhere, and
// stage.Input.Secrets (deploy only) is never persisted.
type Secrets map[string]string

// Marker is the redaction marker of a sensitive value:
// ((secret:<plugin><json-pointer>)) where the pointer points into the
// plugin's stage.PluginValues: /values/clientSecret for the cluster-level
// value, /nodePools/<pool>/clientSecret for a node pool's own value. So
// ((secret:dex/values/clientSecret)). Bytes of the pointer outside
// [A-Za-z0-9._~/-] are percent-encoded (as in a URI fragment, RFC 6901
// section 6), so a key with spaces or parentheses still gives a marker that
// MarkerPattern finds.
func Marker(plugin, pointer string) string {
	return "((secret:" + plugin + percentEncode(pointer) + "))"
}

// GeneratedMarker is the marker of a secret a plugin generated and kube-aws
// keeps for it (credentials/<plugin>/<key> beside cluster.yaml):
// ((secret:<plugin>/generated/<key>)). No marker of a cluster.yaml value
// starts so: theirs point into /values or /nodePools.
func GeneratedMarker(plugin, key string) string {
	return Marker(plugin, "/generated/"+key)
}

// GeneratedKeyProblem says why key cannot name a generated secret ("" when
// it can): it is one file name, credentials/<plugin>/<key>.
func GeneratedKeyProblem(key string) string {
	if !generatedKeyRe.MatchString(key) {
		return fmt.Sprintf("secret key %q is not 1-128 letters, digits, '.', '_' and '-' starting with a letter or digit", key)
	}
	return ""
}

var generatedKeyRe = lazyRE(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// MarkerPattern matches any redaction marker.
var MarkerPattern = regexp.MustCompile(`\(\(secret:[A-Za-z0-9._~%/-]+\)\)`)

func percentEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._~/-", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// Resolved is the outcome of ResolveSecrets.
type Resolved struct {
	// Values are what plugins and state see: every sensitive value replaced
	// by its marker.
	Values map[string]stage.PluginValues
	// Plain are the same values in plain text. They exist only so that the
	// plugin schemas can check them (core/config/values); never persist or
	// log them.
	Plain map[string]stage.PluginValues
	// Secrets maps each marker in Values to its plain text.
	Secrets Secrets
}

// ResolveSecrets resolves the secret sources in the effective values
// ({valueFrom: {env: NAME}} from the environment, {valueFrom: {file: PATH}}
// from a file relative to baseDir, one trailing newline removed) and
// replaces every sensitive value by its marker. Sensitive is a value from a
// secret source, or a value at a property whose plugin schema (schemas, by
// plugin name; may be nil) says "x-kube-aws-sensitive": true. A missing
// variable or file is a fatal diagnostic with the config path; so are
// sensitive values without a kmsKeyArn to encrypt them with. Diagnostics
// never contain a resolved value.
func ResolveSecrets(c *Cluster, values map[string]stage.PluginValues, schemas map[string]json.RawMessage, baseDir string) (*Resolved, diag.List) {
	r := &Resolved{Values: map[string]stage.PluginValues{}, Plain: map[string]stage.PluginValues{}, Secrets: Secrets{}}
	var diags diag.List
	for _, plugin := range sortedKeys(values) {
		pv := values[plugin]
		sw := newSchemaWalker(schemas[plugin])
		res := &resolver{c: c, plugin: plugin, baseDir: baseDir, sw: sw, secrets: r.Secrets, clusterMarkers: map[string]string{}}
		var red, plain stage.PluginValues
		red.Values, plain.Values = res.tree(pv.Values, "", "/values")
		// Most pools hold the cluster-level values as they are. A document
		// that holds no secret and draws no diagnostic resolves the same in
		// every pool, so it is resolved once: at 100 pools this was 600
		// documents decoded, walked and encoded twice over.
		pure := map[string][2]json.RawMessage{}
		for _, pool := range sortedKeys(pv.NodePools) {
			res.pool = pool
			raw := pv.NodePools[pool]
			hit, ok := pure[string(raw)]
			if !ok {
				marks, nd := res.marks, len(res.diags)
				hit[0], hit[1] = res.tree(raw, pool, "/nodePools/"+escapePointer(pool))
				if res.marks == marks && len(res.diags) == nd {
					hit = [2]json.RawMessage{hit[0][:len(hit[0]):len(hit[0])], hit[1][:len(hit[1]):len(hit[1])]}
					pure[string(raw)] = hit
				}
			}
			rv, pl := hit[0], hit[1]
			if red.NodePools == nil {
				red.NodePools, plain.NodePools = map[string]json.RawMessage{}, map[string]json.RawMessage{}
			}
			red.NodePools[pool], plain.NodePools[pool] = rv, pl
		}
		diags = append(diags, dedupe(res.diags)...)
		r.Values[plugin], r.Plain[plugin] = red, plain
	}
	for _, marker := range sortedKeys(r.Secrets) {
		if n := len(r.Secrets[marker]); n < MinScrubLength {
			diags = append(diags, posDiag(c, diag.Warningf("sensitive value %s is only %d character(s) long: kube-aws keeps it out of every file as a marker, but cannot scrub it from plugin log lines without mangling them", marker, n).
				At(c.markerPath(marker)).WithHint(fmt.Sprintf("use a secret of at least %d characters", MinScrubLength))))
		}
	}
	if len(r.Secrets) > 0 && c.KMSKeyARN == "" {
		markers := sortedKeys(r.Secrets)
		diags = append(diags, posDiag(c, diag.Fatalf("cluster.yaml has %d sensitive value(s) (%s...) but no kmsKeyArn to encrypt them with", len(markers), markers[0]).
			At("kmsKeyArn").WithHint("set kmsKeyArn to a KMS key in the cluster's region: sensitive values are uploaded encrypted and decrypted on the node")))
	}
	return r, diags
}

// dedupe drops repeated diagnostics: every node pool inherits the
// cluster-level secret sources, and a missing variable is one problem.
func dedupe(diags diag.List) diag.List {
	seen := map[string]bool{}
	var out diag.List
	for _, d := range diags {
		key := d.Path + "\x00" + d.Message
		if !seen[key] {
			seen[key] = true
			out = append(out, d)
		}
	}
	return out
}

type resolver struct {
	c       *Cluster
	plugin  string
	pool    string
	baseDir string
	sw      *schemaWalker
	secrets Secrets
	diags   diag.List
	// clusterMarkers maps a pointer relative to the values to the marker of
	// the cluster-level sensitive value there, so that a pool inheriting the
	// same value reuses its marker.
	clusterMarkers map[string]string
	// marks counts the sensitive values marked so far.
	marks int
}

// tree resolves one values document; base is its pointer inside the
// plugin's stage.PluginValues.
func (r *resolver) tree(raw json.RawMessage, pool, base string) (redacted, plain json.RawMessage) {
	if len(raw) == 0 {
		return raw, raw
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw, raw
	}
	red, pl := r.walk(v, r.sw.root(), "", base)
	redB, err1 := json.Marshal(red)
	plB, err2 := json.Marshal(pl)
	if err1 != nil || err2 != nil {
		return raw, raw
	}
	return redB, plB
}

func (r *resolver) path(rel string) string {
	return r.c.ValuesPath(r.plugin, r.pool, rel)
}

func (r *resolver) fatal(rel, hint, format string, args ...any) {
	d := diag.Fatalf(format, args...).At(r.path(rel)).WithHint(hint)
	d.Plugin = r.plugin
	r.diags = append(r.diags, posDiag(r.c, d))
}

// walk returns the redacted and the plain form of v at pointer rel.
func (r *resolver) walk(v any, schemas []map[string]any, rel, base string) (any, any) {
	if src, ok := secretSource(v); ok {
		plain, ok := r.source(src, rel)
		if !ok {
			return v, v
		}
		return r.mark(plain, plain, rel, base), plain
	}
	sensitive := r.sw.sensitive(schemas)
	var red, plain any
	switch t := v.(type) {
	case map[string]any:
		rm, pm := make(map[string]any, len(t)), make(map[string]any, len(t))
		for k, child := range t {
			crel := rel + "/" + escapePointer(k)
			rm[k], pm[k] = r.walk(child, r.sw.property(schemas, k), crel, base)
		}
		red, plain = rm, pm
	case []any:
		rl, pl := make([]any, len(t)), make([]any, len(t))
		for i, child := range t {
			crel := rel + "/" + strconv.Itoa(i)
			rl[i], pl[i] = r.walk(child, r.sw.item(schemas, i), crel, base)
		}
		red, plain = rl, pl
	default:
		red, plain = v, v
	}
	if !sensitive || plain == nil {
		return red, plain
	}
	text, ok := plain.(string)
	if !ok {
		b, _ := json.Marshal(plain)
		text = string(b)
	}
	return r.mark(text, plain, rel, base), plain
}

// mark records a sensitive value and returns its marker.
func (r *resolver) mark(text string, plain any, rel, base string) string {
	r.marks++
	if r.pool == "" {
		m := Marker(r.plugin, base+rel)
		r.secrets[m] = text
		r.clusterMarkers[rel] = m
		return m
	}
	if m, ok := r.clusterMarkers[rel]; ok && r.secrets[m] == text {
		return m
	}
	m := Marker(r.plugin, base+rel)
	r.secrets[m] = text
	return m
}

// source resolves a valueFrom object.
func (r *resolver) source(src any, rel string) (string, bool) {
	m, ok := src.(map[string]any)
	hint := "write valueFrom: {env: NAME} to read an environment variable, or valueFrom: {file: PATH} to read a file relative to cluster.yaml"
	if !ok || len(m) != 1 {
		r.fatal(rel+"/valueFrom", hint, "valueFrom must have exactly one of env or file")
		return "", false
	}
	if name, ok := m["env"]; ok {
		s, isStr := name.(string)
		if !isStr || s == "" {
			r.fatal(rel+"/valueFrom/env", hint, "valueFrom.env must name an environment variable")
			return "", false
		}
		val, found := os.LookupEnv(s)
		if !found {
			r.fatal(rel+"/valueFrom/env", fmt.Sprintf("export %s before running kube-aws (in CI, from the pipeline's secret store), or change %s", s, r.path(rel)),
				"environment variable %s is not set", s)
			return "", false
		}
		return val, true
	}
	if file, ok := m["file"]; ok {
		s, isStr := file.(string)
		if !isStr || s == "" {
			r.fatal(rel+"/valueFrom/file", hint, "valueFrom.file must be a path")
			return "", false
		}
		full := s
		if !filepath.IsAbs(full) {
			full = filepath.Join(r.baseDir, s)
		}
		data, err := readLimited(full, maxSecretFileSize)
		if err != nil {
			r.fatal(rel+"/valueFrom/file", fmt.Sprintf("create %s (paths are relative to the folder of cluster.yaml), or change %s", full, r.path(rel)),
				"cannot read secret file %s: %v", s, unwrapPathError(err))
			return "", false
		}
		text := strings.TrimSuffix(string(data), "\n")
		text = strings.TrimSuffix(text, "\r")
		return text, true
	}
	r.fatal(rel+"/valueFrom", hint, "valueFrom must have env or file")
	return "", false
}

// Redact replaces every occurrence of a secret's plain text in s (as is, or
// as it appears inside a JSON string) by its marker. Use it on anything that
// may echo a value: log lines, stderr, error messages. Longer secrets are
// replaced first so that a secret containing another is not half-redacted.
func Redact(s string, secrets Secrets) string {
	if len(secrets) == 0 || s == "" {
		return s
	}
	pairs := scrubPairs(secrets)
	// Most text holds no secret: a state file of 100 node pools is a MB,
	// which looking for the secrets reads far faster than the replacer
	// rewrites, and s is then returned without a copy.
	if !holdsAny(s, pairs) {
		return s
	}
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.plain, p.marker)
	}
	return strings.NewReplacer(args...).Replace(s)
}

// searchAtOnce is the length of text from which holdsAny prepares a
// SecretSearch rather than looking for each secret in turn: a log line or
// a message is not worth the preparation.
const searchAtOnce = 16 << 10

// holdsAny reports whether s holds the plain text of any pair.
func holdsAny(s string, pairs []scrubPair) bool {
	if len(s) >= searchAtOnce {
		plains := make([]string, len(pairs))
		for i, p := range pairs {
			plains[i] = p.plain
		}
		return NewSecretSearch(plains).First(s) >= 0
	}
	for _, p := range pairs {
		if ContainsSecret(s, p.plain) {
			return true
		}
	}
	return false
}

// anchorLen is the length of the part of a long secret ContainsSecret looks
// for first: short enough for strings.Index's vector search (at most 63
// bytes on amd64), long enough that text rarely holds it by chance.
const anchorLen = 32

// ContainsSecret reports whether text holds plain, as strings.Contains
// does. A key in PEM starts with "-----BEGIN", which state files and
// rendered YAML and JSON are full of, and is too long for strings.Index's
// vector search: the text then went through its byte-at-a-time fallback
// once per secret. So a long secret is found by a piece from its middle
// (random key material), and each place that piece occurs is checked for
// the whole secret.
func ContainsSecret(text, plain string) bool {
	if len(plain) < 2*anchorLen {
		return strings.Contains(text, plain)
	}
	off := (len(plain) - anchorLen) / 2
	anchor := plain[off : off+anchorLen]
	for i := off; i+len(plain)-off <= len(text); {
		j := strings.Index(text[i:len(text)-(len(plain)-off-anchorLen)], anchor)
		if j < 0 {
			return false
		}
		start := i + j - off
		if text[start:start+len(plain)] == plain {
			return true
		}
		i += j + 1
	}
	return false
}

// MinScrubLength is the shortest secret Redact searches text for. Values
// are redacted structurally (they become markers before any plugin, file or
// state sees them); Redact is the second line of defence over free text, and
// scrubbing every "y" out of a log line or a JSON document would corrupt it.
const MinScrubLength = 6

// scrubPair is a text Redact replaces and the marker it puts in its place.
type scrubPair struct{ plain, marker string }

// scrubPairs are the texts Redact replaces: each secret of MinScrubLength or
// more as it is and as it is inside a JSON string, longest first.
func scrubPairs(secrets Secrets) []scrubPair {
	var pairs []scrubPair
	for marker, plain := range secrets {
		if len(plain) < MinScrubLength {
			continue
		}
		pairs = append(pairs, scrubPair{plain, marker})
		for _, esc := range jsonForms(plain) {
			if esc != plain {
				pairs = append(pairs, scrubPair{esc, marker})
			}
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		if len(pairs[i].plain) != len(pairs[j].plain) {
			return len(pairs[i].plain) > len(pairs[j].plain)
		}
		return pairs[i].marker < pairs[j].marker
	})
	return pairs
}

// jsonForms are the texts plain is written as inside a JSON string by
// encoding/json: with <, > and & escaped (json.Marshal), and without
// (an Encoder with SetEscapeHTML(false), as the built-ins write
// CloudFormation bodies and the state copies them). The two are the same
// unless plain holds one of those characters.
func jsonForms(plain string) []string {
	b, _ := json.Marshal(plain)
	html := string(b[1 : len(b)-1])
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(plain)
	noHTML := strings.TrimSuffix(buf.String(), "\n")
	noHTML = noHTML[1 : len(noHTML)-1]
	if noHTML == html {
		return []string{html}
	}
	return []string{html, noHTML}
}

// RedactJSON redacts every secret in a JSON document (the cluster as
// plugins receive it in stage.Input.Config, marshalled once when loaded).
// Without secrets it returns the document itself.
func RedactJSON(b json.RawMessage, secrets Secrets) json.RawMessage {
	if len(secrets) == 0 {
		return b
	}
	return json.RawMessage(Redact(string(b), secrets))
}

// schemaWalker finds the subschemas that apply to a value's children, enough
// to see x-kube-aws-sensitive: properties, patternProperties,
// additionalProperties, items, prefixItems, local $ref and
// allOf/anyOf/oneOf. It is not a validator (core/config/values is); keeping it
// small keeps a JSON Schema library out of plugin binaries.
type schemaWalker struct {
	doc map[string]any
}

func newSchemaWalker(raw json.RawMessage) *schemaWalker {
	w := &schemaWalker{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &w.doc)
	}
	return w
}

func (w *schemaWalker) root() []map[string]any {
	if w.doc == nil {
		return nil
	}
	return w.expand([]map[string]any{w.doc})
}

// expand follows $ref and the combinators, returning every schema that
// applies to the same instance.
func (w *schemaWalker) expand(in []map[string]any) []map[string]any {
	var out []map[string]any
	var visit func(s map[string]any, depth int)
	visit = func(s map[string]any, depth int) {
		if s == nil || depth > 32 {
			return
		}
		out = append(out, s)
		if ref, ok := s["$ref"].(string); ok {
			visit(w.ref(ref), depth+1)
		}
		for _, key := range []string{"allOf", "anyOf", "oneOf"} {
			if list, ok := s[key].([]any); ok {
				for _, sub := range list {
					if m, ok := sub.(map[string]any); ok {
						visit(m, depth+1)
					}
				}
			}
		}
	}
	for _, s := range in {
		visit(s, 0)
	}
	return out
}

// ref resolves a local reference (#/$defs/x or #/definitions/x).
func (w *schemaWalker) ref(ref string) map[string]any {
	if !strings.HasPrefix(ref, "#") {
		return nil
	}
	var cur any = w.doc
	for _, seg := range pointerSegments(strings.TrimPrefix(ref, "#")) {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[seg]
	}
	m, _ := cur.(map[string]any)
	return m
}

func (w *schemaWalker) sensitive(schemas []map[string]any) bool {
	for _, s := range schemas {
		if b, ok := s[SensitiveKeyword].(bool); ok && b {
			return true
		}
	}
	return false
}

func (w *schemaWalker) property(schemas []map[string]any, key string) []map[string]any {
	var out []map[string]any
	for _, s := range schemas {
		matched := false
		if props, ok := s["properties"].(map[string]any); ok {
			if sub, ok := props[key].(map[string]any); ok {
				out = append(out, sub)
				matched = true
			}
		}
		if pats, ok := s["patternProperties"].(map[string]any); ok {
			for pat, sub := range pats {
				if re, err := regexp.Compile(pat); err == nil && re.MatchString(key) {
					if m, ok := sub.(map[string]any); ok {
						out = append(out, m)
						matched = true
					}
				}
			}
		}
		if !matched {
			if sub, ok := s["additionalProperties"].(map[string]any); ok {
				out = append(out, sub)
			}
		}
	}
	return w.expand(out)
}

func (w *schemaWalker) item(schemas []map[string]any, i int) []map[string]any {
	var out []map[string]any
	for _, s := range schemas {
		if prefix, ok := s["prefixItems"].([]any); ok && i < len(prefix) {
			if m, ok := prefix[i].(map[string]any); ok {
				out = append(out, m)
			}
			continue
		}
		switch items := s["items"].(type) {
		case map[string]any:
			out = append(out, items)
		case []any: // draft-07 tuple form
			if i < len(items) {
				if m, ok := items[i].(map[string]any); ok {
					out = append(out, m)
				}
			}
		}
	}
	return w.expand(out)
}

// markerPath is the config path of the value behind a marker, for messages.
func (c *Cluster) markerPath(marker string) string {
	ref := strings.TrimSuffix(strings.TrimPrefix(marker, "((secret:"), "))")
	plugin, rest, _ := strings.Cut(ref, "/")
	pool := ""
	if p, ok := strings.CutPrefix(rest, "nodePools/"); ok {
		pool, rest, _ = strings.Cut(p, "/")
		if u, err := url.PathUnescape(pool); err == nil {
			pool = u
		}
		rest = "values/" + rest
	}
	pointer := strings.TrimPrefix(rest, "values")
	if u, err := url.PathUnescape(pointer); err == nil {
		pointer = u
	}
	return c.ValuesPath(plugin, pool, pointer)
}
