package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	yaml "sigs.k8s.io/yaml/goyaml.v3"

	"github.com/kube-aws/kube-aws/core/diag"
)

// Pos is a 1-based line and column in a YAML file.
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// source remembers the file a Cluster came from and where each config path
// sits in it, so that validation (here and in core/config/values) can point
// at the offending line long after parsing.
type source struct {
	file string
	// value is the position of the value at a config path.
	value map[string]Pos
	// bad holds the paths that already have a parse diagnostic (unknown
	// key, wrong type), so that validation does not pile a second,
	// misleading one ("x is required") on the same spot.
	bad map[string]bool
	// broken is set when the file is not one YAML document; there is then
	// nothing to validate.
	broken bool
}

// reported reports whether path or one of its ancestors has a parse
// diagnostic already.
func (s *source) reported(path string) bool {
	if s == nil || len(s.bad) == 0 {
		return false
	}
	for p := path; ; p = parentPath(p) {
		if s.bad[p] {
			return true
		}
		if p == "" {
			return false
		}
	}
}

func (s *source) has(path string) bool {
	if s == nil {
		return false
	}
	_, ok := s.value[path]
	return ok
}

// SourceFile is the file the cluster was parsed from ("" when built in Go).
func (c *Cluster) SourceFile() string {
	if c == nil || c.src == nil {
		return ""
	}
	return c.src.file
}

// Position returns the file, line and column of the value at a config path
// such as nodePools[1].minSize or plugins.dex.values.issuer. When the path
// itself is not in the file (a defaulted value, say) it returns the position
// of its closest ancestor that is, so a diagnostic still points somewhere
// useful. ok is false when nothing is known.
func (c *Cluster) Position(path string) (file string, line, col int, ok bool) {
	if c == nil || c.src == nil {
		return "", 0, 0, false
	}
	for p := path; ; p = parentPath(p) {
		if pos, found := c.src.value[p]; found {
			return c.src.file, pos.Line, pos.Column, true
		}
		if p == "" {
			return c.src.file, 0, 0, c.src.file != ""
		}
	}
}

// isSet reports whether path was written in cluster.yaml. For a Cluster
// built in Go (no source) it falls back to "the value is not zero", which is
// the best a Go caller can express.
func (c *Cluster) isSet(path string, zero bool) bool {
	if c.src != nil {
		return c.src.has(path)
	}
	return !zero
}

// parentPath strips the last element of a config path:
// nodePools[1].minSize -> nodePools[1] -> nodePools -> "".
func parentPath(p string) string {
	if p == "" {
		return ""
	}
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	// A quoted key may contain dots: labels["a.b/c"].
	if p[len(p)-1] == ']' {
		if j := strings.LastIndex(p, "[\""); j >= 0 && strings.HasSuffix(p, "\"]") {
			return p[:j]
		}
	}
	return p[:i]
}

