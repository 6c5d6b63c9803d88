package cfn

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// A template is written from the JSON its constructs carry in one pass over
// those bytes: appendIndented writes a value exactly as decoding it with
// Decode and encoding the result with Marshal(v, true) would (object keys
// sorted, two-space indentation, strings escaped as encoding/json escapes
// them without HTML escaping, numbers as written), without building the
// map[string]any tree and walking it by reflection: every template of a
// render goes through here, and building and encoding that tree was about a
// fifth of the built-ins' CPU in a render of 100 node pools.
//
// The input must be valid JSON (json.Valid): the scanner below trusts it.

// indentUnit is what Marshal(v, true) indents each level by.
const indentUnit = "  "

// appendIndented appends the valid JSON value src at nesting depth depth.
func appendIndented(dst, src []byte, depth int) []byte {
	var s scanner
	return s.indent(dst, src, depth)
}

// indent is appendIndented reusing the scanner's buffers.
func (s *scanner) indent(dst, src []byte, depth int) []byte {
	s.b, s.i = src, 0
	return s.value(dst, depth)
}

// scanner walks a valid JSON text from b[i]. Objects nested in each other
// share its members stack and its scratch buffer: an inner object is done
// with both before the outer one uses them again.
type scanner struct {
	b       []byte
	i       int
	members []member
	scratch []byte
}

func (s *scanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value appends the value at s.i (after any space) and moves past it.
func (s *scanner) value(dst []byte, depth int) []byte {
	s.skipSpace()
	switch c := s.b[s.i]; c {
	case '{':
		return s.object(dst, depth)
	case '[':
		return s.array(dst, depth)
	case '"':
		q := s.str()
		if canonical(q) {
			return append(dst, q...)
		}
		return appendJSONString(dst, unquote(q))
	default:
		// A number, true, false or null: encoding/json writes a
		// json.Number and the literals as they are written.
		start := s.i
		for s.i < len(s.b) && !isDelim(s.b[s.i]) {
			s.i++
		}
		return append(dst, s.b[start:s.i]...)
	}
}

// skip moves past the value at s.i (after any space) without writing it.
func (s *scanner) skip() {
	s.skipSpace()
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			s.str()
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return
			}
		default:
			if depth == 0 {
				for s.i < len(s.b) && !isDelim(s.b[s.i]) {
					s.i++
				}
				return
			}
		}
		s.i++
	}
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// str moves past the string at s.i and returns it with its quotes, as
// written in the input.
func (s *scanner) str() []byte {
	start := s.i
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return s.b[start:s.i]
		}
	}
	return s.b[start:]
}

func newline(dst []byte, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, indentUnit...)
	}
	return dst
}

func (s *scanner) array(dst []byte, depth int) []byte {
	s.i++ // [
	s.skipSpace()
	if s.b[s.i] == ']' {
		s.i++
		return append(dst, '[', ']')
	}
	dst = append(dst, '[')
	for {
		dst = newline(dst, depth+1)
		dst = s.value(dst, depth+1)
		s.skipSpace()
		c := s.b[s.i]
		s.i++
		if c == ']' {
			break
		}
		dst = append(dst, ',')
	}
	dst = newline(dst, depth)
	return append(dst, ']')
}

// member is one written object member: its decoded key, and where
// `"key": value` sits in the output.
type member struct {
	key        []byte
	start, end int
}

// object writes the members in input order, then, unless that order is
// already the sorted one, moves the written members into sorted order
// (one copy of the object's output rather than a second pass over its
// input). Of two members with one key the last is kept, as decoding into a
// map keeps it.
func (s *scanner) object(dst []byte, depth int) []byte {
	s.i++ // {
	s.skipSpace()
	if s.b[s.i] == '}' {
		s.i++
		return append(dst, '{', '}')
	}
	dst = append(dst, '{')
	body := len(dst)
	base := len(s.members)
	sorted := true
	for {
		if len(s.members) > base {
			dst = append(dst, ',')
		}
		dst = newline(dst, depth+1)
		start := len(dst)
		s.skipSpace()
		q := s.str()
		var key []byte
		if plain(q) {
			key = q[1 : len(q)-1]
			dst = append(dst, q...)
		} else {
			key = unquote(q)
			dst = appendJSONString(dst, key)
		}
		if n := len(s.members); n > base && bytes.Compare(s.members[n-1].key, key) >= 0 {
			sorted = false
		}
		dst = append(dst, ':', ' ')
		s.skipSpace()
		s.i++ // :
		dst = s.value(dst, depth+1)
		s.members = append(s.members, member{key: key, start: start, end: len(dst)})
		s.skipSpace()
		c := s.b[s.i]
		s.i++
		if c == '}' {
			break
		}
	}
	if !sorted {
		s.scratch = append(s.scratch[:0], dst[body:]...)
		dst = dst[:body]
		for i, m := range sortMembers(s.members[base:]) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = newline(dst, depth+1)
			dst = append(dst, s.scratch[m.start-body:m.end-body]...)
		}
	}
	s.members = s.members[:base]
	dst = newline(dst, depth)
	return append(dst, '}')
}

