package merge

import (
	"encoding/json"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// opsFocus is the deepest place every operation of a patch stays under:
// the longest common prefix of the containers its operations write to or
// read from. No operation writes that place itself or anything above it, so
// it is the same value before and after each operation, and the operations
// can be applied to it alone with their paths made relative to it.
func opsFocus(containers [][]string) []string {
	if len(containers) == 0 {
		return nil
	}
	focus := containers[0]
	for _, c := range containers[1:] {
		n := 0
		for n < len(focus) && n < len(c) && focus[n] == c[n] {
			n++
		}
		focus = focus[:n]
	}
	return append([]string(nil), focus...)
}

// applyOperations applies a patch's RFC 6902 operations with the same
// result as applying them to the whole resource, but hands json-patch only
// the object under the patch's focus (json-patch checks, decodes and
// re-encodes the document it is given, which made a resource's whole body
// the cost of adding one tag). The rest of the body keeps its bytes. When
// the focus is not an object in the body, or the operations fail there, they
// are applied to the whole body, so that an error names the full paths.
func applyOperations(doc []byte, pp *pendingPatch) ([]byte, error) {
	focus := pp.opsFocus
	for len(focus) > 0 {
		s, e, ok := valueAt(doc, focus)
		if !ok {
			break
		}
		if doc[s] != '{' {
			// json-patch applies options (no HTML escaping) to an
			// object document; an array's parent is an object or an array.
			focus = focus[:len(focus)-1]
			continue
		}
		ops, ok := relativeOps(pp.ops, len(focus))
		if !ok {
			break
		}
		sub, err := ops.ApplyWithOptions(doc[s:e], applyOptions())
		if err != nil {
			break
		}
		out := make([]byte, 0, len(doc)-(e-s)+len(sub))
		out = append(out, doc[:s]...)
		out = append(out, sub...)
		return append(out, doc[e:]...), nil
	}
	return pp.ops.ApplyWithOptions(doc, applyOptions())
}

// relativeOps is ops with the first n tokens of each path and from dropped.
// Values are shared, not copied.
func relativeOps(ops jsonpatch.Patch, n int) (jsonpatch.Patch, bool) {
	out := make(jsonpatch.Patch, len(ops))
	for i, op := range ops {
		rel := make(jsonpatch.Operation, len(op))
		for k, v := range op {
			rel[k] = v
		}
		for _, k := range []string{"path", "from"} {
			raw, ok := op[k]
			if !ok || raw == nil {
				continue
			}
			var p string
			if json.Unmarshal(*raw, &p) != nil {
				return nil, false
			}
			tokens, err := parsePointer(p)
			if err != nil || len(tokens) <= n {
				return nil, false
			}
			for _, t := range tokens {
				if t == "" {
					// json-patch treats empty keys near the top of a
					// document differently; keep such paths whole.
					return nil, false
				}
			}
			b, err := json.Marshal(joinPointer(tokens[n:]))
			if err != nil {
				return nil, false
			}
			r := json.RawMessage(b)
			rel[k] = &r
		}
		out[i] = rel
	}
	return out, true
}

// valueAt finds the value at pointer tokens in valid JSON and returns its
// byte range, following object keys and list indexes.
func valueAt(b []byte, tokens []string) (start, end int, ok bool) {
	start, end = skipSpace(b, 0), len(b)
	for _, t := range tokens {
		if start >= end {
			return 0, 0, false
		}
		var s, e int
		switch b[start] {
		case '{':
			s, e, ok = objectMember(b[start:end], t)
		case '[':
			if !isIndex(t) {
				return 0, 0, false
			}
			s, e, ok = arrayElement(b[start:end], t)
		default:
			return 0, 0, false
		}
		if !ok {
			return 0, 0, false
		}
		start, end = start+s, start+e
	}
	return start, end, start < end
}

// arrayElement finds the element at index t (a canonical decimal) of a
// valid JSON array and returns its byte range.
func arrayElement(b []byte, t string) (start, end int, ok bool) {
	want := 0
	for _, c := range t {
		want = want*10 + int(c-'0')
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return 0, 0, false
	}
	i = skipSpace(b, i+1)
	for n := 0; i < len(b) && b[i] != ']'; n++ {
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		vs := i
		ve := skipValue(b, vs)
		if ve <= vs {
			return 0, 0, false
		}
		if n == want {
			return vs, ve, true
		}
		i = skipSpace(b, ve)
	}
	return 0, 0, false
}
