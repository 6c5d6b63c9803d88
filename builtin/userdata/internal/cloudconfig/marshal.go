package cloudconfig

import (
	"unicode/utf8"

	goyaml "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// marshal encodes the document as sigs.k8s.io/yaml.Marshal does, without
// its round trip: that encodes the document to JSON, parses the JSON back
// with the YAML parser and encodes the result, and for a cloud-config, whose
// strings are whole files, the parse was half of the userdata plugin's CPU
// in a render. The tree given to the YAML encoder here is the one that parse
// produces (maps, slices and strings under the JSON names, with the same
// fields left out), so the bytes are the same; TestMarshalMatchesSigsYAML
// keeps them so.
//
// The round trip changes a few strings: JSON replaces invalid UTF-8, and the
// YAML parser folds a raw NEL (U+0085, which JSON leaves unescaped) into a
// space and refuses DEL, the C1 controls and U+FFFE/U+FFFF. A document
// holding any of these takes the round trip, so that it comes out as it did.
func (d document) marshal() ([]byte, error) {
	if !d.plain() {
		return yaml.Marshal(d)
	}
	tree := map[string]any{}
	if len(d.WriteFiles) > 0 {
		files := make([]any, len(d.WriteFiles))
		for i, f := range d.WriteFiles {
			files[i] = map[string]any{"path": f.Path, "permissions": f.Permissions, "owner": f.Owner, "content": f.Content}
		}
		tree["write_files"] = files
	}
	if len(d.RunCmd) > 0 {
		cmds := make([]any, len(d.RunCmd))
		for i, c := range d.RunCmd {
			if c == nil {
				cmds[i] = nil
				continue
			}
			args := make([]any, len(c))
			for j, a := range c {
				args[j] = a
			}
			cmds[i] = args
		}
		tree["runcmd"] = cmds
	}
	return goyaml.Marshal(tree)
}

// plain says that no string of the document is changed by the round trip.
func (d document) plain() bool {
	for _, f := range d.WriteFiles {
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
