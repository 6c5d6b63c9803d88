package config

// SuggestKey returns the valid key nearest to key, or "" when none is close
// enough to be a plausible typo: longer keys may carry more typos. It is
// the "did you mean" of every unknown key kube-aws reports, in cluster.yaml
// (closest, the decoder's own rule), in a plugin's values and
// among plugin names.
func SuggestKey(key string, valid []string) string { return closest(key, valid) }
