package config

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/test/pemtest"
)

// firstByContains is what SecretSearch.First must return: the lowest index
// of a non-empty secret text holds.
func firstByContains(text string, secrets []string) int {
	for i, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			return i
		}
	}
	return -1
}

// TestSecretSearchIsContains: on texts holding secrets of every length at
// every offset modulo the positions the search reads, near misses and
// several secrets at once, First agrees with strings.Contains secret by
// secret.
func TestSecretSearchIsContains(t *testing.T) {
	key := pemtest.Key(7)
	quoted, _ := json.Marshal(key)
	secrets := []string{
		key,                                 // long: its middle is indexed
		string(quoted[1 : len(quoted)-1]),   // the same inside a JSON string
		"0123456789abcdefghijklmnopqrstuvw", // 33 bytes: all of it indexed
		"tokentokentokentokentok",           // 23, the shortest indexed
		"tokentokentokentokento",            // 22: looked for on its own
		"pass12",                            // short
		"",                                  // never found
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", // repeats itself
	}
	search := NewSecretSearch(secrets)
	filler := stateLike(3000)
	check := func(t *testing.T, text string) {
		t.Helper()
		if got, want := search.First(text), firstByContains(text, secrets); got != want {
			t.Fatalf("First = %d, strings.Contains says %d (text of %d bytes)", got, want, len(text))
		}
	}
	t.Run("none", func(t *testing.T) { check(t, filler); check(t, ""); check(t, "short") })
	for i, s := range secrets {
		if s == "" {
			continue
		}
		t.Run(fmt.Sprintf("secret %d at every offset", i), func(t *testing.T) {
			for at := range 2 * searchEvery {
				check(t, filler[:at]+s)
				check(t, filler[:at]+s+filler)
				check(t, s+filler[:at])
				check(t, filler[:at]+s[:len(s)-1]+filler) // less its last byte
				check(t, filler[:at]+s[1:]+filler)        // less its first byte
				check(t, filler[:at]+s[:len(s)/2]+"#"+s[len(s)/2+1:]+filler)
			}
		})
	}
	t.Run("several, the later one first in the text", func(t *testing.T) {
		check(t, filler+secrets[3]+filler+secrets[0]+filler)
		check(t, secrets[5]+filler+secrets[2])
		check(t, "xx"+secrets[7]+"A"+secrets[4])
	})
	t.Run("random", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for range 2000 {
			var b strings.Builder
			for b.Len() < r.IntN(4000) {
				switch r.IntN(4) {
				case 0:
					s := secrets[r.IntN(len(secrets))]
					if r.IntN(2) == 0 && len(s) > 2 {
						s = s[r.IntN(2) : len(s)-r.IntN(2)]
					}
					b.WriteString(s)
				default:
					n := r.IntN(200)
					b.WriteString(filler[r.IntN(len(filler)-n):][:n])
				}
			}
			check(t, b.String())
		}
	})
}

// BenchmarkSecretSearch is the search Redact makes of a state file of 100
// node pools (a MB) for ten keys, each as it is and inside a JSON string,
// against looking for each of them in turn.
func BenchmarkSecretSearch(b *testing.B) {
	text := stateLike(1 << 20)
	var secrets []string
	for i := range 10 {
		k := pemtest.Key(uint64(i))
		q, _ := json.Marshal(k)
		secrets = append(secrets, k, string(q[1:len(q)-1]))
	}
	b.Run("one pass", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if NewSecretSearch(secrets).First(text) >= 0 {
				b.Fatal("found")
			}
		}
	})
	b.Run("one by one", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			for _, s := range secrets {
				if ContainsSecret(text, s) {
					b.Fatal("found")
				}
			}
		}
	})
}
