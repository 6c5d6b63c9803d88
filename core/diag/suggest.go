package diag

import "strings"

// maxSuggestRunes bounds the strings EditDistance compares: a fuzzed or
// pasted key of thousands of characters is no typo of a valid one, and the
// quadratic comparison must not make a bad cluster.yaml slow to reject.
const maxSuggestRunes = 256

// EditDistance is the Levenshtein distance between a and b, counted in
// runes. It gives up and returns limit+1 once the distance must exceed
// limit, or when either string is longer than 256 runes.
func EditDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > maxSuggestRunes || len(rb) > maxSuggestRunes {
		return limit + 1
	}
	if d := len(ra) - len(rb); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			best = min(best, cur[j])
		}
		if best > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Closest returns the candidate nearest to name, ignoring case, when it is
// at most maxDist edits away: the "did you mean" of a diagnostic. Ties go to
// the alphabetically first candidate, so the suggestion is the same every
// run whatever order the candidates come in. "" when none is close enough.
func Closest(name string, candidates []string, maxDist int) string {
	best, bestD := "", maxDist+1
	ln := strings.ToLower(name)
	for _, c := range candidates {
		d := EditDistance(ln, strings.ToLower(c), maxDist)
		if d < bestD || (d == bestD && d <= maxDist && c < best) {
			best, bestD = c, d
		}
	}
	return best
}
