// Command hello is the user plugin of the kube-aws end-to-end tests: a few
// dozen lines with the SDK that take part in all four stages, saying so in
// its log, so the tests can see it in `kube-aws stage ...` output.
package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

type hello struct{}

func (hello) Info() stage.PluginInfo {
	return stage.PluginInfo{Name: "hello", Version: "0.1.0", Description: "says hello in every stage",
		ValuesSchema: json.RawMessage(`{"type":"object","properties":{"greeting":{"type":"string"}},"additionalProperties":false}`)}
}

func greeting(req *sdk.Request) string {
	var v struct {
		Greeting string `json:"greeting"`
	}
	_ = req.DecodeValues(&v)
	if v.Greeting == "" {
		return "hello"
	}
	return v.Greeting
}

func (hello) Initialise(ctx context.Context, req *sdk.Request) (*stage.Result, error) {
	req.Log("info", greeting(req)+" from initialise")
	return &stage.Result{}, nil
}

func (hello) Render(ctx context.Context, req *sdk.Request) (*stage.Result, error) {
	req.Log("info", greeting(req)+" from render")
	return &stage.Result{Files: []stage.File{{Path: "hello/greeting.txt", Content: []byte(greeting(req) + "\n")}}}, nil
}

func (hello) Deploy(ctx context.Context, req *sdk.Request) (*stage.Result, error) {
	n := 0
	if req.Rendered != nil {
		n = len(req.Rendered.Files)
	}
	req.Log("info", fmt.Sprintf("%s from deploy (%d rendered files)", greeting(req), n))
	return &stage.Result{Deploy: &stage.DeployResult{Outputs: map[string]string{"hello": greeting(req)}}}, nil
}

func (hello) Validate(ctx context.Context, req *sdk.Request) (*stage.Result, error) {
	req.Log("info", greeting(req)+" from validate")
	if req.Deploy == nil || req.Deploy.Outputs["hello"] == "" {
		return &stage.Result{Diagnostics: diag.List{diag.Fatalf("validate did not receive the deploy result")}}, nil
	}
	return &stage.Result{}, nil
}

func main() { sdk.Serve(hello{}) }
