package config

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/kube-aws/kube-aws/core/diag"
)

// source remembers the file a Cluster came from and where each config path
// sits in it, so that validation (here and in core/config/values) can point
// at the offending line long after parsing.
type source struct {
	file string
	// value is the position of the value at a config path.
	value map[string]position
	// bad holds the paths that already have a parse diagnostic (unknown
	// key, wrong type), so that validation does not pile a second,
	// misleading one ("x is required") on the same spot.
	bad map[string]bool
	// broken is set when the file is not one YAML document; there is then
	// nothing to validate.
	broken bool
}

// reported reports whether path or one of its ancestors has a parse
// diagnostic already.
func (s *source) reported(path string) bool {
	if s == nil || len(s.bad) == 0 {
		return false
	}
	for p := path; ; p = parentPath(p) {
		if s.bad[p] {
			return true
		}
		if p == "" {
			return false
		}
	}
}

func (s *source) has(path string) bool {
	if s == nil {
		return false
	}
	_, ok := s.value[path]
	return ok
}

// SourceFile is the file the cluster was parsed from ("" when built in Go).
func (c *Cluster) SourceFile() string {
	if c == nil || c.src == nil {
		return ""
	}
	return c.src.file
}

// Position returns the file, line and column of the value at a config path
// such as nodePools[1].minSize or plugins.dex.values.issuer. When the path
// itself is not in the file (a defaulted value, say) it returns the position
// of its closest ancestor that is, so a diagnostic still points somewhere
// useful. ok is false when nothing is known.
func (c *Cluster) Position(path string) (file string, line, col int, ok bool) {
	if c == nil || c.src == nil {
		return "", 0, 0, false
	}
	for p := path; ; p = parentPath(p) {
		if pos, found := c.src.value[p]; found {
			return c.src.file, pos.Line, pos.Column, true
		}
		if p == "" {
			return c.src.file, 0, 0, c.src.file != ""
		}
	}
}

// isSet reports whether path was written in cluster.yaml. For a Cluster
// built in Go (no source) it falls back to "the value is not zero", which is
// the best a Go caller can express.
func (c *Cluster) isSet(path string, zero bool) bool {
	if c.src != nil {
		return c.src.has(path)
	}
	return !zero
}

// Load reads and parses cluster.yaml. The error is for a file that cannot be
// read; everything wrong inside the file is a diagnostic. The Cluster is
// returned even with diagnostics (unknown keys and mistyped values left out)
// so that ApplyDefaults and Validate can report every other problem at once.
// A file over MaxConfigFileSize is one diagnostic, given before reading it.
func Load(path string) (*Cluster, diag.List, error) {
	data, err := readLimited(path, MaxConfigFileSize)
	if isTooLarge(err) {
		c := &Cluster{src: &source{file: path, broken: true}}
		return c, diag.List{diag.Fatalf("%s is not read: %v", filepath.Base(path), err).InFile(path, 0, 0).
			WithHint("a cluster configuration is a few KiB: check that --config names it, and keep large plugin values in plugin config files (configFiles), each under the same limit")}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading cluster configuration: %w (run `kube-aws init` to write one, or pass --config)", err)
	}
	c, diags := Parse(path, data)
	return c, diags, nil
}

// maxNodes bounds the work of one parse: aliases can make a small file
// describe an exponentially large tree (the "billion laughs"). A file of
// MaxConfigFileSize without aliases holds at most half as many nodes as it
// has bytes (a flow list of one-character items), so this is twice what any
// file under the limit can write out, and it bounds the memory of an
// expanded file by the same figure as a written-out one (2^18 took 106 MB).
const maxNodes = 2 * (MaxConfigFileSize / 2)

// Parse parses cluster.yaml bytes strictly (strict.go): unknown keys,
// duplicate keys and values of the wrong type are fatal diagnostics with
// file:line:column, the config path and, for unknown keys, the closest valid
// key. file is only used in diagnostics. The returned Cluster is never nil.
func Parse(file string, data []byte) (*Cluster, diag.List) {
	c := &Cluster{}
	pos, diags := decodeStrict(file, data, c, decodeOptions)
	// An empty (or comments-only) file decodes to nothing: every required
	// field is missing, which Validate reports one by one.
	c.src = &source{file: file, value: pos.Value, bad: pos.Bad, broken: pos.Broken}
	return c, diags
}

// decodeOptions are cluster.yaml's and every plugin config file's.
var decodeOptions = decodeOpts{
	MaxNodes:     maxNodes,
	TopLevelHint: "cluster.yaml is a mapping of keys such as `clusterName: my-cluster`; `kube-aws init` writes a commented one",
	QuoteHint:    quoteHint,
}

// yamlToJSON converts a standalone YAML document (a plugin config file) to
// JSON with the same scalar rules as cluster.yaml, reporting problems with
// the file's own line and column.
func yamlToJSON(file string, data []byte) (json.RawMessage, diag.List) {
	return strictToJSON(file, data, decodeOptions)
}
