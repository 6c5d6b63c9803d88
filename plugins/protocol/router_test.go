package protocol

import (
	"context"
	"strings"
	"testing"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kube-aws/kube-aws/core/stage"
)

// named answers GetInfo and every stage with its own name, so a test sees
// which plugin of the process a call reached.
type named string

func (n named) GetInfo(context.Context, int, string) (stage.PluginInfo, error) {
	return stage.PluginInfo{Name: string(n)}, nil
}
func (named) NotifyRegistration(context.Context, stage.Registration) error { return nil }
func (n named) RunStage(_ context.Context, in *stage.Input, _ Host, _ func(stage.Event) error) (*stage.Result, error) {
	return &stage.Result{Values: []byte(`"` + string(n) + `/` + string(in.Stage) + `"`)}, nil
}

// A process serving several plugins routes each call by the name the host
// dispensed it under; a process serving one ignores the name, as plugins
// built before names were sent did.
func TestRouting(t *testing.T) {
	tests := []struct {
		name     string
		served   *GRPCPlugin
		dispense string
		want     string // plugin that answers; "" when the call is refused
		code     codes.Code
		errHas   string
	}{
		{"several, by name", &GRPCPlugin{Impls: map[string]Plugin{"alpha": named("alpha"), "beta": named("beta")}}, "beta", "beta", codes.OK, ""},
		{"several, other name", &GRPCPlugin{Impls: map[string]Plugin{"alpha": named("alpha"), "beta": named("beta")}}, "alpha", "alpha", codes.OK, ""},
		{"several, unknown name", &GRPCPlugin{Impls: map[string]Plugin{"alpha": named("alpha"), "beta": named("beta")}}, "gamma", "", codes.NotFound, `serves the plugins alpha, beta, not "gamma"`},
		{"several, no name", &GRPCPlugin{Impls: map[string]Plugin{"alpha": named("alpha"), "beta": named("beta")}}, "", "", codes.InvalidArgument, "does not name one"},
		{"one, any name", &GRPCPlugin{Impl: named("solo")}, "whatever", "solo", codes.OK, ""},
		{"one, no name", &GRPCPlugin{Impl: named("solo")}, "", "solo", codes.OK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{PluginKey: tt.served})
			// The server first: closing the client asks the server to stop
			// itself, which would race with a Stop of our own.
			defer client.Close()
			defer server.Stop()
			raw, err := client.Dispense(PluginKey)
			if err != nil {
				t.Fatal(err)
			}
			c := raw.(*pluginClient)
			c.name = tt.dispense
			ctx := context.Background()

			info, ierr := c.GetInfo(ctx, 1, "test")
			res, serr := c.RunStage(ctx, &stage.Input{Stage: stage.Render}, nil, nil)
			cerr := Cancel(ctx, c)
			if tt.want == "" {
				for what, err := range map[string]error{"GetInfo": ierr, "RunStage": serr, "Cancel": cerr} {
					if status.Code(err) != tt.code || !strings.Contains(status.Convert(err).Message(), tt.errHas) {
						t.Errorf("%s: want %s containing %q, got %v", what, tt.code, tt.errHas, err)
					}
				}
				return
			}
			if ierr != nil || serr != nil || cerr != nil {
				t.Fatalf("GetInfo %v, RunStage %v, Cancel %v", ierr, serr, cerr)
			}
			if info.Name != tt.want || string(res.Values) != `"`+tt.want+`/render"` {
				t.Errorf("reached %q / %s, want %s", info.Name, res.Values, tt.want)
			}
		})
	}
}

// Every stage and operation reaches the plugin through its own RPC: the
// plugin side takes the stage from the RPC, whatever the request says.
func TestEveryStageHasItsRPC(t *testing.T) {
	client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{PluginKey: &GRPCPlugin{Impl: named("solo")}})
	defer client.Close()
	defer server.Stop()
	raw, err := client.Dispense(PluginKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range append(append([]stage.Name{}, stage.All...), stage.Operations...) {
		res, err := raw.(*pluginClient).RunStage(context.Background(), &stage.Input{Stage: n}, nil, nil)
		if err != nil {
			t.Errorf("%s: %v", n, err)
		} else if string(res.Values) != `"solo/`+string(n)+`"` {
			t.Errorf("%s reached the plugin as %s", n, res.Values)
		}
	}
}

// A process is served one plugin or several, never both or none.
func TestServedPlugins(t *testing.T) {
	for name, p := range map[string]*GRPCPlugin{
		"both": {Impl: named("a"), Impls: map[string]Plugin{"b": named("b")}},
		"none": {},
		"nil":  {Impls: map[string]Plugin{"b": nil}},
	} {
		if err := p.GRPCServer(nil, nil); err == nil {
			t.Errorf("%s: served", name)
		}
	}
}
