// Command plugin is a test plugin whose folder is not its name: it is the
// plugin "audit-trail", kept in a folder named plugin as an author's
// repository may be, and echoes the retention its values set.
package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

type values struct {
	RetentionDays int `json:"retentionDays"`
}

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         "audit-trail",
		Version:      "0.1.0",
		ValuesSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"retentionDays":{"type":"integer"}}}`),
	}
}

func (plugin) Initialise(ctx context.Context, in *sdk.Input[values]) (*stage.Result, error) {
	return &stage.Result{Constructs: &construct.Set{Files: []construct.File{{
		Target:  construct.Target{Role: construct.Controller},
		Path:    "/etc/audit-trail/retention",
		Mode:    "0644",
		Content: fmt.Sprintf("%d\n", in.Values.RetentionDays),
	}}}}, nil
}

func main() { sdk.Serve(sdk.Typed[values](plugin{})) }
