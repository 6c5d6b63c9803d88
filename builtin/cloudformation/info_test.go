package cloudformation

import (
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// TestInfoSchema checks what kube-aws validates the user's values with: the
// schema compiles, accepts the values the fixtures and the example use, and
// refuses a typo and an unknown load balancer kind.
func TestInfoSchema(t *testing.T) {
	info := sdk.InfoOf(served)
	if info.Name != "cloudformation" || info.Version != version.Version || !info.Implements(stage.Initialise) || !info.Implements(stage.Render) {
		t.Fatalf("info %+v", info)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(info.ValuesSchema)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("values.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("values.json")
	if err != nil {
		t.Fatal(err)
	}
	for in, ok := range map[string]bool{
		`{}`: true,
		`{"tags":{"team":"a"},"apiLoadBalancer":"classic"}`: true,
		`{"apiLoadBalancer":"alb"}`:                         false,
		`{"tag":{"team":"a"}}`:                              false,
		`{"tags":{"team":1}}`:                               false,
	} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); (err == nil) != ok {
			t.Errorf("%s: valid %v, want %v (%v)", in, err == nil, ok, err)
		}
	}
}
