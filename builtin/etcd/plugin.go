// Package etcd is the built-in kube-aws plugin that runs the cluster's etcd:
// in initialise it contributes each member's data volume and auto scaling
// group and the members' private zone to the etcd stack, the etcd role's
// systemd units (etcd itself, a periodic snapshot to S3) and its
// kube-aws-node plans (the volume to attach, the record to upsert, the
// goal: a healthy member), and the IAM statements those steps need. The
// certificates come from the pki plugin. The logic lives in
// internal/members.
package etcd

import (
	"context"
	"encoding/json"

	"github.com/kube-aws/kube-aws/builtin/etcd/internal/members"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// Plugin is the etcd plugin as kube-aws serves it (cmd/kube-aws-builtins).
func Plugin() sdk.Plugin { return sdk.Typed[members.Values](plugin{}) }

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         members.Plugin,
		Version:      version.Version,
		Description:  "etcd members: data volumes, stable names, systemd units, snapshots",
		ValuesSchema: json.RawMessage(members.ValuesSchema),
	}
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[members.Values]) (*stage.Result, error) {
	set, diags := members.Initialise(in.Cluster, in.Values)
	return &stage.Result{Constructs: set, Diagnostics: diags.WithDefaults(members.Plugin, string(stage.Initialise))}, nil
}