// sortMembers sorts members by key, keeping only the last of equal keys.
func sortMembers(ms []member) []member {
	slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	out := ms[:0]
	for i, m := range ms {
		if i+1 < len(ms) && bytes.Equal(ms[i+1].key, m.key) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// plain reports whether the quoted string q decodes to its own text between
// the quotes, and encoding/json writes that text back unchanged: no escape,
// and no invalid UTF-8, U+2028 or U+2029 (which it replaces or escapes).
func plain(q []byte) bool {
	inner := q[1 : len(q)-1]
	ascii := true
	for _, c := range inner {
		if c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if ascii {
		return true
	}
	return utf8.Valid(inner) && !bytes.Contains(inner, []byte("\u2028")) && !bytes.Contains(inner, []byte("\u2029"))
}

// canonical reports whether encoding/json writes the quoted string q as it
// is after decoding it: plain, or escaped only where and as it escapes
// (\", \\, \n, \r, \t, \b, \f, \u00xx in lower case for the other control
// characters, \u2028 and \u2029). Scripts in userdata are written so.
func canonical(q []byte) bool {
	inner := q[1 : len(q)-1]
	ascii := true
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if c >= utf8.RuneSelf {
			ascii = false
			continue
		}
		if c != '\\' {
			continue
		}
		i++
		switch inner[i] {
		case '"', '\\', 'n', 'r', 't', 'b', 'f':
		case 'u':
			if i+4 >= len(inner) {
				return false
			}
			if !canonicalU(inner[i+1 : i+5]) {
				return false
			}
			i += 4
		default:
			return false
		}
	}
	if ascii {
		return true
	}
	return utf8.Valid(inner) && !bytes.Contains(inner, []byte("\u2028")) && !bytes.Contains(inner, []byte("\u2029"))
}

// canonicalU reports whether encoding/json writes the character of the four
// hex digits h as \u and h.
func canonicalU(h []byte) bool {
	switch string(h) {
	case "2028", "2029":
		return true
	case "0008", "0009", "000a", "000c", "000d":
		return false // written \b, \t, \n, \f, \r
	}
	if h[0] != '0' || h[1] != '0' || h[2] != '0' && h[2] != '1' {
		return false
	}
	c := h[3]
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
}

// unquote returns the text of the quoted JSON string q as encoding/json
// decodes it.
func unquote(q []byte) []byte {
	if plain(q) {
		return q[1 : len(q)-1]
	}
	var v string
	if err := json.Unmarshal(q, &v); err != nil {
		// The input was checked with json.Valid.
		panic("cfn: unquoting a string of valid JSON: " + err.Error())
	}
	return []byte(v)
}

// appendJSONString appends the text s as a JSON string, escaped as
// encoding/json escapes it without HTML escaping.
func appendJSONString(dst, s []byte) []byte {
	if plainText(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(s)); err != nil {
		panic("cfn: encoding a string: " + err.Error())
	}
	return append(dst, bytes.TrimRight(buf.Bytes(), "\n")...)
}

// plainText reports whether encoding/json writes the text s between quotes
// unchanged: printable ASCII but for the quote and backslash, or valid UTF-8
// other than U+2028 and U+2029.
func plainText(s []byte) bool {
	ascii := true
	for _, c := range s {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.Valid(s) && !bytes.Contains(s, []byte("\u2028")) && !bytes.Contains(s, []byte("\u2029"))
}
