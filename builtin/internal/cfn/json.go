package cfn

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/awslabs/goformation/v4/cloudformation"
)

// intrinsicNames are the keys goformation's helpers (cloudformation.Ref,
// Sub, GetAtt, Join, ...) wrap in base64 so that they fit typed string fields.
var intrinsicNames = map[string]bool{
	"Ref": true, "Fn::Base64": true, "Fn::And": true, "Fn::Equals": true,
	"Fn::If": true, "Fn::Not": true, "Fn::Or": true, "Fn::FindInMap": true,
	"Fn::GetAtt": true, "Fn::GetAZs": true, "Fn::ImportValue": true,
	"Fn::Join": true, "Fn::Select": true, "Fn::Split": true, "Fn::Sub": true,
	"Fn::Cidr": true, "Fn::Transform": true,
}

// Decode parses one JSON value keeping numbers as json.Number, so that
// re-encoding never turns an account ID into a float.
func Decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// Raw encodes anything JSON-marshalable (a goformation resource, a policy
// document, an output) as compact JSON, the form constructs carry, with
// goformation's encoded intrinsics expanded into real {"Ref": ...} objects.
// The value is encoded once: the intrinsics, base64 strings in the output,
// are spliced in place without decoding and encoding the rest again. HTML
// characters are not escaped (a userdata script keeps its && and <).
//
// We expand intrinsics ourselves rather than through goformation's
// intrinsics.ProcessJSON: that function also *evaluates* literal intrinsic
// objects (a {"Ref": "AWS::Region"} becomes "us-east-1"), which would corrupt
// any JSON that has already been expanded once or that a plugin wrote by hand.
func Raw(v any) (json.RawMessage, error) {
	// A goformation resource encodes itself with json.Marshal, so its output
	// is already compact and valid; an Encoder would check and copy it again,
	// a fifth of a machine stack's cost.
	if r, ok := v.(cloudformation.Resource); ok {
		if m, ok := r.(json.Marshaler); ok {
			b, err := m.MarshalJSON()
			if err != nil {
				return nil, err
			}
			return expandIntrinsics(b)
		}
	}
	return encodeJSON(v)
}

// encodeJSON is Raw through an Encoder, for any value.
func encodeJSON(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return expandIntrinsics(bytes.TrimRight(buf.Bytes(), "\n"))
}

// MustRaw is Raw for values built by this code, where a failure is a bug.
func MustRaw(v any) json.RawMessage {
	r, err := Raw(v)
	if err != nil {
		panic(fmt.Sprintf("cfn: encoding %T: %v", v, err))
	}
	return r
}

// expandIntrinsics copies compact JSON, replacing every string value that is
// a goformation-encoded intrinsic by the intrinsic itself (compacted, and
// expanded in turn: a Join may hold a GetAtt). Object keys and other
// strings are copied as they are.
func expandIntrinsics(b []byte) (json.RawMessage, error) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if b[i] != '"' {
			out = append(out, b[i])
			i++
			continue
		}
		end := stringEnd(b, i)
		tok := b[i:end]
		if end < len(b) && b[end] == ':' || !maybeBase64(tok[1:len(tok)-1]) {
			out = append(out, tok...)
			i = end
			continue
		}
		fn, ok := decodeIntrinsic(tok[1 : len(tok)-1])
		if !ok {
			out = append(out, tok...)
			i = end
			continue
		}
		// fn is compact, and so is what it expands to.
		inner, err := expandIntrinsics(fn)
		if err != nil {
			return nil, err
		}
		out = append(out, inner...)
		i = end
	}
	return out, nil
}

// stringEnd returns the index just after the JSON string starting at b[i].
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// maybeBase64 is a cheap first look: only standard base64 text of a useful
// length can be an encoded intrinsic.
func maybeBase64(s []byte) bool {
	if len(s) < 8 || len(s)%4 != 0 {
		return false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

// decodeIntrinsic recognises a goformation-encoded intrinsic: base64 of a JSON
// object with one key (given once or more) that names an intrinsic function.
// It returns the object's JSON, compacted.
func decodeIntrinsic(s []byte) ([]byte, bool) {
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(raw, s)
	if err != nil || n == 0 || raw[0] != '{' && raw[0] != ' ' {
		return nil, false
	}
	// Compact checks the JSON as it goes: one pass, where decoding it into
	// a map to count its keys and compacting it after took two and a copy.
	var c bytes.Buffer
	if json.Compact(&c, raw[:n]) != nil {
		return nil, false
	}
	obj := c.Bytes()
	if obj[0] != '{' || obj[1] == '}' {
		return nil, false
	}
	sc := scanner{b: obj, i: 1}
	var name []byte
	for {
		k := unquote(sc.str())
		if name == nil {
			name = k
		} else if !bytes.Equal(k, name) {
			return nil, false
		}
		sc.i++ // :
		sc.skip()
		if sc.b[sc.i] == '}' {
			break
		}
		sc.i++ // ,
	}
	return obj, intrinsicNames[string(name)]
}

// Marshal writes v as JSON with sorted object keys (encoding/json sorts map
// keys) and no HTML escaping, indented by two spaces when indent is set and
// ending in a newline then. Identical data always gives identical bytes.
func Marshal(v any, indent bool) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := buf.Bytes()
	if !indent {
		out = bytes.TrimRight(out, "\n")
	}
	return out, nil
}