// plainKey reports whether key is [A-Za-z0-9_-]+ (hand-written: this runs
// for every key of every file).
func plainKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// JoinPath appends a map key or struct field to a config path. Keys that
// are not plain identifiers are quoted: labels["node.kubernetes.io/role"].
func JoinPath(parent, key string) string {
	if !plainKey(key) {
		return parent + "[" + strconv.Quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// IndexPath appends a list index to a config path: nodePools[1].
func IndexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// Load reads and parses cluster.yaml. The error is for a file that cannot be
// read; everything wrong inside the file is a diagnostic. The Cluster is
// returned even with diagnostics (unknown keys and mistyped values left out)
// so that ApplyDefaults and Validate can report every other problem at once.
// A file over MaxConfigFileSize is one diagnostic, given before reading it.
func Load(path string) (*Cluster, diag.List, error) {
	data, err := readLimited(path, MaxConfigFileSize)
	if isTooLarge(err) {
		c := &Cluster{src: &source{file: path, broken: true}}
		return c, diag.List{diag.Fatalf("%s is not read: %v", filepath.Base(path), err).InFile(path, 0, 0).
			WithHint("a cluster configuration is a few KiB: check that --config names it, and keep large plugin values in plugin config files (configFiles), each under the same limit")}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading cluster configuration: %w (run `kube-aws init` to write one, or pass --config)", err)
	}
	c, diags := Parse(path, data)
	return c, diags, nil
}

// maxNodes bounds the work of one parse: aliases can make a small file
// describe an exponentially large tree (the "billion laughs"). A file of
// MaxConfigFileSize without aliases holds at most half as many nodes as it
// has bytes (a flow list of one-character items), so this is twice what any
// file under the limit can write out, and it bounds the memory of an
// expanded file by the same figure as a written-out one (2^18 took 106 MB).
const maxNodes = 2 * (MaxConfigFileSize / 2)

// Parse parses cluster.yaml bytes strictly: unknown keys, duplicate keys and
// values of the wrong type are fatal diagnostics with file:line:column, the
// config path and, for unknown keys, the closest valid key. file is only used
// in diagnostics. The returned Cluster is never nil.
func Parse(file string, data []byte) (*Cluster, diag.List) {
	c := &Cluster{}
	p := &parser{file: file, src: &source{file: file, value: make(map[string]Pos, len(data)/16)}}
	c.src = p.src

	root, d := parseDocument(file, data)
	if d != nil {
		p.src.broken = true
		return c, diag.List{*d}
	}
	p.src.value[""] = Pos{root.Line, root.Column}
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		// An empty (or comments-only) file: every required field is missing,
		// which Validate reports one by one.
		return c, nil
	}
	var buf bytes.Buffer
	buf.Grow(len(data) + len(data)/2)
	if !p.typed(&buf, root, reflect.TypeOf(Cluster{}), "") {
		return c, p.diags
	}
	// The walk has already refused unknown keys, with positions, so plain
	// json.Unmarshal (cheaper than a strict Decoder) is enough here.
	if err := json.Unmarshal(buf.Bytes(), c); err != nil {
		// The walk above checks every key and type, so this is a bug in it;
		// still report it as a diagnostic rather than panic.
		p.diags = append(p.diags, diag.Fatalf("cannot decode cluster configuration: %v", err).
			InFile(file, 0, 0).WithHint("this is a kube-aws bug; please report it with the file"))
	}
	c.src = p.src
	return c, p.diags
}

var yamlLine = lazyRE(`line (\d+)`)

// parseDocument parses exactly one YAML document into a node tree.
func parseDocument(file string, data []byte) (*yaml.Node, *diag.Diagnostic) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: 1, Column: 1}, nil
	}
	if err != nil {
		return nil, yamlErrorDiag(file, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlErrorDiag(file, data, err)
		}
		d := diag.Fatalf("%s holds more than one YAML document", filepath.Base(file)).
			InFile(file, extra.Line, extra.Column).
			WithHint("keep one document: remove the `---` separator and what follows it, or merge the documents")
		return nil, &d
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: 1, Column: 1}, nil
	}
	return doc.Content[0], nil
}

func yamlErrorDiag(file string, data []byte, err error) *diag.Diagnostic {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = strings.TrimSpace(strings.Replace(msg, m[0]+":", "", 1))
	} else if l, col, what, ok := firstUnreadable(data); ok {
		// The YAML reader refuses bytes that are not text (binary data,
		// another encoding) without saying where; point at the first one.
		d := diag.Fatalf("invalid YAML: %s: %s", msg, what).InFile(file, l, col).
			WithHint(fmt.Sprintf("%s must be UTF-8 text: it holds binary data or another encoding from line %d on; remove it, or save the file as UTF-8", filepath.Base(file), l))
		return &d
	}
	d := diag.Fatalf("invalid YAML: %s", msg).InFile(file, line, 0).
		WithHint("fix the YAML syntax; indentation must use spaces, and a value holding ': ' or starting with a special character needs quotes")
	return &d
}

