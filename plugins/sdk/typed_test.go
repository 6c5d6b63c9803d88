package sdk

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/stage"
)

type greeting struct {
	Greeting string `json:"greeting"`
	Times    int    `json:"times,omitempty"`
}

type hello struct{ reg *stage.Registration }

func (hello) Info() stage.PluginInfo { return stage.PluginInfo{Name: "hello"} }

func (hello) Initialise(_ context.Context, in *Input[greeting]) (*stage.Result, error) {
	pools, err := in.NodePools()
	if err != nil {
		return nil, err
	}
	out, _ := json.Marshal(map[string]any{"cluster": in.Cluster.ClusterName, "values": in.Values, "pools": pools})
	return &stage.Result{Values: out}, nil
}

func (hello) Validate(context.Context, *Input[greeting]) (*stage.Result, error) { return nil, nil }

func (h *hello) Registered(reg stage.Registration) { h.reg = &reg }

// A typed plugin gets the cluster, its values and each pool's values
// decoded, declares exactly the stages it has typed methods for, and is
// refused a stage it lacks like any plugin.
func TestTyped(t *testing.T) {
	h := &hello{}
	p := Typed[greeting](h)
	if got := InfoOf(p).Stages; !reflect.DeepEqual(got, []stage.Name{stage.Initialise, stage.Validate}) {
		t.Errorf("stages %v", got)
	}
	req := &Request{Plugin: "hello", Input: &stage.Input{
		Stage:  stage.Initialise,
		Config: json.RawMessage(`{"clusterName":"demo","nodePools":[{"name":"a"},{"name":"b"}]}`),
		Values: map[string]stage.PluginValues{"hello": {
			Values:    json.RawMessage(`{"greeting":"hi"}`),
			NodePools: map[string]json.RawMessage{"b": json.RawMessage(`{"greeting":"hi","times":2}`)},
		}},
	}}
	res, err := Call(context.Background(), p, req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"cluster":"demo","pools":{"a":{"greeting":"hi"},"b":{"greeting":"hi","times":2}},"values":{"greeting":"hi"}}`
	if string(res.Values) != want {
		t.Errorf("decoded %s\nwant    %s", res.Values, want)
	}

	req.Stage = stage.Render
	if _, err := Call(context.Background(), p, req); err == nil || !strings.Contains(err.Error(), `plugin hello does not implement stage "render" (it implements [initialise validate])`) {
		t.Errorf("missing stage: %v", err)
	}

	req.Stage = stage.Initialise
	req.Values["hello"] = stage.PluginValues{Values: json.RawMessage(`{"greeting":3}`)}
	if _, err := Call(context.Background(), p, req); err == nil || !strings.Contains(err.Error(), "decoding values of plugin hello") {
		t.Errorf("bad values: %v", err)
	}

	p.(RegistrationObserver).Registered(stage.Registration{Accepted: true})
	if h.reg == nil || !h.reg.Accepted {
		t.Error("registration not passed on")
	}
}

// typedEverything has a typed method for every stage and operation.
type typedEverything struct{}

func (typedEverything) Info() stage.PluginInfo { return stage.PluginInfo{Name: "typed"} }
func (typedEverything) Initialise(context.Context, *Input[NoValues]) (*stage.Result, error) {
	return said(stage.Initialise)
}
func (typedEverything) Render(context.Context, *Input[NoValues]) (*stage.Result, error) {
	return said(stage.Render)
}
func (typedEverything) Deploy(context.Context, *Input[NoValues]) (*stage.Result, error) {
	return said(stage.Deploy)
}
func (typedEverything) Validate(context.Context, *Input[NoValues]) (*stage.Result, error) {
	return said(stage.Validate)
}
func (typedEverything) Diff(context.Context, *Input[NoValues]) (*stage.Result, error) {
	return said(stage.Diff)
}
func (typedEverything) Destroy(context.Context, *Input[NoValues]) (*stage.Result, error) {
	return said(stage.Destroy)
}
func (typedEverything) AdminCredential(context.Context, *Input[NoValues]) (*stage.Result, error) {
	return said(stage.AdminCredential)
}

// Typed declares and reaches every stage and operation as Serve does for a
// plugin written against *Request.
func TestTypedEveryStageAndOperation(t *testing.T) {
	p := Typed[NoValues](typedEverything{})
	want := append(append([]stage.Name{}, stage.All...), stage.Operations...)
	if got := InfoOf(p).Stages; !reflect.DeepEqual(got, want) {
		t.Errorf("stages %v, want %v", got, want)
	}
	for _, n := range want {
		res, err := Call(context.Background(), p, &Request{Input: &stage.Input{Stage: n, Config: json.RawMessage(`{"clusterName":"demo"}`)}})
		if err != nil || string(res.Values) != `"`+string(n)+`"` {
			t.Errorf("%s: %v %v", n, res, err)
		}
	}
}
