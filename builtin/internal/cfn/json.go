package cfn

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// Value turns anything JSON-marshalable (a goformation resource, a policy
// document, an output) into plain JSON data with goformation's encoded
// intrinsics expanded into real {"Ref": ...} objects.
//
// We expand them ourselves rather than through goformation's
// intrinsics.ProcessJSON: that function also *evaluates* literal intrinsic
// objects (a {"Ref": "AWS::Region"} becomes "us-east-1"), which would corrupt
// any JSON that has already been expanded once or that a plugin wrote by hand.
func Value(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d, err := Decode(b)
	if err != nil {
		return nil, err
	}
	return expand(d), nil
}

// Raw is Value encoded as compact JSON, the form constructs carry.
func Raw(v any) (json.RawMessage, error) {
	d, err := Value(v)
	if err != nil {
		return nil, err
	}
	return Marshal(d, false)
}

// MustRaw is Raw for values built by this code, where a failure is a bug.
func MustRaw(v any) json.RawMessage {
	r, err := Raw(v)
	if err != nil {
		panic(fmt.Sprintf("cfn: encoding %T: %v", v, err))
	}
	return r
}

func expand(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = expand(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = expand(e)
		}
		return t
	case string:
		if fn, ok := decodeIntrinsic(t); ok {
			return expand(fn)
		}
		return t
	default:
		return v
	}
}

// decodeIntrinsic recognises a goformation-encoded intrinsic: base64 of a JSON
// object with exactly one key that names an intrinsic function.
func decodeIntrinsic(s string) (map[string]any, bool) {
	if len(s) < 8 || len(s)%4 != 0 {
		return nil, false
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw) == 0 || raw[0] != '{' && raw[0] != ' ' {
		return nil, false
	}
	d, err := Decode(raw)
	if err != nil {
		return nil, false
	}
	m, ok := d.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, false
	}
	for k := range m {
		if !intrinsicNames[k] {
			return nil, false
		}
	}
	return m, true
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
