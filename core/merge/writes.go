package merge

import (
	"encoding/json"
	"fmt"
	"strconv"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// A patch is known by what it writes, before it is applied and without the
// body it applies to: that is enough to find the patches of two plugins that
// would decide each other's result by their order, and to find the
// protected paths a patch goes near.

type writeKind int

const (
	wSet     writeKind = iota // sets the value at the path (merge patch leaf, replace, add to a key)
	wRemove                   // removes the value at the path
	wAppend                   // appends to the array at the path (add to "/-")
	wReshape                  // inserts or removes an element of the array at the path (add or remove at an index)
	wRead                     // only reads the value at the path (test, the source of copy)
)

type write struct {
	kind   writeKind
	tokens []string
	value  any  // for wSet and wAppend
	known  bool // value is known (not the target of a move or copy)
	// op says where the write comes from, for messages: "the merge patch",
	// "operation 2 (add)".
	op string
}

func (w write) pointer() string {
	if len(w.tokens) == 0 {
		return "(the whole resource)"
	}
	return joinPointer(w.tokens)
}

// describe says what the write does, for a conflict message.
func (w write) describe() string {
	switch w.kind {
	case wRemove:
		return "removes " + w.pointer()
	case wAppend:
		return "appends " + showValue(w.value) + " to " + w.pointer()
	case wReshape:
		return "inserts into or removes from the list " + w.pointer()
	case wRead:
		return "tests or copies " + w.pointer()
	}
	if !w.known {
		return "moves or copies a value to " + w.pointer()
	}
	return "sets " + w.pointer() + " to " + showValue(w.value)
}

// operation is one RFC 6902 operation as written, decoded for analysis
// (values keep their numbers exact); jsonpatch applies the same text.
type operation struct {
	Op    string          `json:"op"`
	Path  *string         `json:"path"`
	From  *string         `json:"from"`
	Value json.RawMessage `json:"value"`
}

// decodeOperations checks an RFC 6902 document and returns what each
// operation writes, the patch jsonpatch applies, and the place all the
// operations stay under (opsFocus).
func decodeOperations(raw json.RawMessage) (jsonpatch.Patch, []write, []string, error) {
	var ops []operation
	if err := json.Unmarshal(raw, &ops); err != nil {
		return nil, nil, nil, fmt.Errorf("operations are not an RFC 6902 array of {\"op\", \"path\", ...}: %v", err)
	}
	if len(ops) == 0 {
		return nil, nil, nil, fmt.Errorf("operations are an empty array")
	}
	var writes []write
	var containers [][]string
	for i, o := range ops {
		name := fmt.Sprintf("operation %d (%s)", i, o.Op)
		if o.Path == nil {
			return nil, nil, nil, fmt.Errorf("%s has no path", name)
		}
		path, err := parsePointer(*o.Path)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %v", name, err)
		}
		containers = append(containers, parent(path))
		var from []string
		if o.Op == "move" || o.Op == "copy" {
			if o.From == nil {
				return nil, nil, nil, fmt.Errorf("%s has no from", name)
			}
			if from, err = parsePointer(*o.From); err != nil {
				return nil, nil, nil, fmt.Errorf("%s: from: %v", name, err)
			}
			containers = append(containers, parent(from))
		}
		value := func() (any, error) {
			if len(o.Value) == 0 {
				return nil, fmt.Errorf("%s has no value", name)
			}
			v, err := decodeJSON(o.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: value: %v", name, err)
			}
			return v, nil
		}
		switch o.Op {
		case "add":
			v, err := value()
			if err != nil {
				return nil, nil, nil, err
			}
			switch last := lastToken(path); {
			case last == "-":
				writes = append(writes, write{kind: wAppend, tokens: path[:len(path)-1], value: v, known: true, op: name})
			case isIndex(last):
				writes = append(writes, write{kind: wReshape, tokens: path[:len(path)-1], op: name})
			default:
				writes = append(writes, write{kind: wSet, tokens: path, value: v, known: true, op: name})
			}
		case "replace":
			v, err := value()
			if err != nil {
				return nil, nil, nil, err
			}
			writes = append(writes, write{kind: wSet, tokens: path, value: v, known: true, op: name})
		case "remove":
			writes = append(writes, removal(path, name))
		case "move":
			writes = append(writes, removal(from, name), write{kind: wSet, tokens: path, op: name})
		case "copy":
			writes = append(writes, write{kind: wRead, tokens: from, op: name}, write{kind: wSet, tokens: path, op: name})
		case "test":
			if _, err := value(); err != nil {
				return nil, nil, nil, err
			}
			writes = append(writes, write{kind: wRead, tokens: path, op: name})
		default:
			return nil, nil, nil, fmt.Errorf("%s: unknown op %q: want add, remove, replace, move, copy or test", name, o.Op)
		}
	}
	p, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, writes, opsFocus(containers), nil
}

