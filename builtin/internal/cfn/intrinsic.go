package cfn

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
)

// These helpers produce intrinsic functions in goformation's convention (a
// base64-wrapped JSON object) so they fit goformation's typed string fields.
// They differ from cloudformation.Ref, Sub and friends in one way that
// matters: the argument is encoded with encoding/json, not Go's %q, so a
// script with any character in it survives (Go quoting writes \x.. and \a,
// which are not JSON, and the intrinsic would silently become a plain string).

func encode(name string, arg any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // spliced as it is into the resource by Raw
	if err := enc.Encode(map[string]any{name: arg}); err != nil {
		panic("cfn: encoding intrinsic " + name + ": " + err.Error())
	}
	return base64.StdEncoding.EncodeToString(bytes.TrimRight(b.Bytes(), "\n"))
}

// Ref refers to a parameter or resource of the same template.
func Ref(name string) string { return encode("Ref", name) }

// GetAtt reads an attribute of a resource of the same template.
func GetAtt(resource, attribute string) string {
	return encode("Fn::GetAtt", []string{resource, attribute})
}

// Sub substitutes ${Name} references in s.
func Sub(s string) string { return encode("Fn::Sub", s) }

// Base64 encodes its argument, typically the result of Sub.
func Base64(v string) string { return encode("Fn::Base64", v) }

// Base64Sub is Base64(Sub(s)) with the Sub written inside the Base64 as
// an object rather than encoded on its own: the same template, for one
// base64 encoding of s instead of two, and one decoding when Raw expands
// it. A machine's userdata script is the longest string of its stack.
func Base64Sub(s string) string {
	return encode("Fn::Base64", map[string]string{"Fn::Sub": s})
}

// Join joins values, each a literal or an intrinsic from these helpers.
func Join(sep string, values ...string) string {
	vs := make([]any, len(values))
	for i, v := range values {
		vs[i] = v
	}
	return encode("Fn::Join", []any{sep, vs})
}

// RefObj is Ref as plain data, for places that hold JSON values rather than
// goformation strings (outputs, policy documents).
func RefObj(name string) map[string]any { return map[string]any{"Ref": name} }

// GetAttObj is GetAtt as plain data.
func GetAttObj(resource, attribute string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{resource, attribute}}
}
