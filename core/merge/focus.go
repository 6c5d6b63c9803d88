package merge

import (
	"bytes"
	"encoding/json"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// focusMergePatch applies a JSON merge patch with the same result as
// jsonpatch.MergePatch on the whole document, but hands MergePatch only the
// part of the document the patch reaches. RFC 7386 merges an object patch {"k": P} into an object document
// by replacing the document's "k" with MergePatch(doc.k, P) and leaving
// everything else alone; so while the patch is a chain of one-key objects
// that the document also has as objects, the merge descends into that member
// and splices the result back. MergePatch decodes and re-encodes every level
// it visits, which made it most of a merge's cost; a patch that adds tags to
// a launch template now costs about half. The rest of the document keeps its
// bytes.
//
// doc must be valid JSON (resource bodies are checked when merged, and
// MergePatch's output is valid); patch is rawPatch decoded.
func focusMergePatch(doc []byte, patch map[string]any, rawPatch []byte) ([]byte, error) {
	if len(patch) == 1 {
		for k, v := range patch {
			sub, ok := v.(map[string]any)
			if !ok {
				break
			}
			ds, de, ok := objectMember(doc, k)
			if !ok || doc[ds] != '{' {
				break
			}
			ps, pe, ok := objectMember(rawPatch, k)
			if !ok {
				break
			}
			merged, err := focusMergePatch(doc[ds:de], sub, rawPatch[ps:pe])
			if err != nil {
				return nil, err
			}
			out := make([]byte, 0, len(doc)-(de-ds)+len(merged))
			out = append(out, doc[:ds]...)
			out = append(out, merged...)
			return append(out, doc[de:]...), nil
		}
	}
	return jsonpatch.MergePatch(doc, rawPatch)
}

// objectMember finds the value of key in a valid JSON object and returns its
// byte range. It reports false when b is not an object, has no such key, or
// has the key twice (then which one counts is MergePatch's business).
func objectMember(b []byte, key string) (start, end int, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, 0, false
	}
	i++
	found := false
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return 0, 0, false
		}
		if b[i] == '}' {
			return start, end, found
		}
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		if i >= len(b) || b[i] != '"' {
			return 0, 0, false
		}
		ks := i
		i = skipString(b, i)
		name := b[ks+1 : i-1]
		match := false
		if bytes.IndexByte(name, '\\') < 0 {
			match = string(name) == key
		} else {
			var s string
			if json.Unmarshal(b[ks:i], &s) != nil {
				return 0, 0, false
			}
			match = s == key
		}
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return 0, 0, false
		}
		vs := skipSpace(b, i+1)
		ve := skipValue(b, vs)
		if ve <= vs {
			return 0, 0, false
		}
		if match {
			if found {
				return 0, 0, false
			}
			start, end, found = vs, ve, true
		}
		i = ve
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just after the string starting at b[i].
func skipString(b []byte, i int) int {
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

// skipValue returns the index just after the JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	default: // number, true, false, null
		for ; i < len(b); i++ {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i
			}
		}
		return i
	}
}
