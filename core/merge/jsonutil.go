package merge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decodeJSON decodes one JSON value, keeping numbers as json.Number so that
// comparing and re-encoding never loses precision (a 64-bit account ID must
// not turn into a float).
func decodeJSON(b []byte) (any, error) {
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

// isJSONObject reports whether b is one valid JSON object. json.Valid is much
// cheaper than decoding, which matters for hundreds of node pool stacks.
func isJSONObject(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(b)
}

// jsonEqual compares two JSON texts semantically: key order, whitespace and
// the spelling of numbers (1, 1.0, 1e0) do not matter. Invalid JSON is equal
// only to the same bytes.
func jsonEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	av, err := decodeJSON(a)
	if err != nil {
		return false
	}
	bv, err := decodeJSON(b)
	if err != nil {
		return false
	}
	return valueEqual(av, bv)
}

// valueEqual compares decoded JSON values semantically.
func valueEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !valueEqual(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valueEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		return ok && (x == y || normalizeNumber(string(x)) == normalizeNumber(string(y)))
	default: // string, bool, nil
		return a == b
	}
}

// canonical encodes a decoded JSON value with sorted keys and normalised
// numbers, so equal values have equal encodings (used as a map key).
func canonical(v any) string {
	var b strings.Builder
	writeCanonical(&b, v)
	return b.String()
}

func writeCanonical(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := sortedKeys(x)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			writeCanonical(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case json.Number:
		b.WriteString(normalizeNumber(string(x)))
	case string:
		b.WriteString(strconv.Quote(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	default:
		b.WriteString("null")
	}
}

// canonicalRaw is canonical for a JSON text; an empty text counts as null
// and invalid JSON keeps its bytes, so it still compares unequal to anything
// else.
func canonicalRaw(b []byte) string {
	if len(bytes.TrimSpace(b)) == 0 {
		return "null"
	}
	v, err := decodeJSON(b)
	if err != nil {
		return "invalid:" + string(b)
	}
	return canonical(v)
}

// normalizeNumber rewrites a JSON number as sign, significant digits and a
// decimal exponent, so 1, 1.0, 10e-1 and 0.1e1 are the same. It works on the
// digits instead of big.Rat so a huge exponent (1e999999999) costs nothing.
func normalizeNumber(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.ParseInt(strings.TrimPrefix(s[i+1:], "+"), 10, 64)
		if err != nil {
			return s // absurd exponent: compare as written
		}
		mant, exp = s[:i], e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= int64(len(frac))
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	out := trimmed + "e" + strconv.FormatInt(exp, 10)
	if neg {
		out = "-" + out
	}
	return out
}

// absent stands for a key that one side of a comparison does not have.
type absentT struct{}

var absent = absentT{}

// firstDiff finds the first place, in sorted key order, where two decoded
// JSON values differ, and returns its JSON pointer and both values there.
// Messages show that place instead of two whole resource bodies.
func firstDiff(a, b any, ptr string) (string, any, any, bool) {
	if valueEqual(a, b) {
		return "", nil, nil, false
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		union := make(map[string]struct{}, len(x)+len(y))
		for k := range x {
			union[k] = struct{}{}
		}
		for k := range y {
			union[k] = struct{}{}
		}
		for _, k := range sortedKeys(union) {
			xv, xok := x[k]
			yv, yok := y[k]
			p := ptr + "/" + escapePointerToken(k)
			switch {
			case !xok:
				return p, absent, yv, true
			case !yok:
				return p, xv, absent, true
			}
			if d, av, bv, ok := firstDiff(xv, yv, p); ok {
				return d, av, bv, true
			}
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			break
		}
		for i := range x {
			if d, av, bv, ok := firstDiff(x[i], y[i], ptr+"/"+strconv.Itoa(i)); ok {
				return d, av, bv, true
			}
		}
	}
	return ptr, a, b, true
}

// describeJSONDiff says where two JSON texts differ and what each plugin set
// there, e.g. `at /Properties/CidrBlock "a" sets "10.0.0.0/16", "b" sets
// "10.1.0.0/16"`.
func describeJSONDiff(pa string, a []byte, pb string, b []byte) string {
	av, errA := decodeJSON(a)
	bv, errB := decodeJSON(b)
	if errA != nil || errB != nil {
		return fmt.Sprintf("%q sets %s, %q sets %s", pa, truncate(string(a), maxShown), pb, truncate(string(b), maxShown))
	}
	ptr, x, y, ok := firstDiff(av, bv, "")
	if !ok {
		return "they are identical"
	}
	where := "the whole value differs: "
	if ptr != "" {
		where = "they differ at " + ptr + ": "
	}
	return fmt.Sprintf("%s%q sets %s, %q sets %s", where, pa, showValue(x), pb, showValue(y))
}

// maxShown bounds how much of a value a message quotes, so a conflict on a
// large launch template stays one readable line.
const maxShown = 120

func showValue(v any) string {
	if v == absent {
		return "nothing"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return truncate(string(b), maxShown)
}

// truncate shortens s to at most n bytes on a rune boundary and says how long
// it was.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// describeTextDiff says on which line two texts (unit files, manifests)
// first differ and quotes that line from each.
func describeTextDiff(pa, a, pb, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		xok, yok := i < len(la), i < len(lb)
		if xok {
			x = la[i]
		}
		if yok {
			y = lb[i]
		}
		if xok && yok && x == y {
			continue
		}
		show := func(ok bool, s string) string {
			if !ok {
				return "nothing"
			}
			return strconv.Quote(truncate(s, maxShown))
		}
		return fmt.Sprintf("they differ at line %d: %q has %s, %q has %s", i+1, pa, show(xok, x), pb, show(yok, y))
	}
	return "they are identical"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// parsePointer splits an RFC 6901 JSON pointer into unescaped tokens; ""
// is the whole document.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("JSON pointer %q must be empty or start with /", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, t := range parts {
		if !strings.Contains(t, "~") {
			continue
		}
		var b strings.Builder
		for j := 0; j < len(t); j++ {
			if t[j] != '~' {
				b.WriteByte(t[j])
				continue
			}
			if j+1 >= len(t) || (t[j+1] != '0' && t[j+1] != '1') {
				return nil, fmt.Errorf("JSON pointer %q has ~ not followed by 0 or 1", p)
			}
			if t[j+1] == '0' {
				b.WriteByte('~')
			} else {
				b.WriteByte('/')
			}
			j++
		}
		parts[i] = b.String()
	}
	return parts, nil
}

func escapePointerToken(t string) string {
	if !strings.ContainsAny(t, "~/") {
		return t
	}
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

func joinPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapePointerToken(t))
	}
	return b.String()
}

// resolve follows pointer tokens through a decoded JSON value.
func resolve(v any, tokens []string) (any, bool) {
	for _, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			n, ok := x[t]
			if !ok {
				return nil, false
			}
			v = n
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) || (len(t) > 1 && t[0] == '0') {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}
