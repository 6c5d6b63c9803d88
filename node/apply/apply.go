// Package apply server-side applies Kubernetes manifests (YAML or JSON,
// one or more documents, List kinds expanded) with a dynamic client, as
// field manager kube-aws-node, taking ownership of the fields it sets
// (force), so that applying the same manifests again changes nothing and a
// changed manifest wins over what it applied before.
package apply

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/node/retry"
)

// FieldManager is the field manager of everything kube-aws-node applies.
const FieldManager = "kube-aws-node"

// Applier applies manifests.
type Applier struct {
	Dynamic dynamic.Interface
	// Mapper maps kinds to resources; a meta.ResettableRESTMapper is reset
	// when a kind is missing, since a CRD a release installed a moment ago
	// may be served by now.
	Mapper meta.RESTMapper
}

// Object is one object of a manifest, where it was found.
type Object struct {
	Doc int
	Obj *unstructured.Unstructured
}

func (o Object) String() string {
	s := fmt.Sprintf("document %d: %s %s", o.Doc, o.Obj.GetKind(), o.Obj.GetName())
	if ns := o.Obj.GetNamespace(); ns != "" {
		s = fmt.Sprintf("document %d: %s %s/%s", o.Doc, o.Obj.GetKind(), ns, o.Obj.GetName())
	}
	return s
}

// Parse reads every object of a manifest file. Errors name the document
// (1-based) and are permanent: the file will not change by itself.
func Parse(data []byte) ([]Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []Object
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, retry.Permanent(fmt.Errorf("document %d: %v", doc, err))
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, retry.Permanent(fmt.Errorf("document %d: not YAML: %v", doc, err))
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			return nil, retry.Permanent(fmt.Errorf("document %d: not a Kubernetes object (apiVersion and kind): %v", doc, err))
		}
		if obj.IsList() {
			list, err := obj.ToList()
			if err != nil {
				return nil, retry.Permanent(fmt.Errorf("document %d: %v", doc, err))
			}
			for i := range list.Items {
				out = append(out, Object{Doc: doc, Obj: &list.Items[i]})
			}
			continue
		}
		if obj.GetName() == "" {
			return nil, retry.Permanent(fmt.Errorf("document %d: %s has no metadata.name (server-side apply needs one)", doc, obj.GetKind()))
		}
		out = append(out, Object{Doc: doc, Obj: obj})
	}
}

func stripComments(b []byte) []byte {
	var out bytes.Buffer
	for _, l := range strings.Split(string(b), "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			out.WriteString(l + "\n")
		}
	}
	return out.Bytes()
}

// Apply applies every object in order and returns how many it applied.
func (a *Applier) Apply(ctx context.Context, objs []Object) (int, error) {
	for i, o := range objs {
		if err := a.one(ctx, o); err != nil {
			return i, fmt.Errorf("%s: %w", o, err)
		}
	}
	return len(objs), nil
}

func (a *Applier) one(ctx context.Context, o Object) error {
	gvk := o.Obj.GroupVersionKind()
	m, err := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			if r, ok := a.Mapper.(meta.ResettableRESTMapper); ok {
				r.Reset()
			}
			return fmt.Errorf("the API server does not serve %s (yet: a CRD may still be getting established): %w", gvk, err)
		}
		return err
	}
	var res dynamic.ResourceInterface = a.Dynamic.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := o.Obj.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		res = a.Dynamic.Resource(m.Resource).Namespace(ns)
	}
	_, err = res.Apply(ctx, o.Obj.GetName(), o.Obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}
