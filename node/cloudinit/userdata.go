// Package cloudinit applies the two cloud-init modules a kube-aws userdata
// uses, write_files and runcmd, with cloud-init's semantics, so that
// kube-aws-node can apply a role's rendered userdata without running
// cloud-init a second time from inside cloud-init.
//
// write_files is cloud-init's (cc_write_files, 22.x-24.x): path made
// absolute, content decoded by encoding (b64, gzip, gz+b64 and their
// spellings; unknown ones warned about and taken as text), permissions as
// cloud-init decodes them (an integer as it is, so YAML's 0644 is octal;
// a string in octal; undecodable ones warned about and 0644 used), owner
// user:group (root:root when absent), append, and defer (deferred files
// are written after all others, before runcmd, as write_files_deferred
// does); parent folders made as needed. A `source` (download) entry is
// refused: kube-aws renders content only.
//
// runcmd runs each entry in order: a list as an argv (each item as Python's
// str() prints it), a string with /bin/sh -c. Two deliberate differences
// from cloud-init, which writes all entries into one shell script that
// carries on past failures: each entry runs on its own (a `cd` does not
// carry over), and the first failing entry stops the run and is named.
package cloudinit

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Header is the first line of a #cloud-config userdata.
const Header = "#cloud-config"

// Userdata is what kube-aws-node applies of a #cloud-config document.
type Userdata struct {
	WriteFiles []WriteFile
	RunCmd     []Command
	// Warnings are what cloud-init would log as warnings and carry on.
	Warnings []string
}

// WriteFile is one write_files entry, decoded as cloud-init decodes it.
type WriteFile struct {
	// Line is where the entry starts in the userdata.
	Line int
	// Path is absolute and clean.
	Path string
	// Content is the decoded bytes to write.
	Content []byte
	// User and Group are names; empty leaves the id as it is.
	User, Group string
	Mode        uint32
	Append      bool
	Defer       bool
}

// Command is one runcmd entry: Argv, or a Shell command line.
type Command struct {
	Line  int
	Argv  []string
	Shell string
}

// String is the command as a person reads it in a message.
func (c Command) String() string {
	if c.Argv == nil {
		return c.Shell
	}
	return strings.Join(c.Argv, " ")
}

// modules kube-aws-node applies; any other top-level key is refused, since
// nothing would apply it.
var modules = map[string]bool{"write_files": true, "runcmd": true}

// Parse reads a #cloud-config userdata. Errors give the line.
func Parse(data []byte) (*Userdata, error) {
	first, _, _ := bytes.Cut(data, []byte("\n"))
	if strings.TrimRight(string(first), " \t\r") != Header {
		return nil, fmt.Errorf("line 1: the userdata must start with %s, it starts with %q", Header, truncate(string(first), 40))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not YAML: %v", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	u := &Userdata{}
	if len(doc.Content) == 0 { // only the header: nothing to do
		return u, nil
	}
	if err := standardTags(&doc); err != nil {
		return nil, err
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the userdata must be a mapping of modules", root.Line)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if !modules[k.Value] {
			return nil, fmt.Errorf("line %d: module %q: kube-aws-node applies only write_files and runcmd, and nothing would apply this", k.Line, k.Value)
		}
		var err error
		switch k.Value {
		case "write_files":
			u.WriteFiles, err = parseWriteFiles(v, u)
		case "runcmd":
			u.RunCmd, err = parseRunCmd(v)
		}
		if err != nil {
			return nil, err
		}
	}
	return u, nil
}

func parseWriteFiles(n *yaml.Node, u *Userdata) ([]WriteFile, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: write_files must be a list", n.Line)
	}
	var out []WriteFile
	for i, e := range n.Content {
		where := fmt.Sprintf("line %d: write_files[%d]", e.Line, i)
		if e.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s: want a mapping with path and content", where)
		}
		f := WriteFile{Line: e.Line}
		var path, content, encoding, owner, perms *yaml.Node
		for j := 0; j+1 < len(e.Content); j += 2 {
			k, v := e.Content[j], e.Content[j+1]
			switch k.Value {
			case "path":
				path = v
			case "content":
				content = v
			case "encoding":
				encoding = v
			case "owner":
				owner = v
			case "permissions":
				perms = v
			case "append":
				f.Append = cloudBool(v)
			case "defer":
				f.Defer = cloudBool(v)
			case "source":
				return nil, fmt.Errorf("line %d: write_files[%d].source: downloading files is not supported; put the content in the userdata", k.Line, i)
			default:
				return nil, fmt.Errorf("line %d: write_files[%d]: unknown key %q (cloud-init's schema has path, content, encoding, owner, permissions, append, defer)", k.Line, i, k.Value)
			}
		}
		if path == nil || isNull(path) || path.Value == "" {
			// cloud-init warns and skips the entry.
			u.Warnings = append(u.Warnings, where+": no path, entry skipped")
			continue
		}
		if path.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s.path: want a string", where)
		}
		f.Path = absPath(path.Value)
		var raw []byte
		if content != nil && !isNull(content) {
			if content.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: write_files[%d].content: want a string", content.Line, i)
			}
			raw = []byte(content.Value)
			if content.Tag == "!!binary" { // YAML's own base64
				var b string
				if err := content.Decode(&b); err != nil {
					return nil, fmt.Errorf("line %d: write_files[%d].content: %v", content.Line, i, err)
				}
				raw = []byte(b)
			}
		}
		enc := ""
		if encoding != nil && !isNull(encoding) {
			enc = encoding.Value
		}
		body, warn, err := decode(raw, enc)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): content: %v", where, f.Path, err)
		}
		if warn != "" {
			u.Warnings = append(u.Warnings, fmt.Sprintf("%s (%s): %s", where, f.Path, warn))
		}
		f.Content = body
		ow := "root:root"
		if owner != nil && !isNull(owner) {
			ow = owner.Value
		}
		f.User, f.Group = usergroup(ow)
		mode, warn := permissions(perms)
		if warn != "" {
			u.Warnings = append(u.Warnings, fmt.Sprintf("%s (%s): %s", where, f.Path, warn))
		}
		f.Mode = mode
		out = append(out, f)
	}
	return out, nil
}

