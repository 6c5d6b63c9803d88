package charts

import (
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// The patched Helm under third_party/ writes out the API versions that its
// release computes at package init from client-go's scheme, so that the
// built-ins do not link the scheme. A chart's .Capabilities.APIVersions must
// be what the release gives, for the client-go this module builds with: a
// client-go upgrade that changes the list fails here, and the list in the
// patch is to be written out again.
func TestDefaultVersionSetIsTheReleases(t *testing.T) {
	if err := apiextensionsv1beta1.AddToScheme(scheme.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme.Scheme); err != nil {
		t.Fatal(err)
	}
	var want chartutil.VersionSet
	for _, gv := range scheme.Scheme.PrioritizedVersionsAllGroups() {
		want = append(want, gv.String())
	}
	if len(want) < 50 || !slices.Equal(chartutil.DefaultVersionSet, want) {
		t.Errorf("chartutil.DefaultVersionSet =\n%q\nclient-go's scheme gives\n%q", chartutil.DefaultVersionSet, want)
	}
}

// Rendering offline, the built-ins do not link a discovery client; a lookup
// with a cluster's address (which the helm plugin never gives) says so
// rather than reaching out.
func TestLookupWithoutADiscoveryClientSaysSo(t *testing.T) {
	_, err := engine.NewLookupFunction(&rest.Config{Host: "http://127.0.0.1:1"})("v1", "ConfigMap", "kube-system", "cluster-info")
	if err == nil || !strings.Contains(err.Error(), "no discovery client is linked") {
		t.Errorf("err = %v", err)
	}
}
