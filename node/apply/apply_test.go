package apply

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	widgets    = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// fakeCluster is a dynamic client whose tracker does server-side apply
// with managed fields, as an API server does, and a mapper that knows a
// kind only once told (a CRD getting established).
func fakeCluster(t *testing.T) (*dynamicfake.FakeDynamicClient, *meta.DefaultRESTMapper, clienttesting.ObjectTracker) {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Namespace"}, {Group: "example.com", Version: "v1", Kind: "Widget"},
	} {
		scheme.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
		scheme.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &unstructured.UnstructuredList{})
	}
	dyn := dynamicfake.NewSimpleDynamicClient(scheme)
	tracker := clienttesting.NewFieldManagedObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder(), managedfields.NewDeducedTypeConverter())
	dyn.PrependReactor("*", "*", clienttesting.ObjectReaction(tracker))
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	return dyn, mapper, tracker
}

const manifest = `# kube-aws add-on
apiVersion: v1
kind: Namespace
metadata:
  name: monitoring
---
# only a comment
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: monitoring
data:
  level: info
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: in-default
  data: {a: b}
`

func TestApply(t *testing.T) {
	dyn, mapper, tracker := fakeCluster(t)
	objs, err := Parse([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 || objs[0].Doc != 1 || objs[1].Doc != 3 || objs[2].Doc != 4 {
		t.Fatalf("parsed %v", objs)
	}
	a := &Applier{Dynamic: dyn, Mapper: mapper}
	n, err := a.Apply(context.Background(), objs)
	if err != nil || n != 3 {
		t.Fatalf("Apply = %d, %v", n, err)
	}
	got, err := tracker.Get(configMaps, "monitoring", "settings")
	if err != nil {
		t.Fatal(err)
	}
	u := got.(*unstructured.Unstructured)
	if v, _, _ := unstructured.NestedString(u.Object, "data", "level"); v != "info" {
		t.Errorf("data = %v", u.Object["data"])
	}
	if mf := u.GetManagedFields(); len(mf) != 1 || mf[0].Manager != FieldManager || mf[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("managed fields = %+v", mf)
	}
	if _, err := tracker.Get(configMaps, "default", "in-default"); err != nil {
		t.Errorf("an object without a namespace goes to default: %v", err)
	}
	if _, err := tracker.Get(namespaces, "", "monitoring"); err != nil {
		t.Errorf("namespace: %v", err)
	}
	// Again, changed: the apply wins, nothing else changes.
	objs2, _ := Parse([]byte(strings.Replace(manifest, "level: info", "level: debug", 1)))
	if _, err := a.Apply(context.Background(), objs2); err != nil {
		t.Fatal(err)
	}
	got, _ = tracker.Get(configMaps, "monitoring", "settings")
	if v, _, _ := unstructured.NestedString(got.(*unstructured.Unstructured).Object, "data", "level"); v != "debug" {
		t.Errorf("after a change: %v", v)
	}
}

// resettable is a mapper that learns a kind when reset, as a discovery
// mapper does once a CRD is served.
type resettable struct {
	*meta.DefaultRESTMapper
	resets int
}

func (r *resettable) Reset() {
	r.resets++
	r.Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, meta.RESTScopeNamespace)
}

func TestApplyKindNotServedYet(t *testing.T) {
	dyn, mapper, tracker := fakeCluster(t)
	r := &resettable{DefaultRESTMapper: mapper}
	a := &Applier{Dynamic: dyn, Mapper: r}
	objs, _ := Parse([]byte("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: apps\nspec:\n  size: 3\n"))
	_, err := a.Apply(context.Background(), objs)
	if err == nil || !strings.Contains(err.Error(), "document 1: Widget apps/w: the API server does not serve example.com/v1, Kind=Widget (yet") || r.resets != 1 {
		t.Fatalf("first apply: %v (resets %d)", err, r.resets)
	}
	if _, err := a.Apply(context.Background(), objs); err != nil {
		t.Fatalf("after the reset: %v", err)
	}
	if _, err := tracker.Get(widgets, "apps", "w"); err != nil {
		t.Error(err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\nkind: [\n", "document 2: not YAML"},
		{"metadata:\n  name: a\n", "document 1: not a Kubernetes object (apiVersion and kind)"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "document 1: ConfigMap has no metadata.name"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.in, err, tt.want)
		}
	}
}
