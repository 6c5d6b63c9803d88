package nodeplan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"strings"
)

// Plan is every plan type: it says what is wrong with itself.
type Plan interface {
	Validate() error
}

// Problem is one thing wrong with a plan: the field (a JSON path such as
// binaries[2].sources.amd64.sha256) and what is wrong with it.
type Problem struct {
	Field   string
	Message string
}

// Problems is every thing wrong with a plan, so that one run shows them all.
type Problems []Problem

func (p Problems) Error() string {
	lines := make([]string, len(p))
	for i, q := range p {
		lines[i] = q.Field + ": " + q.Message
	}
	if len(lines) == 1 {
		return lines[0]
	}
	return fmt.Sprintf("%d problems:\n  %s", len(lines), strings.Join(lines, "\n  "))
}

// checker collects problems while a plan validates itself.
type checker struct{ probs Problems }

func (c *checker) add(field, format string, args ...any) {
	c.probs = append(c.probs, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) err() error {
	if len(c.probs) == 0 {
		return nil
	}
	return c.probs
}

// Decode reads a plan from JSON, refusing unknown fields and trailing data,
// and validates it. Errors say where: line and column for syntax, the field
// for a wrong type or an unknown name.
func Decode(data []byte, p Plan) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return decodeError(data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := position(data, dec.InputOffset())
		return fmt.Errorf("line %d column %d: data after the plan's JSON object", line, col)
	}
	return p.Validate()
}

func decodeError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := position(data, syn.Offset)
		return fmt.Errorf("line %d column %d: %v", line, col, syn)
	case errors.As(err, &typ):
		line, col := position(data, typ.Offset)
		return fmt.Errorf("line %d column %d: %s: want %s, not %s", line, col, typ.Field, jsonKind(typ.Type), typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the file is empty or cut short: want a JSON object")
	}
	// "json: unknown field \"x\"" and the like.
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names what JSON a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Name() == "RawMessage" {
			return "any JSON value"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "a JSON " + t.String()
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// Load reads and validates the plan at file. found is false, with no error,
// when the file does not exist: the role has nothing of that kind to do.
// Errors name the file.
func Load(file string, p Plan) (found bool, err error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := Decode(data, p); err != nil {
		return true, fmt.Errorf("%s: %w", file, err)
	}
	return true, nil
}

// Encode validates a plan and returns the bytes to write at its path:
// indented JSON and a final newline, byte-identical for identical plans.
func Encode(p Plan) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
