package stages

import (
	_ "embed"
	"fmt"
	"sort"

	"sigs.k8s.io/yaml"
)

//go:embed order.yaml
var orderYAML []byte

// DefaultOrder is the plugin order shipped with kube-aws (stages/order.yaml).
func DefaultOrder() []string {
	var f struct {
		Order []string `json:"order"`
	}
	if err := yaml.UnmarshalStrict(orderYAML, &f); err != nil {
		// The file is embedded at build time and covered by a test, so this is
		// a broken build, not a user error.
		panic(fmt.Sprintf("stages/order.yaml: %v", err))
	}
	return f.Order
}

// Order sorts names by their position in order; names not in order come
// last, alphabetically. Order decides merge and install order only, never a
// conflict, so an unlisted plugin is not an error.
func Order(names []string, order []string) []string {
	pos := make(map[string]int, len(order))
	for i, n := range order {
		if _, dup := pos[n]; !dup {
			pos[n] = i
		}
	}
	out := append([]string(nil), names...)
	sort.SliceStable(out, func(i, j int) bool {
		pi, iok := pos[out[i]]
		pj, jok := pos[out[j]]
		switch {
		case iok && jok:
			return pi < pj
		case iok != jok:
			return iok
		default:
			return out[i] < out[j]
		}
	})
	return out
}
