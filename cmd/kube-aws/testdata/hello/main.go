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

type values struct {
	Greeting string `json:"greeting"`
}

func greeting(in *sdk.Input[values]) string {
	if in.Values.Greeting == "" {
		return "hello"
	}
	return in.Values.Greeting
}

// generatedToken is the secret hello generates: kube-aws keeps it in
// credentials/hello/token and it must appear nowhere else.
const generatedToken = "g3nerated-T0ken-8b2d"

func (hello) Initialise(ctx context.Context, in *sdk.Input[values]) (*stage.Result, error) {
	in.Log("info", greeting(in)+" from initialise")
	if _, err := in.GeneratedSecret("token", func() ([]byte, error) { return []byte(generatedToken), nil }); err != nil {
		return nil, err
	}
	if in.Values.Greeting == "shout" {
		// A diagnostic with a config path: kube-aws adds file:line:col.
		return &stage.Result{Diagnostics: diag.List{diag.Warningf("hello: do not shout").
			At(in.Cluster.ValuesPath("hello", "", "/greeting"))}}, nil
	}
	return &stage.Result{}, nil
}

func (hello) Render(ctx context.Context, in *sdk.Input[values]) (*stage.Result, error) {
	in.Log("info", greeting(in)+" from render")
	return &stage.Result{Files: []stage.File{
		{Path: "hello/greeting.txt", Content: []byte(greeting(in) + "\n")},
		{Path: "hello/token.txt", Content: []byte(in.SecretMarker("token") + "\n")},
	}}, nil
}

func (hello) Deploy(ctx context.Context, in *sdk.Input[values]) (*stage.Result, error) {
	n := 0
	if in.Rendered != nil {
		n = len(in.Rendered.Files)
	}
	in.Log("info", fmt.Sprintf("%s from deploy (%d rendered files)", greeting(in), n))
	in.Log("info", fmt.Sprintf("deploy has the plain text of %s: %v", in.SecretMarker("token"), in.Secrets[in.SecretMarker("token")] == generatedToken))
	return &stage.Result{Deploy: &stage.DeployResult{Outputs: map[string]string{"hello": greeting(in)}}}, nil
}

func (hello) Validate(ctx context.Context, in *sdk.Input[values]) (*stage.Result, error) {
	in.Log("info", greeting(in)+" from validate")
	if in.Deploy == nil || in.Deploy.Outputs["hello"] == "" {
		return &stage.Result{Diagnostics: diag.List{diag.Fatalf("validate did not receive the deploy result")}}, nil
	}
	return &stage.Result{}, nil
}

func main() { sdk.Serve(sdk.Typed[values](hello{})) }
