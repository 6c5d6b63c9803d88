package config

import "strings"

// SecretSearch looks for several secrets in a text at once. Redact and the
// output check look for every secret of a cluster in texts of a MB (the
// state of 100 node pools, the rendered files); looking for each secret in
// turn read the whole text once per secret, and each of them as it is and
// as JSON writes it: about 25 passes over the state of the example.
//
// It reads the text once, 8 bytes at every 16th position, and looks those
// bytes up among the 8-byte pieces of each secret's anchor (as in
// ContainsSecret, a piece of up to anchorLen bytes from the secret's
// middle). An anchor of 23 bytes or more has a piece at offset 0 to len-8
// that starts at one of the positions read, wherever the anchor lies in the
// text, so no occurrence is missed; a position whose bytes match a piece is
// then checked against the whole secret. Secrets shorter than that are
// looked for one by one, as before.
type SecretSearch struct {
	secrets []string
	short   []int // secrets too short to index
	// seen has a bit for the hash of every indexed piece, so that a
	// position of the text costs a load, a multiplication and a bit test
	// unless it may start one; at holds where each piece is.
	seen [1 << (seenBits - 6)]uint64
	at   map[uint64][]pieceAt
}

// pieceAt is where an 8-byte piece of an anchor lies in its secret.
type pieceAt struct {
	secret int
	offset int
}

const (
	pieceLen    = 8
	searchEvery = 16
	// minIndexed is the shortest anchor whose pieces cover every position
	// it can start at, modulo searchEvery.
	minIndexed = searchEvery + pieceLen - 1
	seenBits   = 16
)

// NewSecretSearch prepares a search for secrets; First reports them by
// their index in this slice. Empty strings are never found.
func NewSecretSearch(secrets []string) *SecretSearch {
	s := &SecretSearch{secrets: secrets, at: map[uint64][]pieceAt{}}
	for i, plain := range secrets {
		if plain == "" {
			continue
		}
		if len(plain) < minIndexed {
			s.short = append(s.short, i)
			continue
		}
		n := min(len(plain), anchorLen)
		off := (len(plain) - n) / 2
		for o := off; o+pieceLen <= off+n; o++ {
			p := load64(plain, o)
			h := seenHash(p)
			s.seen[h>>6] |= 1 << (h & 63)
			s.at[p] = append(s.at[p], pieceAt{secret: i, offset: o})
		}
	}
	return s
}

// First returns the index of the first secret, in the order NewSecretSearch
// was given them, that text holds; -1 if it holds none.
func (s *SecretSearch) First(text string) int {
	first := -1
	for i := 0; i+pieceLen <= len(text); i += searchEvery {
		p := load64(text, i)
		h := seenHash(p)
		if s.seen[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for _, at := range s.at[p] {
			if first >= 0 && at.secret >= first {
				continue
			}
			plain := s.secrets[at.secret]
			start := i - at.offset
			if start >= 0 && start+len(plain) <= len(text) && text[start:start+len(plain)] == plain {
				first = at.secret
			}
		}
	}
	for _, i := range s.short {
		if first >= 0 && i >= first {
			break
		}
		if strings.Contains(text, s.secrets[i]) {
			first = i
		}
	}
	return first
}

// load64 is the 8 bytes of s at i as one number; the compiler makes one
// load of it.
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// seenHash spreads a piece over seenBits bits (Fibonacci hashing).
func seenHash(p uint64) uint64 {
	return (p * 0x9e3779b97f4a7c15) >> (64 - seenBits)
}
