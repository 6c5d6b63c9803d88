package nodeplan

import (
	"fmt"
	"regexp"
)

// MarkerPattern matches a secret marker, ((secret:<plugin>/<json-pointer>)),
// exactly as kube-aws writes them (core/config.MarkerPattern; a test keeps
// the two equal). A marker holds no character that JSON, YAML or an
// environment file would escape.
var MarkerPattern = regexp.MustCompile(`\(\(secret:[A-Za-z0-9._~%/-]+\)\)`)

// SecretsPlan (SecretsPath) lists every file the role's userdata writes
// with ((secret:...)) markers in it. The `secrets` step fetches each
// marker's ciphertext from roles/<role>/secrets/<sha256 of the marker>,
// decrypts it with KMS under the role's encryption context
// (Settings.EncryptionContext) and replaces the marker by its value, encoded
// for the file's Format. Only listed files are touched: a marker in any
// other file stays as it is.
type SecretsPlan struct {
	Files []SecretFile `json:"files"`
}

// SecretFile is one file holding markers.
type SecretFile struct {
	// Path is the file on the machine.
	Path string `json:"path"`
	// Format says how the file is parsed and the values encoded; see the
	// Format constants.
	Format Format `json:"format"`
}

// Format is how a file holding markers is parsed, and how a secret's value
// is encoded in it. Substitution is structural: markers are found only
// where the format has string values, and the file is written back in the
// same format, so a value holding quotes, backslashes or newlines comes out
// exactly as given.
type Format string

const (
	// FormatJSON: markers inside JSON strings (values or keys). The string
	// is re-encoded (`"` -> `\"`, newline -> `\n`); the rest of the file is
	// kept byte for byte.
	FormatJSON Format = "json"
	// FormatYAML: markers inside YAML scalars, every document of the file.
	// The scalar becomes a string in a style that holds the value
	// (double-quoted, or a literal block for several lines); comments and
	// key order are kept, the layout is normalised (two-space indent).
	FormatYAML Format = "yaml"
	// FormatEnv: an environment file as systemd's EnvironmentFile= and a
	// POSIX shell's `.` read it: NAME=value lines, # comments. A value with
	// a marker is written back double-quoted, with \ " $ and ` escaped and
	// newlines kept, which both read back as the exact value.
	FormatEnv Format = "env"
	// FormatWhole: the whole file is one marker (surrounding whitespace
	// allowed) and becomes the secret's bytes exactly, with nothing added
	// (a key, a certificate, a token).
	FormatWhole Format = "whole"
)

// Formats lists every format.
var Formats = []Format{FormatJSON, FormatYAML, FormatEnv, FormatWhole}

// Validate implements Plan.
func (p *SecretsPlan) Validate() error {
	var c checker
	seen := map[string]int{}
	for i, f := range p.Files {
		field := fmt.Sprintf("files[%d]", i)
		c.absPath(field+".path", f.Path)
		if j, dup := seen[f.Path]; dup && f.Path != "" {
			c.add(field+".path", "%s is listed twice (files[%d] too)", f.Path, j)
		}
		seen[f.Path] = i
		if !ValidFormat(f.Format) {
			c.add(field+".format", "%q is not a format: want one of %v", f.Format, Formats)
		}
	}
	return c.err()
}

// ValidFormat reports whether f is one of Formats.
func ValidFormat(f Format) bool {
	for _, k := range Formats {
		if f == k {
			return true
		}
	}
	return false
}
