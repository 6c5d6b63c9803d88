package helmrelease

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/client-go/rest"
)

// kube-aws-node installs charts through Helm's action package, which links
// the discovery client that the patched Helm under third_party/ keeps out of
// the engine: a chart's lookup function still reads the cluster.
func TestLookupReadsTheCluster(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1":
			w.Write([]byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"v1","resources":[{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["get","list"]}]}`))
		case "/api/v1/namespaces/kube-system/configmaps/cluster-info":
			w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cluster-info","namespace":"kube-system"},"data":{"k":"v"}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	lookup := engine.NewLookupFunction(&rest.Config{Host: srv.URL})
	obj, err := lookup("v1", "ConfigMap", "kube-system", "cluster-info")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := obj["data"].(map[string]interface{})
	if data["k"] != "v" {
		t.Errorf("lookup returned %v", obj)
	}
	missing, err := lookup("v1", "ConfigMap", "kube-system", "missing")
	if err != nil || len(missing) != 0 {
		t.Errorf("a missing object: %v, %v; want an empty map and no error", missing, err)
	}
}