// firstUnreadable finds the first character of UTF-8 data that YAML does not
// accept (invalid UTF-8, or outside YAML 1.2's printable set: c-printable),
// and returns its 1-based line and column (in characters) and a description.
// UTF-16 input (a byte order mark) is the YAML library's to decode: ok false.
func firstUnreadable(data []byte) (line, col int, what string, ok bool) {
	if bytes.HasPrefix(data, []byte{0xFE, 0xFF}) || bytes.HasPrefix(data, []byte{0xFF, 0xFE}) {
		return 0, 0, "", false
	}
	line, col = 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return line, col, fmt.Sprintf("byte 0x%02X is not UTF-8", data[i]), true
		case !yamlPrintable(r) && !(r == 0xFEFF && i == 0):
			return line, col, fmt.Sprintf("character %U is not allowed", r), true
		case r == '\n':
			line, col = line+1, 1
		default:
			col++
		}
		i += size
	}
	return 0, 0, "", false
}

// yamlPrintable is YAML 1.2's c-printable set.
func yamlPrintable(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || (r >= 0x20 && r <= 0x7E) || r == 0x85 ||
		(r >= 0xA0 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}

// parser walks the YAML node tree alongside the Go types, checking keys and
// types, recording positions and writing the JSON that encoding/json then
// decodes. Walking the tree ourselves (instead of letting the YAML library
// convert to JSON) is what gives every diagnostic its line and column, and it
// keeps one YAML 1.2 reading of scalars: `no` stays a string, `1.10` is a
// number that a string field refuses instead of silently becoming "1.1".
type parser struct {
	file  string
	src   *source
	diags diag.List
	nodes int
}

func (p *parser) fatal(n *yaml.Node, path, hint, format string, args ...any) {
	if p.src.bad == nil {
		p.src.bad = map[string]bool{}
	}
	p.src.bad[path] = true
	d := diag.Fatalf(format, args...).At(path).WithHint(hint)
	if n != nil {
		d = d.InFile(p.file, n.Line, n.Column)
	} else {
		d = d.InFile(p.file, 0, 0)
	}
	p.diags = append(p.diags, d)
}

// budget counts visited nodes and reports false (once) when the document is
// too large to be a cluster configuration.
func (p *parser) budget(n *yaml.Node) bool {
	p.nodes++
	if p.nodes == maxNodes+1 {
		p.fatal(n, "", "remove deeply nested aliases (*name) or split the values into plugin config files",
			"the document expands to more than %d YAML nodes", maxNodes)
	}
	return p.nodes <= maxNodes
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

type pair struct{ key, value *yaml.Node }

// pairs flattens a mapping node: YAML merge keys (<<: *base) contribute
// their entries first, explicit keys override them. dup is set for keys that
// appear twice explicitly (an error), merged keys never count as duplicates.
func (p *parser) pairs(n *yaml.Node, path string) []pair {
	var merged, explicit []pair
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k == nil || v == nil {
			continue
		}
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			switch v.Kind {
			case yaml.MappingNode:
				merged = append(merged, p.pairs(v, path)...)
			case yaml.SequenceNode:
				for _, m := range v.Content {
					if m = resolve(m); m != nil && m.Kind == yaml.MappingNode {
						merged = append(merged, p.pairs(m, path)...)
					}
				}
			default:
				p.fatal(v, path, "`<<:` takes an alias of a mapping, like `<<: *defaults`", "merge key value is not a mapping")
			}
			continue
		}
		if k.Kind != yaml.ScalarNode {
			p.fatal(k, path, "use plain strings as keys", "a mapping key must be a scalar, not a %s", kindName(k))
			continue
		}
		if seen[k.Value] {
			p.fatal(k, JoinPath(path, k.Value), "remove one of the two entries", "key %q appears more than once", k.Value)
			continue
		}
		seen[k.Value] = true
		explicit = append(explicit, pair{k, v})
	}
	if len(merged) == 0 {
		return explicit
	}
	out := make([]pair, 0, len(merged)+len(explicit))
	idx := map[string]int{}
	for _, pr := range append(merged, explicit...) {
		if i, ok := idx[pr.key.Value]; ok {
			out[i] = pr
			continue
		}
		idx[pr.key.Value] = len(out)
		out = append(out, pr)
	}
	return out
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int":
			return "integer"
		case "!!float":
			return "number"
		case "!!bool":
			return "boolean"
		case "!!null":
			return "null"
		}
		return "string"
	}
	return "value"
}

