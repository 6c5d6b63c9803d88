// Package charttest renders the Helm releases a built-in plugin contributes
// with Helm's own engine, as the helm plugin checks them at render and helm
// install would, and decodes the objects strictly into their Kubernetes
// types: a chart's misspelt field fails a unit test, not a boot. It is for
// tests only (it links Helm and k8s.io/api, which plugin binaries must not).
package charttest

import (
	"encoding/json"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/core/construct"
)

// Objects are a release's rendered objects by "<Kind>/<name>".
type Objects map[string][]byte

// Render renders a release's chart with its values; every document must be
// a Kubernetes object with apiVersion and kind.
func Render(t *testing.T, rel construct.HelmRelease) Objects {
	t.Helper()
	ch, err := loader.Load(rel.Chart.Path)
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := json.Unmarshal(rel.Values, &values); err != nil {
		t.Fatal(err)
	}
	opts := chartutil.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace, IsInstall: true}
	top, err := chartutil.ToRenderValues(ch, values, opts, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		t.Fatalf("release %s: %v", rel.Name, err)
	}
	objects := Objects{}
	for name, content := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(content, "\n---\n") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var meta struct {
				APIVersion, Kind string
				Metadata         struct{ Name string }
			}
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil || meta.APIVersion == "" || meta.Kind == "" {
				t.Fatalf("%s: not a Kubernetes object (%v):\n%s", name, err, doc)
			}
			key := meta.Kind + "/" + meta.Metadata.Name
			if objects[key] != nil {
				t.Fatalf("%s: %s rendered twice", name, key)
			}
			objects[key] = []byte(doc)
		}
	}
	return objects
}

// Decode decodes the object key strictly into into (a k8s.io/api type).
func (o Objects) Decode(t *testing.T, key string, into any) {
	t.Helper()
	doc := o[key]
	if doc == nil {
		t.Fatalf("no %s among %v", key, o.Keys())
	}
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		t.Fatalf("%s: %v:\n%s", key, err, doc)
	}
}

// Keys lists the objects.
func (o Objects) Keys() []string {
	out := make([]string, 0, len(o))
	for k := range o {
		out = append(out, k)
	}
	return out
}
