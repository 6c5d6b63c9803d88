package config

import (
	"strconv"
	"strings"
)

// parentPath strips the last element of a config path:
// nodePools[1].minSize -> nodePools[1] -> nodePools -> "".
func parentPath(p string) string {
	if p == "" {
		return ""
	}
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	// A quoted key may contain dots: labels["a.b/c"].
	if p[len(p)-1] == ']' {
		if j := strings.LastIndex(p, "[\""); j >= 0 && strings.HasSuffix(p, "\"]") {
			return p[:j]
		}
	}
	return p[:i]
}

// plainKey reports whether key is [A-Za-z0-9_-]+ (hand-written: this runs
// for every key of every file).
func plainKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// JoinPath appends a map key or struct field to a config path. Keys that
// are not plain identifiers are quoted: labels["node.kubernetes.io/role"].
func JoinPath(parent, key string) string {
	if !plainKey(key) {
		return parent + "[" + strconv.Quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// IndexPath appends a list index to a config path: nodePools[1].
func IndexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// lastElem is the last element of a config path, unquoted, as a user
// writes it as a key: nodePools[1].minSize -> minSize, labels["a.b/c"] ->
// a.b/c; "the top level" for the empty path.
func lastElem(path string) string {
	if path == "" {
		return "the top level"
	}
	p := parentPath(path)
	s := strings.TrimPrefix(path[len(p):], ".")
	if strings.HasPrefix(s, "[\"") {
		if u, err := strconv.Unquote(s[1 : len(s)-1]); err == nil {
			return u
		}
	}
	return s
}