var rawMessageType = reflect.TypeOf(json.RawMessage{})

// structInfo caches a struct's JSON field names.
type structInfo struct {
	fields map[string]reflect.Type
	names  []string
}

var structCache sync.Map

func fieldsOf(t reflect.Type) *structInfo {
	if v, ok := structCache.Load(t); ok {
		return v.(*structInfo)
	}
	si := &structInfo{fields: map[string]reflect.Type{}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		si.fields[name] = f.Type
		si.names = append(si.names, name)
	}
	structCache.Store(t, si)
	return si
}

// typed writes n as JSON for Go type t, recording positions. It returns false
// (writing nothing) when n cannot be a t; the caller then leaves the key out
// so that decoding still succeeds and validation can go on.
func (p *parser) typed(buf *bytes.Buffer, n *yaml.Node, t reflect.Type, path string) bool {
	n = resolve(n)
	if n == nil || !p.budget(n) {
		return false
	}
	p.src.value[path] = Pos{n.Line, n.Column}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		buf.WriteString("null")
		return true
	}
	if t == rawMessageType {
		return p.generic(buf, n, path)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return p.typed(buf, n, t.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			hint := "write it as `key: value` lines indented under " + lastElem(path)
			if path == "" {
				hint = "cluster.yaml is a mapping of keys such as `clusterName: my-cluster`; `kube-aws init` writes a commented one"
			}
			p.fatal(n, path, hint, "%s must be a mapping, not a %s", displayPath(path), kindName(n))
			return false
		}
		si := fieldsOf(t)
		buf.WriteByte('{')
		first := true
		pairs := p.pairs(n, path)
		var suggested []string
		for _, pr := range pairs {
			key := pr.key.Value
			ft, ok := si.fields[key]
			fpath := JoinPath(path, key)
			if !ok {
				if s := p.unknownKey(pr.key, path, key, si.names); s != "" {
					suggested = append(suggested, s)
				}
				continue
			}
			mark := buf.Len()
			if !first {
				buf.WriteByte(',')
			}
			writeJSONString(buf, key)
			buf.WriteByte(':')
			if !p.typed(buf, pr.value, ft, fpath) {
				buf.Truncate(mark)
				continue
			}
			first = false
		}
		// A misspelt key that is really the missing one ("regoin") has said
		// all there is to say; "region is required" on top would be noise.
		for _, s := range suggested {
			if !hasKey(pairs, s) {
				p.src.bad[JoinPath(path, s)] = true
			}
		}
		buf.WriteByte('}')
		return true
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			p.fatal(n, path, "write it as `key: value` lines indented under "+lastElem(path), "%s must be a mapping, not a %s", displayPath(path), kindName(n))
			return false
		}
		buf.WriteByte('{')
		first := true
		for _, pr := range p.pairs(n, path) {
			key := pr.key.Value
			fpath := JoinPath(path, key)
			mark := buf.Len()
			if !first {
				buf.WriteByte(',')
			}
			writeJSONString(buf, key)
			buf.WriteByte(':')
			if !p.typed(buf, pr.value, t.Elem(), fpath) {
				buf.Truncate(mark)
				continue
			}
			first = false
		}
		buf.WriteByte('}')
		return true
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			p.fatal(n, path, "write it as a list: one `- item` per line, or [a, b]", "%s must be a list, not a %s", displayPath(path), kindName(n))
			return false
		}
		buf.WriteByte('[')
		first := true
		for i, item := range n.Content {
			mark := buf.Len()
			if !first {
				buf.WriteByte(',')
			}
			if !p.typed(buf, item, t.Elem(), IndexPath(path, i)) {
				// Keep list positions stable: indexes in later diagnostics
				// must match the file.
				buf.Truncate(mark)
				if !first {
					buf.WriteByte(',')
				}
				buf.WriteString(zeroJSON(t.Elem()))
			}
			first = false
		}
		buf.WriteByte(']')
		return true
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			p.fatal(n, path, "give a single string value", "%s must be a string, not a %s", displayPath(path), kindName(n))
			return false
		}
		switch n.ShortTag() {
		case "!!int", "!!float", "!!bool":
			// YAML would read these as a number or boolean; converting back
			// can change them (1.10 -> "1.1"), so ask for quotes instead.
			p.fatal(n, path, quoteHint(path, n.Value),
				"%s must be a string, but %s is read as a %s", displayPath(path), n.Value, kindName(n))
			return false
		}
		writeJSONString(buf, n.Value)
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v, ok := intValue(n)
		if !ok || !fitsInt(v, t) {
			p.fatal(n, path, fmt.Sprintf("write a whole number, like %s: 3", lastElem(path)),
				"%s must be an integer, not %s", displayPath(path), describe(n))
			return false
		}
		buf.WriteString(strconv.FormatInt(v, 10))
		return true
	case reflect.Bool:
		v, ok := boolValue(n)
		if !ok {
			p.fatal(n, path, fmt.Sprintf("write %s: true or %s: false (yes/no/on/off are strings in YAML 1.2)", lastElem(path), lastElem(path)),
				"%s must be true or false, not %s", displayPath(path), describe(n))
			return false
		}
		buf.WriteString(strconv.FormatBool(v))
		return true
	}
	p.fatal(n, path, "this is a kube-aws bug; please report it", "no decoder for %s (Go type %s)", displayPath(path), t)
	return false
}

