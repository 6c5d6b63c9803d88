package stages

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	"github.com/kube-aws/kube-aws/core/construct"
)

// encodeState is json.Marshal of a state, except that the JSON bodies of
// the constructs' stacks (their resources, outputs, parameters, conditions
// and mappings) are copied as they are. encoding/json checks and compacts
// every json.RawMessage it writes, one byte at a time; those bodies are most
// of an initialise state (0.85 MB of its 0.92 at 100 node pools) and were
// checked when initialise merged them: core/merge refuses a body that is not
// valid JSON, so they need no second check here. Everything else goes
// through encoding/json. Within a stack the bodies come after its other
// fields, in the order of construct.Stack, each section's keys sorted as
// encoding/json sorts a map's: the same document decoded, and the same bytes
// for the same state.
func encodeState(st State) ([]byte, error) {
	set := st.Result.Constructs
	if set == nil || len(set.Stacks) == 0 {
		return json.Marshal(st)
	}
	// The state up to its result, the last field: any field State gains
	// is written as json.Marshal writes it.
	whole := st
	st.Result = StageResult{}
	head, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	zero, err := json.Marshal(StageResult{})
	if err != nil {
		return nil, err
	}
	tail := append(append([]byte(`"result":`), zero...), '}')
	if !bytes.HasSuffix(head, tail) {
		return json.Marshal(whole)
	}
	head = head[:len(head)-len(tail)]
	res := whole.Result
	res.Constructs = nil
	bare := *set
	bare.Stacks = nil
	result, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	rest, err := json.Marshal(&bare)
	if err != nil {
		return nil, err
	}
	size := len(head) + len(result) + len(rest) + 64
	for i := range set.Stacks {
		size += stackBodiesSize(&set.Stacks[i])
	}
	out := make([]byte, 0, size)
	out = append(out, head...)
	out = append(out, `"result":`...)
	out = openObject(out, result)
	out = append(out, `"constructs":{"stacks":[`...)
	for i := range set.Stacks {
		if i > 0 {
			out = append(out, ',')
		}
		if out, err = appendStack(out, &set.Stacks[i]); err != nil {
			return nil, err
		}
	}
	out = append(out, ']')
	if len(rest) > 2 {
		out = append(out, ',')
		out = append(out, rest[1:]...)
	} else {
		out = append(out, '}')
	}
	return append(out, '}', '}'), nil
}

// openObject appends the JSON object obj without its closing brace, ready
// for one more member.
func openObject(dst, obj []byte) []byte {
	dst = append(dst, obj[:len(obj)-1]...)
	if len(obj) > 2 {
		dst = append(dst, ',')
	}
	return dst
}

// rawSection is one of a stack's sections of JSON bodies.
type rawSection struct {
	name string
	m    map[string]json.RawMessage
}

// stackSections are construct.Stack's JSON bodies, in its field order.
func stackSections(s *construct.Stack) [5]rawSection {
	return [5]rawSection{
		{"resources", s.Resources}, {"outputs", s.Outputs}, {"parameters", s.Parameters},
		{"conditions", s.Conditions}, {"mappings", s.Mappings},
	}
}

func stackBodiesSize(s *construct.Stack) int {
	n := 0
	for _, sec := range stackSections(s) {
		for k, v := range sec.m {
			n += len(k) + len(v) + 8
		}
	}
	return n
}

// appendStack appends s as JSON, its bodies copied as they are.
func appendStack(dst []byte, s *construct.Stack) ([]byte, error) {
	bare := *s
	bare.Resources, bare.Outputs, bare.Parameters, bare.Conditions, bare.Mappings = nil, nil, nil, nil, nil
	b, err := json.Marshal(&bare)
	if err != nil {
		return nil, err
	}
	dst = append(dst, b[:len(b)-1]...)
	for _, sec := range stackSections(s) {
		if len(sec.m) == 0 {
			continue
		}
		dst = append(dst, ',')
		dst = strconv.AppendQuote(dst, sec.name)
		dst = append(dst, ':', '{')
		for i, k := range slices.Sorted(maps.Keys(sec.m)) {
			if i > 0 {
				dst = append(dst, ',')
			}
			kb, err := json.Marshal(k)
			if err != nil {
				return nil, err
			}
			dst = append(dst, kb...)
			dst = append(dst, ':')
			dst = append(dst, sec.m[k]...)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}
