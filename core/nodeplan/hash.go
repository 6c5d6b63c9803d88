package nodeplan

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
)

// IsSHA256 reports whether s is a sha256 digest in lower-case hex, the
// form every plan and every content-addressed key uses: what
// ^[0-9a-f]{64}$ matches, checked by a loop, for every artifact of every
// machine's plan.
func IsSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// SHA256Hex is the lower-case hex sha256 of b.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// KeyDigest returns the sha256 a content-addressed key names (its last
// element), and whether it names one.
func KeyDigest(key string) (string, bool) {
	d := path.Base(key)
	return d, IsSHA256(d)
}
