package cloudconfig

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestMarshalMatchesSigsYAML: encoder.marshal writes what
// sigs.k8s.io/yaml.Marshal writes, for the kinds of strings a cloud-config
// holds (scripts, YAML and JSON documents, strings YAML would read as other
// types, long lines, trailing spaces, control characters, invalid UTF-8),
// and fails where it fails (characters the YAML parser refuses).
func TestMarshalMatchesSigsYAML(t *testing.T) {
	odd := []string{
		"", " ", "0644", "true", "null", "~", "1e3", "0x1F", "-", "- a", "? x", ": y", "#c", "a: b", "[a]", "{a: b}",
		"&anchor", "*alias", "!tag", "%dir", "@at", "`tick", "'single'", "\"double\"", "trailing \n", " leading",
		"line\nline\n", "no newline\nat end", "  indented\nfirst\n", "text\n\n\n", "\n", " \n x \n", "\n\nblank first", "tab\there", "cr\r\nlf", "bell\a", "nul\x00",
		"unicode é ✓ 𝄞", "bom\ufeff", "nel\u0085ls\u2028", strings.Repeat("long line ", 40), "<html> & 'quotes'",
		"#!/bin/sh\nset -eu\necho \"$HOME\" && exit 0\n", "kind: Pod\nmetadata:\n  name: x\n", "{\"a\": [1, 2]}\n",
		"invalid \xff utf-8", "del\x7f", "c1\u0080", "nonchar\ufffe", "replacement \ufffd", "=", "yes", "No", "on", "OFF", ".inf", "-.Inf", ".NaN", "2001-12-14", "1_000",
	}
	var files, valid []writeFile
	var validArgs []string
	for i, s := range odd {
		f := writeFile{Path: "/etc/" + s, Permissions: odd[(i+1)%len(odd)], Owner: s, Content: s}
		files = append(files, f)
		if plain(s) && plain(f.Permissions) {
			valid = append(valid, f)
			validArgs = append(validArgs, s)
		}
	}
	cases := map[string]document{
		"empty":    {},
		"files":    {WriteFiles: files},
		"commands": {RunCmd: [][]string{{"systemctl", "daemon-reload"}, nil, {}, odd}},
		"plain commands": {RunCmd: [][]string{{"systemctl", "daemon-reload"}, nil, {}, {""}, {"ab"}, {"a", "b"}, {"a\x00b"}, {"systemctl", "daemon-reload"}, nil, {}},
			WriteFiles: valid},
		"refused":       {WriteFiles: []writeFile{{Path: "/x", Content: "del\x7f"}}},
		"folded":        {WriteFiles: []writeFile{{Path: "/x", Content: "nel\u0085"}}},
		"both":          {WriteFiles: files[:5], RunCmd: [][]string{{"a", "b"}}},
		"valid strings": {WriteFiles: valid, RunCmd: [][]string{validArgs}},
	}
	for name, d := range cases {
		t.Run(name, func(t *testing.T) {
			want, wantErr := yaml.Marshal(d)
			enc := newEncoder()
			got, err := enc.marshal(d)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("error %v, want %v", err, wantErr)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			// Again, with every file entry from the encoder's cache.
			again, err := enc.marshal(d)
			if (err != nil) != (wantErr != nil) || !bytes.Equal(again, want) {
				t.Errorf("the second document with the same files differs: %v\n%s", err, again)
			}
		})
	}
}