// intValue reads an !!int scalar. strconv covers YAML 1.2's forms (signs,
// 0x, 0o, 0b) without the cost of a yaml decoder per value; anything else
// falls back to the YAML library.
func intValue(n *yaml.Node) (int64, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, false
	}
	if v, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
		return v, true
	}
	var v int64
	return v, n.Decode(&v) == nil
}

// boolValue reads a !!bool scalar (true/True/TRUE/false/False/FALSE).
func boolValue(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return false, false
	}
	if v, err := strconv.ParseBool(n.Value); err == nil {
		return v, true
	}
	var v bool
	return v, n.Decode(&v) == nil
}

func fitsInt(v int64, t reflect.Type) bool {
	bits := t.Bits()
	if bits == 64 {
		return true
	}
	return v >= -(1<<(bits-1)) && v < 1<<(bits-1)
}

func zeroJSON(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct:
		return "{}"
	case reflect.String:
		return `""`
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "0"
	case reflect.Bool:
		return "false"
	}
	return "null"
}

// describe renders a node for "must be X, not Y" messages.
func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return fmt.Sprintf("the %s %q", kindName(n), v)
	}
	return "a " + kindName(n)
}

func lastElem(path string) string {
	if path == "" {
		return "the top level"
	}
	p := parentPath(path)
	s := strings.TrimPrefix(path[len(p):], ".")
	if strings.HasPrefix(s, "[\"") {
		if u, err := strconv.Unquote(s[1 : len(s)-1]); err == nil {
			return u
		}
	}
	return s
}

func displayPath(path string) string {
	if path == "" {
		return "the configuration"
	}
	return path
}

