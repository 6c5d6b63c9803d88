package diag

import (
	"strings"
	"testing"
)

func TestEditDistance(t *testing.T) {
	cases := []struct {
		a, b  string
		limit int
		want  int
	}{
		{"region", "region", 5, 0},
		{"regoin", "region", 5, 2},
		{"kitten", "sitting", 5, 3},
		{"", "abc", 5, 3},
		{"zürich", "zurich", 5, 1},  // runes, not bytes
		{"kitten", "sitting", 2, 3}, // gives up past the limit: limit+1
		{"a", "abcdefgh", 3, 4},     // lengths alone rule it out
		{strings.Repeat("a", 300), strings.Repeat("a", 300), 2, 3},
	}
	for _, c := range cases {
		if got := EditDistance(c.a, c.b, c.limit); got != c.want {
			t.Errorf("EditDistance(%q, %q, %d) = %d, want %d", c.a, c.b, c.limit, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	valid := []string{"region", "availabilityZones", "clusterName", "regions"}
	cases := []struct {
		name string
		max  int
		want string
	}{
		{"regoin", 2, "region"},
		{"REGION", 2, "region"},           // case is ignored
		{"clustername", 2, "clusterName"}, // case is ignored
		{"availabilityzone", 2, "availabilityZones"},
		{"nothingalike", 2, ""},
		{"regio", 1, "region"}, // region (1) beats regions (2)
		{"reg", 1, ""},         // too far for the limit
	}
	for _, c := range cases {
		if got := Closest(c.name, valid, c.max); got != c.want {
			t.Errorf("Closest(%q, max %d) = %q, want %q", c.name, c.max, got, c.want)
		}
	}
	// Ties resolve alphabetically, whatever the order of the candidates.
	for _, order := range [][]string{{"cat", "bat"}, {"bat", "cat"}} {
		if got := Closest("at", order, 1); got != "bat" {
			t.Errorf("Closest(at, %v) = %q, want bat", order, got)
		}
	}
}
