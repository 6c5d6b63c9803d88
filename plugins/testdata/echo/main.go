// Command echo is a test plugin that uses every SDK feature: it echoes its
// values back from initialise with a construct, logs and reports progress,
// counts its runs in the host's key-value store, renders a file describing
// its input, and reports its registration on stderr.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         "echo",
		Version:      "1.2.3",
		Description:  "echoes its input",
		ValuesSchema: json.RawMessage(`{"type":"object","properties":{"greeting":{"type":"string"}}}`),
		Capabilities: []string{"echo"},
	}
}

func (plugin) Registered(reg stage.Registration) {
	fmt.Fprintf(os.Stderr, "registered: accepted=%v reason=%q\n", reg.Accepted, reg.Reason)
}

func (plugin) Initialise(ctx context.Context, req *sdk.Request) (*stage.Result, error) {
	var v struct {
		Greeting string `json:"greeting"`
	}
	if err := req.DecodeValues(&v); err != nil {
		return nil, err
	}
	req.Log("info", "echo says "+v.Greeting)
	req.Progress(1, 2, "half way")
	runs := 0
	if b, ok, err := req.Host.StoreGet("runs"); err != nil {
		return nil, err
	} else if ok {
		runs, _ = strconv.Atoi(string(b))
	}
	runs++
	if err := req.Host.StorePut("runs", []byte(strconv.Itoa(runs))); err != nil {
		return nil, err
	}
	req.Progress(2, 2, "done")
	out, _ := json.Marshal(map[string]any{"greeting": v.Greeting, "runs": runs})
	return &stage.Result{
		Values: out,
		Constructs: &construct.Set{Units: []construct.Unit{{
			Target:  construct.Target{Role: construct.Controller},
			Name:    "echo.service",
			Content: "[Service]\nExecStart=/bin/echo " + v.Greeting + "\n",
			Enable:  true,
		}}},
	}, nil
}

func (plugin) Render(ctx context.Context, req *sdk.Request) (*stage.Result, error) {
	units := 0
	if req.Constructs != nil {
		units = len(req.Constructs.Units)
	}
	keys, err := req.Host.StoreList("")
	if err != nil {
		return nil, err
	}
	req.Log("info", fmt.Sprintf("render sees %d units", units))
	return &stage.Result{Files: []stage.File{{
		Path:    "echo/summary.txt",
		Content: []byte(fmt.Sprintf("units=%d stage=%s keys=%v\n", units, req.Stage, keys)),
	}}}, nil
}

func main() { sdk.Serve(plugin{}) }
