package sdk

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/protocol"
)

type initOnly struct{}

func (initOnly) Info() stage.PluginInfo {
	return stage.PluginInfo{Name: "x", Stages: []stage.Name{stage.Deploy}}
}
func (initOnly) Initialise(_ context.Context, req *Request) (*stage.Result, error) {
	if req.Stage == stage.Initialise && string(req.Config) == "panic" {
		panic("kaboom\nstack detail")
	}
	return nil, nil
}

type all struct{ initOnly }

func (all) Render(context.Context, *Request) (*stage.Result, error)   { return nil, errors.New("nope") }
func (all) Deploy(context.Context, *Request) (*stage.Result, error)   { return &stage.Result{}, nil }
func (all) Validate(context.Context, *Request) (*stage.Result, error) { return &stage.Result{}, nil }

// Serve advertises exactly the stages a plugin implements, whatever its Info
// claims, and the protocol versions this SDK speaks.
func TestInfoOf(t *testing.T) {
	info := InfoOf(initOnly{})
	if !reflect.DeepEqual(info.Stages, []stage.Name{stage.Initialise}) || !reflect.DeepEqual(info.ProtocolVersions, protocol.SupportedVersions) {
		t.Errorf("%+v", info)
	}
	if got := StagesOf(all{}); !reflect.DeepEqual(got, stage.All) {
		t.Errorf("all stages: %v", got)
	}
}

// everything implements every stage and operation; each answers with its
// own name.
type everything struct{}

func (everything) Info() stage.PluginInfo { return stage.PluginInfo{Name: "everything"} }
func said(n stage.Name) (*stage.Result, error) {
	return &stage.Result{Values: []byte(`"` + string(n) + `"`)}, nil
}
func (everything) Initialise(context.Context, *Request) (*stage.Result, error) {
	return said(stage.Initialise)
}
func (everything) Render(context.Context, *Request) (*stage.Result, error) { return said(stage.Render) }
func (everything) Deploy(context.Context, *Request) (*stage.Result, error) { return said(stage.Deploy) }
func (everything) Validate(context.Context, *Request) (*stage.Result, error) {
	return said(stage.Validate)
}
func (everything) Diff(context.Context, *Request) (*stage.Result, error) { return said(stage.Diff) }
func (everything) Destroy(context.Context, *Request) (*stage.Result, error) {
	return said(stage.Destroy)
}
func (everything) AdminCredential(context.Context, *Request) (*stage.Result, error) {
	return said(stage.AdminCredential)
}

// A plugin that implements every stage and operation declares each of
// them, and Call reaches the method of each.
func TestEveryStageAndOperation(t *testing.T) {
	want := append(append([]stage.Name{}, stage.All...), stage.Operations...)
	if got := StagesOf(everything{}); !reflect.DeepEqual(got, want) {
		t.Errorf("stages %v, want %v", got, want)
	}
	for _, n := range want {
		res, err := Call(context.Background(), everything{}, &Request{Input: &stage.Input{Stage: n}})
		if err != nil || string(res.Values) != `"`+string(n)+`"` {
			t.Errorf("%s: %v %v", n, res, err)
		}
	}
}

func TestCall(t *testing.T) {
	ctx := context.Background()
	// A nil result becomes an empty one.
	res, err := Call(ctx, initOnly{}, &Request{Input: &stage.Input{Stage: stage.Initialise}})
	if err != nil || res == nil {
		t.Errorf("nil result: %v %v", res, err)
	}
	// A panic becomes an error quoting its first line.
	_, err = Call(ctx, initOnly{}, &Request{Input: &stage.Input{Stage: stage.Initialise, Config: []byte("panic")}})
	if err == nil || err.Error() != "panic: kaboom" {
		t.Errorf("panic: %v", err)
	}
	// A stage the plugin lacks is refused.
	_, err = Call(ctx, initOnly{}, &Request{Plugin: "x", Input: &stage.Input{Stage: stage.Render}})
	if err == nil || !strings.Contains(err.Error(), `plugin x does not implement stage "render"`) {
		t.Errorf("missing stage: %v", err)
	}
	_, err = Call(ctx, all{}, &Request{Input: &stage.Input{Stage: stage.Render}})
	if err == nil || err.Error() != "nope" {
		t.Errorf("error passes through: %v", err)
	}
}

// Events go on the stage stream while it is open and to the Host service
// after; without a Host service the store says so.
func TestRequestHost(t *testing.T) {
	var streamed []string
	over := false
	h := &requestHost{emit: func(ev stage.Event) error {
		if over {
			return protocol.ErrStageOver
		}
		streamed = append(streamed, ev.Message)
		return nil
	}}
	req := &Request{Input: &stage.Input{}, Host: h}
	req.Log("info", "one")
	req.Progress(1, 2, "two")
	if !reflect.DeepEqual(streamed, []string{"one", "two"}) {
		t.Errorf("streamed %v", streamed)
	}
	over = true
	if err := h.Emit(stage.Event{Message: "late"}); !errors.Is(err, errNoHost) {
		t.Errorf("late event without host: %v", err)
	}
	if _, _, err := h.StoreGet("k"); !errors.Is(err, errNoHost) {
		t.Errorf("store without host: %v", err)
	}
	// A request without a host (a unit test) logs nowhere, without panicking.
	(&Request{Input: &stage.Input{}}).Log("info", "ignored")
}

type namedPlugin string

func (n namedPlugin) Info() stage.PluginInfo { return stage.PluginInfo{Name: string(n)} }

// ServeAll calls each plugin by its name, so every plugin needs one of its
// own.
func TestServeAllNames(t *testing.T) {
	tests := []struct {
		name    string
		plugins []Plugin
		errHas  string
	}{
		{"two", []Plugin{namedPlugin("a"), namedPlugin("b")}, ""},
		{"none", nil, "no plugins to serve"},
		{"nil", []Plugin{namedPlugin("a"), nil}, "plugin 1 is nil"},
		{"unnamed", []Plugin{namedPlugin("")}, "has no Name in its Info"},
		{"twice", []Plugin{namedPlugin("a"), namedPlugin("a")}, `two plugins are named "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := byName(tt.plugins)
			if tt.errHas == "" {
				if err != nil || len(got) != len(tt.plugins) {
					t.Fatalf("%v %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("want an error containing %q, got %v", tt.errHas, err)
			}
		})
	}
}
