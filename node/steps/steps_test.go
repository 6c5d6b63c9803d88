package steps

import (
	"path"
	"reflect"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// Every declared step has its implementation, in the declared order, in a
// package named as the step.
func TestAll(t *testing.T) {
	var declared, got []string
	for _, d := range nodeplan.Steps() {
		if d.Name != nodeplan.Units {
			declared = append(declared, d.Name)
		}
	}
	for _, s := range All() {
		got = append(got, s.Name())
		pkg := path.Base(reflect.TypeOf(s).Elem().PkgPath())
		if want := strings.ReplaceAll(s.Name(), "-", ""); pkg != want {
			t.Errorf("step %s is in package %s, want %s", s.Name(), pkg, want)
		}
	}
	if strings.Join(got, " ") != strings.Join(declared, " ") {
		t.Errorf("steps %v\ndeclared %v", got, declared)
	}
	if len(implementations) != len(declared) {
		t.Errorf("%d implementations for %d declared steps", len(implementations), len(declared))
	}
}
