// Command secret-probe is the user plugin TestCluster drops into the
// example's plugins folder to prove issue 14's promise end to end: a Helm
// release whose value is a sensitive cluster.yaml value (given with
// valueFrom) reaches a pod on a booted controller exactly. The value crosses
// the plugin as its ((secret:...)) marker; the controllers' add-ons step
// substitutes it; the chart's Job runs the e2e probe with it in its
// environment, and the probe reports it in its termination message. The
// same marker goes into two files of the controllers, one read whole and an
// environment file, which the test reads back on the machine.
package main

import (
	"context"
	"embed"
	"encoding/json"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
	"github.com/kube-aws/kube-aws/plugins/sdk/chartcache"
)

func main() { sdk.Serve(sdk.Typed[values](plugin{})) }

const name = "secret-probe"

//go:embed all:charts/secret-probe
var chart embed.FS

var schema = []byte(`{
  "type": "object",
  "additionalProperties": false,
  "required": ["secret", "image"],
  "properties": {
    "secret": {"type": "string", "x-kube-aws-sensitive": true},
    "image": {"type": "string"}
  }
}`)

// The files on the controllers.
const (
	WholeFile = "/etc/secret-probe/value"
	EnvFile   = "/etc/secret-probe/value.env"
)

type values struct {
	Secret string `json:"secret"`
	Image  string `json:"image"`
}

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{Name: name, Version: "0.1.0", Description: "e2e: a Helm release with a sensitive value, read back by a pod", ValuesSchema: schema}
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[values]) (*stage.Result, error) {
	path, err := chartcache.Extract(chart, "charts/secret-probe", in.WorkDir, name)
	if err != nil {
		return nil, err
	}
	vals, err := json.Marshal(map[string]string{"secret": in.Values.Secret, "image": in.Values.Image})
	if err != nil {
		return nil, err
	}
	controller := construct.Target{Role: construct.Controller}
	return &stage.Result{Constructs: &construct.Set{
		HelmReleases: []construct.HelmRelease{{Name: name, Namespace: "default", Chart: construct.Chart{Path: path}, Values: vals}},
		Files: []construct.File{
			{Target: controller, Path: WholeFile, Mode: "0600", Sensitive: true, Format: "whole", Content: in.Values.Secret},
			{Target: controller, Path: EnvFile, Mode: "0600", Sensitive: true, Format: "env", Content: "# the e2e secret\nSECRET_VALUE=" + in.Values.Secret + "\n"},
		},
	}}, nil
}
