// Package pemtest makes PEM private keys of seeded random base64 for tests
// that look for secrets in text: the same seed, the same key, and text full
// of other PEM blocks to look in is easy to make beside it.
package pemtest

import (
	"math/rand/v2"
	"strings"
)

// Key is an EC private key in PEM of 160 random base64 characters drawn
// from seed, in lines of 64.
func Key(seed uint64) string {
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
