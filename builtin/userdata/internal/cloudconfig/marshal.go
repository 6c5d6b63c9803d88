package cloudconfig

import (
	"encoding/binary"
	"unicode/utf8"

	goyaml "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// encoder encodes the cloud-configs of one render as sigs.k8s.io/yaml.Marshal
// does, with two savings:
//
//   - No round trip. yaml.Marshal encodes the document to JSON, parses the
//     JSON back with the YAML parser and encodes the result; a cloud-config's
//     strings are whole files, and the parse was half of the userdata
//     plugin's CPU in a render. The YAML encoder gets here the tree that
//     parse produces (maps, slices and strings under the JSON names, with
//     the same fields left out).
//   - Each file entry is encoded once per render. The node pools' machines
//     write mostly the same files, and encoding their entries again for
//     every pool made the userdata plugin grow faster than the rest of a
//     render with the pools. The encoder writes a mapping's keys in order
//     and a block sequence's items one under the other at the same
//     indentation, so the document is its keys, each followed by its items
//     encoded one by one.
//
// TestMarshalMatchesSigsYAML keeps the bytes the same as yaml.Marshal's.
//
// The round trip changes a few strings: JSON replaces invalid UTF-8, and the
// YAML parser folds a raw NEL (U+0085, which JSON leaves unescaped) into a
// space and refuses DEL, the C1 controls and U+FFFE/U+FFFF. A document
// holding any of these takes the round trip, so that it comes out as it did.
type encoder struct {
	files map[writeFile][]byte
	// cmds are runcmd's items by their arguments (cmdKey): the pools'
	// machines run the same commands.
	cmds map[string][]byte
}

func newEncoder() *encoder {
	return &encoder{files: map[writeFile][]byte{}, cmds: map[string][]byte{}}
}

func (e *encoder) marshal(d document) ([]byte, error) {
	if !e.plain(d) {
		return yaml.Marshal(d)
	}
	// The document's pieces, then one buffer of their size.
	var parts [][]byte
	// The keys in the order the encoder sorts them.
	if len(d.RunCmd) > 0 {
		parts = append(parts, []byte("runcmd:\n"))
		for _, c := range d.RunCmd {
			b, err := e.cmd(c)
			if err != nil {
				return nil, err
			}
			parts = append(parts, b)
		}
	}
	if len(d.WriteFiles) > 0 {
		parts = append(parts, []byte("write_files:\n"))
		for _, f := range d.WriteFiles {
			b, ok := e.files[f]
			if !ok {
				var err error
				b, err = goyaml.Marshal([]any{map[string]any{"path": f.Path, "permissions": f.Permissions, "owner": f.Owner, "content": f.Content}})
				if err != nil {
					return nil, err
				}
				e.files[f] = b
			}
			parts = append(parts, b)
		}
	}
	if len(parts) == 0 {
		return []byte("{}\n"), nil
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]byte, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// cmd is one item of runcmd, encoded once per render.
func (e *encoder) cmd(c []string) ([]byte, error) {
	var key []byte
	if c != nil {
		key = []byte{1}
		for _, a := range c {
			key = binary.AppendUvarint(key, uint64(len(a)))
			key = append(key, a...)
		}
	}
	if b, ok := e.cmds[string(key)]; ok {
		return b, nil
	}
	var cmd any // a nil command is JSON's null
	if c != nil {
		args := make([]any, len(c))
		for j, a := range c {
			args[j] = a
		}
		cmd = args
	}
	b, err := goyaml.Marshal([]any{cmd})
	if err != nil {
		return nil, err
	}
	e.cmds[string(key)] = b
	return b, nil
}

// plain says that no string of the document is changed by the round trip.
// A file entry encoded before was in a plain document, so it is plain.
func (e *encoder) plain(d document) bool {
	for _, f := range d.WriteFiles {
		if _, ok := e.files[f]; ok {
			continue
		}
		if !plain(f.Path) || !plain(f.Permissions) || !plain(f.Owner) || !plain(f.Content) {
			return false
		}
	}
	for _, c := range d.RunCmd {
		for _, a := range c {
			if !plain(a) {
				return false
			}
		}
	}
	return true
}

// plain says that s is valid UTF-8 without the characters the round trip
// changes or refuses (U+FFFD itself is counted with invalid UTF-8: such a
// string only takes the round trip, which keeps it).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < utf8.RuneSelf && b != 0x7f {
			continue
		}
		for _, r := range s[i:] {
			if r == utf8.RuneError || r >= 0x7f && r <= 0x9f || r == 0xfffe || r == 0xffff {
				return false
			}
		}
		return true
	}
	return true
}