// parent is the pointer of the container holding the value at path (the
// whole document for the whole document).
func parent(path []string) []string {
	if len(path) == 0 {
		return nil
	}
	return path[:len(path)-1]
}

// removal is the write of removing path: a list element's removal shifts
// the ones after it, so it reshapes the list.
func removal(path []string, op string) write {
	if isIndex(lastToken(path)) {
		return write{kind: wReshape, tokens: path[:len(path)-1], op: op}
	}
	return write{kind: wRemove, tokens: path, op: op}
}

func lastToken(t []string) string {
	if len(t) == 0 {
		return ""
	}
	return t[len(t)-1]
}

// isIndex reports whether a pointer token can be a list index. Without the
// document a numeric token might also be an object key; taking it for an
// index only ever finds more overlaps, never fewer.
func isIndex(t string) bool {
	if t == "" || (len(t) > 1 && t[0] == '0') {
		return false
	}
	_, err := strconv.ParseUint(t, 10, 32)
	return err == nil
}

// mergeWrites lists what a JSON merge patch writes: every leaf it sets
// (a non-object value, or an empty object) and every key it removes (null).
func mergeWrites(obj map[string]any, prefix []string, out []write) []write {
	for _, k := range sortedKeys(obj) {
		path := append(append([]string(nil), prefix...), k)
		switch v := obj[k].(type) {
		case nil:
			out = append(out, write{kind: wRemove, tokens: path, op: "the merge patch"})
		case map[string]any:
			if len(v) > 0 {
				out = mergeWrites(v, path, out)
				continue
			}
			out = append(out, write{kind: wSet, tokens: path, value: v, known: true, op: "the merge patch"})
		default:
			out = append(out, write{kind: wSet, tokens: path, value: v, known: true, op: "the merge patch"})
		}
	}
	return out
}

// under reports whether pointer tokens a are b or below it.
func under(a, b []string) bool {
	if len(a) < len(b) {
		return false
	}
	for i := range b {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// clash reports whether two writes of different plugins to one resource
// would give a result that depends on which applies first, or that
// CloudFormation would refuse. Appends to a list never clash with each
// other or with changes to its elements (they only add at the end), except
// two different items of one key appended to a keyed list (KeyedList);
// identical values set, or the same path removed by both, do not clash
// either.
func clash(a, b write) bool {
	if a.kind == wRead && b.kind == wRead {
		return false
	}
	if a.kind == wAppend || b.kind == wAppend {
		if a.kind == wAppend && b.kind == wAppend {
			// Items of a keyed list are the same item when their keys
			// are: two values for one key clash (CloudFormation refuses
			// the list); the same value twice is kept once.
			_, _, same := sameKey(a, b)
			return same && !valueEqual(a.value, b.value)
		}
		app, other := a, b
		if b.kind == wAppend {
			app, other = b, a
		}
		// Replacing or reading the list itself or what holds it clashes;
		// inserting into or removing from the same list does not (the
		// append still lands at the end), but doing so to a list that holds
		// it moves it.
		return under(app.tokens, other.tokens) && !(other.kind == wReshape && len(other.tokens) == len(app.tokens))
	}
	if !under(a.tokens, b.tokens) && !under(b.tokens, a.tokens) {
		return false
	}
	if len(a.tokens) == len(b.tokens) && a.kind == b.kind {
		switch a.kind {
		case wRemove:
			return false
		case wSet:
			return !(a.known && b.known && valueEqual(a.value, b.value))
		}
	}
	return true
}

// firstClash finds the first pair of writes of two patches that clash.
func firstClash(a, b []write) (write, write, bool) {
	for _, x := range a {
		for _, y := range b {
			if clash(x, y) {
				return x, y, true
			}
		}
	}
	return write{}, write{}, false
}

// near reports whether a write goes near a protected pointer: at it, above
// it (replacing what holds it) or below it. Appending to a list changes the
// list but nothing already in it.
func near(w write, protected []string) bool {
	if w.kind == wAppend {
		return under(w.tokens, protected)
	}
	return under(w.tokens, protected) || under(protected, w.tokens)
}

// writesType reports whether a write may change the resource's Type.
func writesType(w write) bool {
	return w.kind != wRead && (len(w.tokens) == 0 || w.tokens[0] == "Type")
}