// absPath is Python's os.path.abspath with cloud-init's working folder, /.
func absPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	// path.Clean, but keep it literal: abspath normalises the same way.
	parts := []string{}
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(parts) > 0 {
				parts = parts[:len(parts)-1]
			}
		default:
			parts = append(parts, s)
		}
	}
	return "/" + strings.Join(parts, "/")
}

// usergroup is cloud-init's extract_usergroup: "", "-1" and "none" mean
// "leave as it is".
func usergroup(s string) (user, group string) {
	u, g, _ := strings.Cut(s, ":")
	u, g = strings.TrimSpace(u), strings.TrimSpace(g)
	none := func(x string) bool { return x == "" || x == "-1" || strings.EqualFold(x, "none") }
	if none(u) {
		u = ""
	}
	if none(g) {
		g = ""
	}
	return u, g
}

// defaultMode is cloud-init's default permissions, 0644.
const defaultMode = 0o644

// permissions is cloud-init's decode_perms.
func permissions(n *yaml.Node) (uint32, string) {
	if n == nil || isNull(n) {
		return defaultMode, ""
	}
	undecodable := fmt.Sprintf("undecodable permissions %q, using 644", n.Value)
	if n.Kind != yaml.ScalarNode {
		return defaultMode, undecodable
	}
	switch n.ShortTag() {
	case "!!int":
		var v int64
		if err := n.Decode(&v); err != nil || v < 0 || v > math.MaxUint32 {
			return defaultMode, undecodable
		}
		return uint32(v) & 0o7777, ""
	case "!!float":
		var v float64
		if err := n.Decode(&v); err != nil || v < 0 || v > math.MaxUint32 {
			return defaultMode, undecodable
		}
		return uint32(v) & 0o7777, ""
	}
	v, err := strconv.ParseInt(strings.TrimSpace(n.Value), 8, 64)
	if err != nil || v < 0 || v > math.MaxUint32 {
		return defaultMode, undecodable
	}
	return uint32(v) & 0o7777, ""
}

// cloudBool is cloud-init's translate_bool: true, 1, on, yes (any case).
func cloudBool(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(n.Value)) {
	case "true", "1", "on", "yes":
		return true
	}
	return false
}

func parseRunCmd(n *yaml.Node) ([]Command, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: runcmd must be a list", n.Line)
	}
	var out []Command
	for i, e := range n.Content {
		switch e.Kind {
		case yaml.ScalarNode:
			if isNull(e) || strings.TrimSpace(e.Value) == "" {
				return nil, fmt.Errorf("line %d: runcmd[%d] is empty", e.Line, i)
			}
			out = append(out, Command{Line: e.Line, Shell: e.Value})
		case yaml.SequenceNode:
			var argv []string
			for j, a := range e.Content {
				if a.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("line %d: runcmd[%d][%d]: want a string", a.Line, i, j)
				}
				argv = append(argv, pythonStr(a))
			}
			if len(argv) == 0 {
				return nil, fmt.Errorf("line %d: runcmd[%d] is an empty list", e.Line, i)
			}
			out = append(out, Command{Line: e.Line, Argv: argv})
		default:
			return nil, fmt.Errorf("line %d: runcmd[%d]: want a string or a list of strings", e.Line, i)
		}
	}
	return out, nil
}

// pythonStr is what cloud-init's str() makes of a YAML scalar in an argv.
func pythonStr(n *yaml.Node) string {
	switch n.ShortTag() {
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			if b {
				return "True"
			}
			return "False"
		}
	case "!!null":
		return "None"
	case "!!int":
		var v int64
		if n.Decode(&v) == nil {
			return strconv.FormatInt(v, 10)
		}
	}
	return n.Value
}

// standardTags refuses a tag YAML does not define (!foo): cloud-init's
// YAML loader (PyYAML's safe_load) refuses the whole userdata for one.
func standardTags(n *yaml.Node) error {
	if n.Tag != "" && !strings.HasPrefix(n.ShortTag(), "!!") {
		return fmt.Errorf("line %d: tag %s is not a YAML tag cloud-init knows", n.Line, n.Tag)
	}
	for _, c := range n.Content {
		if err := standardTags(c); err != nil {
			return err
		}
	}
	return nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
