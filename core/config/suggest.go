package config

import "github.com/kube-aws/kube-aws/core/diag"

// SuggestKey returns the valid key nearest to key, or "" when none is close
// enough to be a plausible typo: longer keys may carry more typos. It is
// the "did you mean" of every unknown key kube-aws reports, in cluster.yaml,
// in a plugin's values and among plugin names.
func SuggestKey(key string, valid []string) string {
	return diag.Closest(key, valid, max(2, len(key)/3))
}

func closest(key string, valid []string) string { return SuggestKey(key, valid) }
