// The strict decoder: a YAML document read strictly into Go types, the
// way cluster.yaml is read: unknown keys (with the closest valid key),
// duplicate keys and values of the wrong type are fatal diagnostics with
// file:line:column and the config path (nodePools[1].minSize), and the
// position of every config path's value is kept (Positions) so that later
// checks can point at the line too. One YAML 1.2 reading of scalars holds
// throughout: `no` stays a string, and `1.10` is a number that a string
// field refuses instead of silently becoming "1.1".
//
// It walks the YAML node tree alongside the Go types and writes JSON that
// encoding/json then decodes (decodeStrict), or converts free-form YAML to
// JSON with the same rules (strictToJSON). It uses the standard library,
// goyaml.v3 and core/diag only: every plugin binary links core/config.

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
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	yaml "sigs.k8s.io/yaml/goyaml.v3"

	"github.com/kube-aws/kube-aws/core/diag"
)

// position is a 1-based line and column in a YAML file.
type position struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// positions is what a decode learnt about the file besides its values.
type positions struct {
	// Value is the position of the value at each config path; "" is the
	// document itself.
	Value map[string]position
	// Bad holds the paths that already have a diagnostic (unknown key,
	// wrong type), so that a later check does not pile a second,
	// misleading one ("x is required") on the same spot; nil when none.
	Bad map[string]bool
	// Broken is set when the file is not one YAML document: nothing was
	// decoded.
	Broken bool
}

// decodeOpts tune a decode.
type decodeOpts struct {
	// MaxNodes bounds the YAML nodes a document may expand to: aliases can
	// make a small file describe an exponentially large tree (the "billion
	// laughs"). 0 is no bound.
	MaxNodes int
	// TopLevelHint is the hint when the document is not a mapping but
	// decodeStrict's v is a struct (default: a generic one).
	TopLevelHint string
	// QuoteHint, when set, is the hint for a string field whose value YAML
	// reads as a number or a boolean (default: quote it).
	QuoteHint func(path, value string) string
}

// decodeStrict parses exactly one YAML document of data strictly into v, a
// pointer to a struct: see the package comment. file is only used in
// diagnostics. An empty (or comments-only) document leaves v as it is.
// Keys and values that are wrong are left out of v, so that the caller can
// go on checking the rest and report every problem at once.
func decodeStrict(file string, data []byte, v any, opts decodeOpts) (*positions, diag.List) {
	p := &parser{file: file, opts: opts, pos: &positions{Value: make(map[string]position, len(data)/16)}}
	root, d := parseDocument(file, data)
	if d != nil {
		p.pos.Broken = true
		return p.pos, diag.List{*d}
	}
	p.pos.Value[""] = position{root.Line, root.Column}
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return p.pos, nil
	}
	var buf bytes.Buffer
	buf.Grow(len(data) + len(data)/2)
	if !p.typed(&buf, root, reflect.TypeOf(v).Elem(), "") {
		return p.pos, p.diags
	}
	// The walk has already refused unknown keys, with positions, so plain
	// json.Unmarshal (cheaper than a strict Decoder) is enough here.
	if err := json.Unmarshal(buf.Bytes(), v); err != nil {
		// The walk above checks every key and type, so this is a bug in it;
		// still report it as a diagnostic rather than panic.
		p.diags = append(p.diags, diag.Fatalf("cannot decode %s: %v", filepath.Base(file), err).
			InFile(file, 0, 0).WithHint("this is a kube-aws bug; please report it with the file"))
	}
	return p.pos, p.diags
}

// strictToJSON converts a standalone YAML document (a plugin config file, say) to
// JSON with the same scalar rules as decodeStrict, reporting problems with the
// file's own line and column.
func strictToJSON(file string, data []byte, opts decodeOpts) (json.RawMessage, diag.List) {
	root, d := parseDocument(file, data)
	if d != nil {
		return nil, diag.List{*d}
	}
	p := &parser{file: file, opts: opts, pos: &positions{Value: make(map[string]position, len(data)/16)}}
	var buf bytes.Buffer
	if !p.generic(&buf, root, "") || p.diags.HasFatal() {
		return nil, p.diags
	}
	return buf.Bytes(), p.diags
}

// yamlLine is compiled on first use: this package is linked into every
// plugin binary (through core/config and the SDK), and only the host parses.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })

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
	if m := yamlLine().FindStringSubmatch(msg); m != nil {
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
	opts  decodeOpts
	pos   *positions
	diags diag.List
	nodes int
}

func (p *parser) fatal(n *yaml.Node, path, hint, format string, args ...any) {
	if p.pos.Bad == nil {
		p.pos.Bad = map[string]bool{}
	}
	p.pos.Bad[path] = true
	d := diag.Fatalf(format, args...).At(path).WithHint(hint)
	if n != nil {
		d = d.InFile(p.file, n.Line, n.Column)
	} else {
		d = d.InFile(p.file, 0, 0)
	}
	p.diags = append(p.diags, d)
}

// budget counts visited nodes and reports false (once) when the document
// expands to more than decodeOpts.MaxNodes.
func (p *parser) budget(n *yaml.Node) bool {
	p.nodes++
	if p.opts.MaxNodes <= 0 {
		return true
	}
	if p.nodes == p.opts.MaxNodes+1 {
		p.fatal(n, "", "remove deeply nested aliases (*name) or split the values into plugin config files",
			"the document expands to more than %d YAML nodes", p.opts.MaxNodes)
	}
	return p.nodes <= p.opts.MaxNodes
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
	p.pos.Value[path] = position{n.Line, n.Column}
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
			if path == "" && p.opts.TopLevelHint != "" {
				hint = p.opts.TopLevelHint
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
				p.pos.Bad[JoinPath(path, s)] = true
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
			p.fatal(n, path, p.quoteHint(path, n.Value),
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

// quoteHint is the hint for a string value that YAML reads as a number or a
// boolean.
func (p *parser) quoteHint(path, value string) string {
	if p.opts.QuoteHint != nil {
		return p.opts.QuoteHint(path, value)
	}
	return fmt.Sprintf("quote it: %s: %q", lastElem(path), value)
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

func displayPath(path string) string {
	if path == "" {
		return "the configuration"
	}
	return path
}

// generic writes any YAML as JSON: a json.RawMessage field is free-form
// (plugin values, until their plugin's schema checks them in
// core/config/values).
func (p *parser) generic(buf *bytes.Buffer, n *yaml.Node, path string) bool {
	n = resolve(n)
	if n == nil || !p.budget(n) {
		return false
	}
	p.pos.Value[path] = position{n.Line, n.Column}
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
		// strconv first: a yaml.v3 decodeStrict per scalar allocates a decoder,
		// which for a long list of numbers is most of the memory a parse
		// takes. decodeStrict is left for what int64 cannot hold.
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

// closest returns the valid key nearest to key, or "" when none is close
// enough to be a plausible typo: longer keys may carry more typos.
func closest(key string, valid []string) string {
	return diag.Closest(key, valid, max(2, len(key)/3))
}
