package stages

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func pemKey(seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 1))
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var b strings.Builder
	b.WriteString("-----BEGIN EC PRIVATE KEY-----\n")
	for i := range 160 {
		if i > 0 && i%64 == 0 {
			b.WriteByte('\n')
		}
		b.WriteByte(b64[r.IntN(len(b64))])
	}
	b.WriteString("\n-----END EC PRIVATE KEY-----\n")
	return b.String()
}

func TestHoldsSecret(t *testing.T) {
	key := pemKey(1)
	off := (len(key) - anchorLen) / 2
	anchor := key[off : off+anchorLen]
	repeated := strings.Repeat("ab", 60)
	for _, tc := range []struct {
		name, content, plain string
	}{
		{"short secret held", "token: s3cr3t-value\n", "s3cr3t-value"},
		{"short secret not held", "token: s3cr3t-valu\n", "s3cr3t-value"},
		{"key alone", key, key},
		{"key at the start", key + "rest", key},
		{"key at the end", "---\nkey: |\n" + key, key},
		{"key in the middle", "a: -----BEGIN\n" + key + "b: -----END\n", key},
		{"key indented, so not held", "key: |\n  " + strings.ReplaceAll(key, "\n", "\n  "), key},
		{"only the middle of the key", "x" + anchor + "y", key},
		{"middle of the key before the key", anchor + key, key},
		{"middle of the key too near the start", key[off:] + key[:off], key},
		{"key less its last byte", key[:len(key)-1], key},
		{"key less its first byte", key[1:], key},
		{"text shorter than the key", "-----BEGIN", key},
		{"empty text", "", key},
		{"repeating secret held", "b" + repeated + "a", repeated},
		{"repeating secret not held", strings.Repeat("ab", 59) + "a", repeated},
		{"repeating secret among its pieces", strings.Repeat("ab", 40) + "x" + strings.Repeat("ab", 70), repeated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := bytes.Contains([]byte(tc.content), []byte(tc.plain))
			if got := holdsSecret([]byte(tc.content), tc.plain); got != want {
				t.Errorf("holdsSecret = %v, bytes.Contains = %v", got, want)
			}
		})
	}
}

// renderedLike is text like the render output: YAML and JSON with many a
// "-----BEGIN" and "-" but no secret.
func renderedLike(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "- path: /etc/kubernetes/pki/node-%d.crt\n  content: |\n    -----BEGIN CERTIFICATE-----\n    MIIBszCCAVmgAwIBAgIRAK-%d\n    -----END CERTIFICATE-----\n", i, i)
	}
	return b.Bytes()
}

// BenchmarkHoldsSecret searches 1 MB of rendered text for ten PEM keys;
// contains is bytes.Contains, which the output check used before.
func BenchmarkHoldsSecret(b *testing.B) {
	content := renderedLike(1 << 20)
	keys := make([]string, 10)
	for i := range keys {
		keys[i] = pemKey(uint64(i))
	}
	b.Run("anchor", func(b *testing.B) {
		b.SetBytes(int64(len(content) * len(keys)))
		for b.Loop() {
			for _, k := range keys {
				if holdsSecret(content, k) {
					b.Fatal("found")
				}
			}
		}
	})
	b.Run("contains", func(b *testing.B) {
		b.SetBytes(int64(len(content) * len(keys)))
		for b.Loop() {
			for _, k := range keys {
				if bytes.Contains(content, []byte(k)) {
					b.Fatal("found")
				}
			}
		}
	})
}
