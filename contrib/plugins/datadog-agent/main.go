// Command datadog-agent is a contrib kube-aws plugin that runs the Datadog
// agent on the machines themselves, outside Kubernetes (seed 004's
// "Deployment outside of Kubernetes" example: the host agent sees more than
// the containerised one). It contributes a systemd unit, its environment
// file and the API key as a sensitive file, on the roles and node pools
// chosen. It is built only on the public SDK.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

func main() { sdk.Serve(sdk.Typed[Values](plugin{})) }

// Name and Version identify the plugin.
const (
	Name    = "datadog-agent"
	Version = "0.1.0"
)

//go:embed schema.json
var schema []byte

// Paths on the machines.
const (
	UnitName    = "datadog-agent.service"
	EnvFile     = "/etc/datadog-agent/environment"
	APIKeyFile  = "/etc/datadog-agent/api-key"
	InstallPath = "/opt/kube-aws/bin/install-datadog-agent"
)

// Values are the plugin's values (schema.json). APIKey is never the key
// itself here: kube-aws hands plugins the redaction marker
// ((secret:datadog-agent/values/apiKey)), which the node replaces at boot.
type Values struct {
	APIKey    string   `json:"apiKey"`
	Site      string   `json:"site,omitempty"`
	Tags      []string `json:"tags,omitempty"`
	Roles     []string `json:"roles,omitempty"`
	NodePools []string `json:"nodePools,omitempty"`
}

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         Name,
		Version:      Version,
		Description:  "contrib: Datadog agent on the machines (systemd unit, environment file, sensitive API key)",
		ValuesSchema: schema,
	}
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[Values]) (*stage.Result, error) {
	c, v := in.Cluster, in.Values
	v = v.withDefaults()
	targets, diags := targets(c, v, in.Request.Values[Name].NodePools)
	for _, t := range targets {
		if t.v.APIKey == "" {
			diags = append(diags, diag.Fatalf("plugin datadog-agent needs values.apiKey (for %s)", t.Target).At("plugins.datadog-agent.values.apiKey").
				WithHint("apiKey: {valueFrom: {env: DD_API_KEY}}"))
			break
		}
		if !config.MarkerPattern.MatchString(t.v.APIKey) {
			// kube-aws always passes a sensitive value as its marker; plain
			// text here means the plugin runs outside kube-aws. The file is
			// still sensitive, so it is never written out in plain text, but
			// say so rather than let the userdata plugin refuse it later.
			diags = append(diags, diag.Warningf("plugin datadog-agent received apiKey in plain text instead of a ((secret:...)) marker").
				At("plugins.datadog-agent.values.apiKey"))
			break
		}
	}
	if diags.HasFatal() {
		return &stage.Result{Diagnostics: diags}, nil
	}

	set := &construct.Set{}
	for _, t := range targets {
		set.Units = append(set.Units, construct.Unit{Target: t.Target, Name: UnitName, Content: unit, Enable: true})
		set.Files = append(set.Files,
			// The key alone, so the node can substitute the decrypted
			// value for the marker: a sensitive file holds nothing else.
			construct.File{Target: t.Target, Path: APIKeyFile, Mode: "0600", Owner: "root:root", Content: t.v.APIKey, Sensitive: true},
			construct.File{Target: t.Target, Path: EnvFile, Mode: "0644", Owner: "root:root", Content: environment(c, t.v, t.Target)},
			construct.File{Target: t.Target, Path: InstallPath, Mode: "0755", Owner: "root:root", Content: installScript},
		)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &stage.Result{Values: out, Constructs: set, Diagnostics: diags}, nil
}

func (v Values) withDefaults() Values {
	if v.Site == "" {
		v.Site = "datadoghq.com"
	}
	if len(v.Roles) == 0 {
		v.Roles = []string{string(construct.Controller), string(construct.Etcd), string(construct.Worker)}
	}
	return v
}

// target is one place the agent runs, with the values that apply there: a
// node pool may override the cluster-level values (its own tags, say).
type target struct {
	construct.Target
	v Values
}

// targets turns roles and nodePools into construct targets, in role order
// and then in cluster.yaml's node pool order. pools holds each node pool's effective values
// as kube-aws computed them (a pool that disables the plugin has none); nil
// when kube-aws sent no per-pool values, and then the cluster-level values
// apply to every pool.
func targets(c *config.Cluster, v Values, pools map[string]json.RawMessage) ([]target, diag.List) {
	var diags diag.List
	want := map[string]bool{}
	for _, r := range v.Roles {
		want[r] = true
	}
	known := map[string]bool{}
	for _, p := range c.NodePools {
		known[p.Name] = true
	}
	chosen := map[string]bool{}
	for i, p := range v.NodePools {
		chosen[p] = true
		if !known[p] {
			diags = append(diags, diag.Fatalf("plugin datadog-agent: node pool %q is not in cluster.yaml", p).
				At(c.ValuesPath(Name, "", fmt.Sprintf("/nodePools/%d", i))).
				WithHint("name a pool from nodePools[].name, or leave values.nodePools empty for every pool"))
		}
	}
	if len(v.NodePools) > 0 && !want[string(construct.Worker)] {
		diags = append(diags, diag.Fatalf("plugin datadog-agent: values.nodePools narrows the worker role, but values.roles leaves workers out").
			At("plugins.datadog-agent.values.nodePools").WithHint("add worker to values.roles, or remove values.nodePools"))
	}
	var out []target
	for _, r := range construct.Roles {
		if !want[string(r)] {
			continue
		}
		if r != construct.Worker {
			out = append(out, target{construct.Target{Role: r}, v})
			continue
		}
		if pools == nil && len(v.NodePools) == 0 {
			out = append(out, target{construct.Target{Role: r}, v})
			continue
		}
		for _, p := range c.NodePools {
			if len(v.NodePools) > 0 && !chosen[p.Name] {
				continue
			}
			pv := v
			if pools != nil {
				raw, ok := pools[p.Name]
				if !ok {
					continue // nodePools[].plugins.datadog-agent.enabled: false
				}
				var own Values
				if err := json.Unmarshal(raw, &own); err != nil {
					diags = append(diags, diag.Fatalf("plugin datadog-agent: values of node pool %s: %v", p.Name, err).
						At(c.ValuesPath(Name, p.Name, "")))
					continue
				}
				pv = own.withDefaults()
			}
			out = append(out, target{construct.Target{Role: r, NodePool: p.Name}, pv})
		}
	}
	return out, diags
}

// environment is the agent's non-secret settings for one target. Host tags
// name the cluster, role and pool, so dashboards can tell machines apart.
func environment(c *config.Cluster, v Values, t construct.Target) string {
	tags := []string{"kube-aws-cluster:" + c.ClusterName, "kube-aws-role:" + string(t.Role)}
	if t.NodePool != "" {
		tags = append(tags, "kube-aws-node-pool:"+t.NodePool)
	}
	tags = append(tags, v.Tags...)
	var b strings.Builder
	b.WriteString("# Written by the kube-aws datadog-agent plugin. The API key is in " + APIKeyFile + ".\n")
	fmt.Fprintf(&b, "DD_SITE=%s\n", v.Site)
	fmt.Fprintf(&b, "DD_TAGS=%s\n", strings.Join(tags, " "))
	b.WriteString("DD_LOGS_ENABLED=false\n")
	return b.String()
}

// unit runs the host agent. The key is read from its own file at start, so
// it is in the process environment only, never in a unit or world-readable
// file.
const unit = `[Unit]
Description=Datadog agent (kube-aws datadog-agent plugin)
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
EnvironmentFile=` + EnvFile + `
ExecStartPre=` + InstallPath + `
ExecStart=/bin/sh -c 'DD_API_KEY="$$(cat ` + APIKeyFile + `)" exec /opt/datadog-agent/bin/agent/agent run -p /opt/datadog-agent/run/agent.pid'
Restart=on-failure
RestartSec=10

[Install]
WantedBy=multi-user.target
`

// installScript installs the agent package once, with Datadog's own
// installer in install-only mode (the unit above runs it).
const installScript = `#!/bin/sh
# Written by the kube-aws datadog-agent plugin: installs the Datadog agent once.
set -eu
if [ -x /opt/datadog-agent/bin/agent/agent ]; then
  exit 0
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
curl -fsSL --retry 5 https://install.datadoghq.com/scripts/install_script_agent7.sh -o "$tmp"
DD_INSTALL_ONLY=true DD_API_KEY="$(cat ` + APIKeyFile + `)" DD_SITE="${DD_SITE:-datadoghq.com}" sh "$tmp"
`
