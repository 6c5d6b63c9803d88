// Package substitute replaces secret and fact markers (((secret:...)),
// ((fact:...))) in a file by their values,
// structurally: it parses the file in its declared format, finds markers
// only where that format has string values, and writes each value encoded
// for the format, so that a value holding quotes, backslashes or newlines
// is read back exactly (nodeplan.Format describes each format). It never
// searches a file's text: a marker in a comment, say, stays as it is.
package substitute

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/envfile"
)

// Lookup returns the value a marker stands for. Its errors name the
// marker, never a value.
type Lookup func(marker string) (string, error)

// File substitutes every marker in data, a file in format, and returns the
// new content and how many markers it replaced. With no marker, out is
// data unchanged. On error nothing is returned: the caller keeps the file.
func File(format nodeplan.Format, data []byte, lookup Lookup) (out []byte, n int, err error) {
	switch format {
	case nodeplan.FormatJSON:
		return jsonFile(data, lookup)
	case nodeplan.FormatYAML:
		return yamlFile(data, lookup)
	case nodeplan.FormatEnv:
		return envFile(data, lookup)
	case nodeplan.FormatWhole:
		return wholeFile(data, lookup)
	}
	return nil, 0, fmt.Errorf("unknown format %q", format)
}

// replace substitutes the markers of one string value.
func replace(s string, lookup Lookup) (string, int, error) {
	var err error
	n := 0
	out := nodeplan.AnyMarkerPattern.ReplaceAllStringFunc(s, func(m string) string {
		if err != nil {
			return m
		}
		v, e := lookup(m)
		if e != nil {
			err = e
			return m
		}
		n++
		return v
	})
	return out, n, err
}

// jsonFile walks the JSON tokens and re-encodes only the strings (values
// or keys) that held a marker; every other byte of the file is kept.
func jsonFile(data []byte, lookup Lookup) ([]byte, int, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out bytes.Buffer
	copied, total := 0, 0
	for {
		before := int(dec.InputOffset())
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, jsonError(data, err)
		}
		s, ok := tok.(string)
		if !ok || !nodeplan.AnyMarkerPattern.MatchString(s) {
			continue
		}
		v, n, err := replace(s, lookup)
		if err != nil {
			return nil, 0, err
		}
		// The token is the string literal that ends here and starts at the
		// first quote after the separators (blanks, ':' and ',').
		end := int(dec.InputOffset())
		start := before + bytes.IndexByte(data[before:end], '"')
		enc, err := encodeJSONString(v)
		if err != nil {
			return nil, 0, err
		}
		out.Write(data[copied:start])
		out.Write(enc)
		copied = end
		total += n
	}
	if total == 0 {
		return data, 0, nil
	}
	out.Write(data[copied:])
	return out.Bytes(), total, nil
}

func encodeJSONString(s string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		line := bytes.Count(data[:min(int(syn.Offset), len(data))], []byte("\n")) + 1
		return fmt.Errorf("not JSON: line %d: %v", line, syn)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("not JSON: cut short")
	}
	return fmt.Errorf("not JSON: %v", err)
}

// yamlFile substitutes in the scalars of every document. A scalar that
// held a marker becomes a double-quoted string, the one YAML style that
// holds any value exactly.
func yamlFile(data []byte, lookup Lookup) ([]byte, int, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("not YAML: %v", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		docs = append(docs, &doc)
	}
	total := 0
	var walk func(*yaml.Node) error
	walk = func(n *yaml.Node) error {
		if n.Kind == yaml.ScalarNode && nodeplan.AnyMarkerPattern.MatchString(n.Value) {
			v, c, err := replace(n.Value, lookup)
			if err != nil {
				return err
			}
			n.Value, n.Tag, n.Style = v, "!!str", yaml.DoubleQuotedStyle
			total += c
		}
		if n.Kind == yaml.AliasNode { // its anchor is walked where it is
			return nil
		}
		for _, c := range n.Content {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	for _, d := range docs {
		if err := walk(d); err != nil {
			return nil, 0, err
		}
	}
	if total == 0 {
		return data, 0, nil
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return nil, 0, fmt.Errorf("writing YAML back: %v", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, 0, err
	}
	return out.Bytes(), total, nil
}

// envFile substitutes in the values of NAME=value lines.
func envFile(data []byte, lookup Lookup) ([]byte, int, error) {
	f, err := envfile.Parse(data)
	if err != nil {
		return nil, 0, fmt.Errorf("not an environment file: %v", err)
	}
	total := 0
	for _, a := range f.Assignments() {
		if !nodeplan.AnyMarkerPattern.MatchString(a.Value) {
			continue
		}
		v, n, err := replace(a.Value, lookup)
		if err != nil {
			return nil, 0, fmt.Errorf("%s (line %d): %w", a.Name, a.Line, err)
		}
		a.Set(v)
		total += n
	}
	if total == 0 {
		return data, 0, nil
	}
	return f.Bytes(), total, nil
}

// wholeFile: the file is one marker and becomes the value. A file with no
// marker at all was substituted by an earlier run and is kept.
func wholeFile(data []byte, lookup Lookup) ([]byte, int, error) {
	s := strings.TrimSpace(string(data))
	if !nodeplan.AnyMarkerPattern.MatchString(s) {
		return data, 0, nil
	}
	if nodeplan.AnyMarkerPattern.FindString(s) != s {
		return nil, 0, errors.New("format whole: the file must be exactly one marker, but it holds other text too; declare its format as json, yaml or env")
	}
	v, err := lookup(s)
	if err != nil {
		return nil, 0, err
	}
	return []byte(v), 1, nil
}