// generic writes any YAML as JSON: plugin values are free-form until their
// plugin's schema checks them (core/config/values).
func (p *parser) generic(buf *bytes.Buffer, n *yaml.Node, path string) bool {
	n = resolve(n)
	if n == nil || !p.budget(n) {
		return false
	}
	p.src.value[path] = Pos{n.Line, n.Column}
	switch n.Kind {
	case yaml.MappingNode:
		buf.WriteByte('{')
		first := true
		for _, pr := range p.pairs(n, path) {
			fpath := JoinPath(path, pr.key.Value)
			mark := buf.Len()
			if !first {
				buf.WriteByte(',')
			}
			writeJSONString(buf, pr.key.Value)
			buf.WriteByte(':')
			if !p.generic(buf, pr.value, fpath) {
				buf.Truncate(mark)
				continue
			}
			first = false
		}
		buf.WriteByte('}')
		return true
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if !p.generic(buf, item, IndexPath(path, i)) {
				buf.WriteString("null")
			}
		}
		buf.WriteByte(']')
		return true
	case yaml.ScalarNode:
		return p.scalarJSON(buf, n, path)
	}
	return false
}

// scalarJSON converts a YAML 1.2 scalar to JSON. Strings, timestamps and
// custom tags keep their text.
func (p *parser) scalarJSON(buf *bytes.Buffer, n *yaml.Node, path string) bool {
	switch n.ShortTag() {
	case "!!null":
		buf.WriteString("null")
		return true
	case "!!bool":
		if b, ok := boolValue(n); ok {
			buf.WriteString(strconv.FormatBool(b))
			return true
		}
	case "!!int":
		// strconv first: a yaml.v3 Decode per scalar allocates a decoder,
		// which for a long list of numbers is most of the memory a parse
		// takes. Decode is left for what int64 cannot hold.
		if v, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
			buf.WriteString(strconv.FormatInt(v, 10))
			return true
		}
		var v any
		if n.Decode(&v) == nil {
			if out, err := json.Marshal(v); err == nil {
				buf.Write(out)
				return true
			}
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
			return true
		}
		p.fatal(n, path, "JSON has no infinity or NaN; quote the value if it is meant as text",
			"%s: %s is not a number JSON can hold", displayPath(path), n.Value)
		return false
	default:
		writeJSONString(buf, n.Value)
		return true
	}
	p.fatal(n, path, "quote the value if it is meant as text", "%s: cannot read %q as a %s", displayPath(path), n.Value, kindName(n))
	return false
}

func writeJSONString(buf *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			buf.Write(b)
			return
		}
	}
	buf.WriteByte('"')
	buf.WriteString(s)
	buf.WriteByte('"')
}

func hasKey(pairs []pair, key string) bool {
	for _, pr := range pairs {
		if pr.key.Value == key {
			return true
		}
	}
	return false
}

// unknownKey reports a key the type does not have and returns the valid key
// it suggests, if any.
func (p *parser) unknownKey(k *yaml.Node, path, key string, valid []string) string {
	msg := fmt.Sprintf("unknown key %q", key)
	if path != "" {
		msg += " in " + path
	}
	hint := ""
	if s := closest(key, valid); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
		hint = fmt.Sprintf("rename it to %s", s)
	} else {
		sorted := append([]string(nil), valid...)
		sort.Strings(sorted)
		hint = "valid keys here: " + strings.Join(sorted, ", ")
	}
	p.fatal(k, JoinPath(path, key), hint, "%s", msg)
	return closest(key, valid)
}

// yamlToJSON converts a standalone YAML document (a plugin config file) to
// JSON with the same scalar rules as cluster.yaml, reporting problems with
// the file's own line and column.
func yamlToJSON(file string, data []byte) (json.RawMessage, diag.List) {
	root, d := parseDocument(file, data)
	if d != nil {
		return nil, diag.List{*d}
	}
	p := &parser{file: file, src: &source{file: file, value: make(map[string]Pos, len(data)/16)}}
	var buf bytes.Buffer
	if !p.generic(&buf, root, "") || p.diags.HasFatal() {
		return nil, p.diags
	}
	return buf.Bytes(), p.diags
}
