// Command pool-unit is the user plugin of the day-2 cases of make
// e2e-cluster: it adds a unit to the machines of one node pool, which
// writes its values' note to /var/lib/kube-aws-note. Changing the note is
// the everyday plugin change that replaces that pool's machines, and no
// other role's.
package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// Values name the pool and the note its unit writes.
type Values struct {
	Pool string `json:"pool"`
	Note string `json:"note"`
}

const schema = `{"type": "object", "additionalProperties": false, "required": ["pool", "note"],
  "properties": {"pool": {"type": "string", "minLength": 1}, "note": {"type": "string"}}}`

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{Name: "pool-unit", Version: "0.1.0", Description: "a unit on one node pool's machines", ValuesSchema: json.RawMessage(schema)}
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[Values]) (*stage.Result, error) {
	v := in.Values
	known := false
	for _, p := range in.Cluster.NodePools {
		known = known || p.Name == v.Pool
	}
	if !known {
		return &stage.Result{Diagnostics: diag.List{diag.Fatalf("no node pool %q", v.Pool).At("pool")}}, nil
	}
	return &stage.Result{Constructs: &construct.Set{Units: []construct.Unit{{
		Target: construct.Target{Role: construct.Worker, NodePool: v.Pool}, Name: "kube-aws-note.service", Enable: true,
		Content: fmt.Sprintf(`[Unit]
Description=kube-aws e2e: a note from the pool-unit plugin
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo %q > /var/lib/kube-aws-note'
[Install]
WantedBy=multi-user.target
`, v.Note),
	}}}}, nil
}

func main() { sdk.Serve(sdk.Typed[Values](plugin{})) }
