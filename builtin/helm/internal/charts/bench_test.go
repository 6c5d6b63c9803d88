package charts

import (
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
)

// BenchmarkPackage packages one of the kubernetes plugin's add-on charts,
// as every render does for each chart a plugin ships:
//
//	go test -run '^$' -bench Package -benchmem ./builtin/helm/internal/charts
func BenchmarkPackage(b *testing.B) {
	ch, err := loader.Load("../../../kubernetes/internal/addons/charts/kube-proxy")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Package(ch); err != nil {
			b.Fatal(err)
		}
	}
}
