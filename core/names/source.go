package names

import (
	"fmt"
	"strings"
)

// Source is where a stack parameter's value comes from: an output of another
// stack, filled in by deploy once that stack exists. It is written
// "<stack>.<output>" in JSON and on the wire (network.VpcId), and parsed in
// one place, ParseSource.
type Source struct {
	Stack  string
	Output string
}

// From is the source of a parameter taken from output of stack.
func From(stack, output string) Source { return Source{Stack: stack, Output: output} }

// String is the "<stack>.<output>" form.
func (s Source) String() string {
	if s.Stack == "" {
		return s.Output // as written, for a message about it
	}
	return s.Stack + "." + s.Output
}

// Valid says what is wrong with a source, or nil: both parts are needed.
// The merge checks every contributed source with it, once, and blames the
// plugin that sent it.
func (s Source) Valid() error {
	if s.Stack == "" || s.Output == "" {
		return fmt.Errorf("parameter source %q names no stack or no output: want <stack>.<output>, e.g. %s", s.String(), From(StackNetwork, OutputVpcID))
	}
	return nil
}

// ParseSource splits "<stack>.<output>" at its first dot (stack names have
// no dots; output names have none either, but the output keeps any).
// A text without a dot, or with an empty part, parses to a Source that is
// not Valid, so that the text survives to be reported.
func ParseSource(text string) Source {
	stack, output, ok := strings.Cut(text, ".")
	if !ok {
		return Source{Output: text}
	}
	return Source{Stack: stack, Output: output}
}

// MarshalText writes the "<stack>.<output>" form.
func (s Source) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the "<stack>.<output>" form; an invalid text is kept
// (see ParseSource) for the merge to report.
func (s *Source) UnmarshalText(b []byte) error {
	*s = ParseSource(string(b))
	return nil
}
