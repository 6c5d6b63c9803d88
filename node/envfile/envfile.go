// Package envfile reads environment files as systemd's EnvironmentFile=
// reads them and writes values that systemd and a POSIX shell's `.` both
// read back exactly, keeping every line it does not change byte for byte.
// kube-aws-node uses it to substitute secrets in env files and to keep its
// own settings.
//
// What it reads (systemd's format): NAME=value lines, NAME a shell
// variable name, blanks around = allowed; blank lines; lines whose
// first non-blank character is # or ; (comments). A value is a sequence of
// unquoted text (a backslash takes the next character literally; trailing
// blanks dropped), '...' (literal) and "..." (backslash escapes ", \, $
// and ` only; newlines kept; backslash-newline joins lines). What it writes
// is always one double-quoted value (Quote), which both read back exactly.
package envfile

import (
	"bytes"
	"fmt"
	"strings"
)

// File is a parsed environment file.
type File struct {
	parts []part
}

// part is one line (or several, for a value that spans lines) with the
// newline that ends it, if any.
type part struct {
	raw     string
	newline bool
	assign  *Assignment
}

// Assignment is one NAME=value.
type Assignment struct {
	Name  string
	Value string
	// Line is the line the assignment starts on, 1-based.
	Line    int
	changed bool
}

// Set changes the value; Bytes writes it quoted.
func (a *Assignment) Set(v string) {
	a.Value = v
	a.changed = true
}

// Parse reads an environment file. Errors name the line.
func Parse(data []byte) (*File, error) {
	p := &parser{s: string(data), line: 1}
	f := &File{}
	for p.pos < len(p.s) {
		start, startLine := p.pos, p.line
		var a *Assignment
		p.blanks()
		switch {
		case p.pos >= len(p.s) || p.s[p.pos] == '\n':
		case p.s[p.pos] == '#' || p.s[p.pos] == ';':
			for p.pos < len(p.s) && p.s[p.pos] != '\n' {
				p.pos++
			}
		default:
			var err error
			if a, err = p.assignment(); err != nil {
				return nil, err
			}
			a.Line = startLine
		}
		pt := part{raw: p.s[start:p.pos], assign: a}
		if p.pos < len(p.s) { // the newline ending the line
			pt.newline = true
			p.pos++
			p.line++
		}
		f.parts = append(f.parts, pt)
	}
	return f, nil
}

// Assignments returns the assignments in file order.
func (f *File) Assignments() []*Assignment {
	var out []*Assignment
	for _, p := range f.parts {
		if p.assign != nil {
			out = append(out, p.assign)
		}
	}
	return out
}

// Lookup returns the value the file gives name last, as sh and systemd do.
func (f *File) Lookup(name string) (string, bool) {
	v, ok := "", false
	for _, a := range f.Assignments() {
		if a.Name == name {
			v, ok = a.Value, true
		}
	}
	return v, ok
}

// Bytes writes the file back: unchanged lines as they were, changed
// assignments as NAME="value" (Quote).
func (f *File) Bytes() []byte {
	var b bytes.Buffer
	for _, p := range f.parts {
		if p.assign != nil && p.assign.changed {
			b.WriteString(p.assign.Name + "=" + Quote(p.assign.Value))
		} else {
			b.WriteString(p.raw)
		}
		if p.newline {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// Quote double-quotes v so that systemd and sh both read back exactly v:
// \, ", $ and ` are backslash-escaped, every other byte (newlines too) is
// written as it is.
func Quote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		if strings.IndexByte("\\\"$`", v[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('"')
	return b.String()
}

// Encode writes NAME="value" lines in the order given.
func Encode(pairs [][2]string) []byte {
	var b bytes.Buffer
	for _, kv := range pairs {
		b.WriteString(kv[0] + "=" + Quote(kv[1]) + "\n")
	}
	return b.Bytes()
}

// ValidName reports whether name is a variable name both readers accept.
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

type parser struct {
	s    string
	pos  int
	line int
}

func (p *parser) blanks() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("line %d: %s", p.line, fmt.Sprintf(format, args...))
}

// errorAt names the line the assignment started on: a quote left open
// runs to the end of the file.
func errorAt(line int, format string, args ...any) error {
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

func (p *parser) assignment() (*Assignment, error) {
	start, line := p.pos, p.line
	for p.pos < len(p.s) && p.s[p.pos] != '=' && p.s[p.pos] != '\n' && p.s[p.pos] != ' ' && p.s[p.pos] != '\t' {
		p.pos++
	}
	name := p.s[start:p.pos]
	p.blanks()
	if p.pos >= len(p.s) || p.s[p.pos] != '=' {
		return nil, p.errorf("%q is not NAME=value", strings.TrimSpace(p.s[start:p.lineEnd()]))
	}
	if !ValidName(name) {
		return nil, p.errorf("%q is not a variable name (letters, digits and _, not starting with a digit)", name)
	}
	p.pos++ // =
	p.blanks()
	var v strings.Builder
	keep := 0 // v's length without trailing unquoted blanks
	for p.pos < len(p.s) && p.s[p.pos] != '\n' {
		c := p.s[p.pos]
		switch c {
		case '\\':
			if p.pos+1 >= len(p.s) {
				p.pos++
				continue
			}
			if p.s[p.pos+1] == '\n' { // continuation
				p.pos += 2
				p.line++
				continue
			}
			v.WriteByte(p.s[p.pos+1])
			p.pos += 2
			keep = v.Len()
		case '\'':
			end := strings.IndexByte(p.s[p.pos+1:], '\'')
			if end < 0 {
				return nil, errorAt(line, "%s: single quote never closed", name)
			}
			lit := p.s[p.pos+1 : p.pos+1+end]
			v.WriteString(lit)
			p.line += strings.Count(lit, "\n")
			p.pos += end + 2
			keep = v.Len()
		case '"':
			if !p.doubleQuoted(&v) {
				return nil, errorAt(line, "%s: double quote never closed", name)
			}
			keep = v.Len()
		default:
			v.WriteByte(c)
			p.pos++
			if c != ' ' && c != '\t' {
				keep = v.Len()
			}
		}
	}
	return &Assignment{Name: name, Value: v.String()[:keep]}, nil
}

// doubleQuoted reads a "..." value; false when the quote is never closed.
func (p *parser) doubleQuoted(v *strings.Builder) bool {
	p.pos++ // opening quote
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == '"':
			p.pos++
			return true
		case c == '\\' && p.pos+1 < len(p.s):
			n := p.s[p.pos+1]
			switch {
			case n == '\n':
				p.line++
			case strings.IndexByte("\\\"$`", n) >= 0:
				v.WriteByte(n)
			default:
				v.WriteByte('\\')
				v.WriteByte(n)
			}
			p.pos += 2
		default:
			if c == '\n' {
				p.line++
			}
			v.WriteByte(c)
			p.pos++
		}
	}
	return false
}

func (p *parser) lineEnd() int {
	if i := strings.IndexByte(p.s[p.pos:], '\n'); i >= 0 {
		return p.pos + i
	}
	return len(p.s)
}
