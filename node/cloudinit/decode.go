package cloudinit

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
)

// decode is cloud-init's canonicalize_extraction and extract_contents: the
// encodings it knows, base64 before gzip; an unknown one is a warning and
// the content is taken as text.
func decode(content []byte, encoding string) (out []byte, warning string, err error) {
	var b64, gz bool
	switch e := strings.ToLower(strings.TrimSpace(encoding)); e {
	case "gz", "gzip":
		gz = true
	case "gz+base64", "gzip+base64", "gz+b64", "gzip+b64":
		b64, gz = true, true
	case "b64", "base64":
		b64 = true
	case "", "text/plain":
	default:
		warning = fmt.Sprintf("unknown encoding %q, taken as text/plain", encoding)
	}
	out = content
	if b64 {
		// Python's b64decode discards characters outside the alphabet
		// (newlines in a folded YAML string, say).
		clean := bytes.Map(func(r rune) rune {
			if r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '/' || r == '=' {
				return r
			}
			return -1
		}, out)
		out, err = base64.StdEncoding.DecodeString(string(clean))
		if err != nil {
			return nil, "", fmt.Errorf("not base64: %v", err)
		}
	}
	if gz {
		r, err := gzip.NewReader(bytes.NewReader(out))
		if err != nil {
			return nil, "", fmt.Errorf("not gzip: %v", err)
		}
		out, err = io.ReadAll(r)
		if err != nil {
			return nil, "", fmt.Errorf("not gzip: %v", err)
		}
	}
	return out, warning, nil
}
