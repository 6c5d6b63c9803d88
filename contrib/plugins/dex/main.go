// Command dex is a contrib kube-aws plugin that makes Dex the cluster's
// OpenID Connect identity provider (seed 004's "Dex uses some additional API
// server parameter" example): in initialise it sets the API server's OIDC
// flags and contributes a Helm release of Dex from a chart it ships in its
// own binary. It is built only on the public SDK (plugins/sdk, core/...).
package main

import (
	"context"
	"embed"
	"encoding/json"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
	"github.com/kube-aws/kube-aws/plugins/sdk/chartcache"
)

func main() { sdk.Serve(sdk.Typed[Values](plugin{})) }

// Name and Version identify the plugin; Version is the plugin's own, not
// kube-aws's, and changes when what it contributes changes.
const (
	Name    = "dex"
	Version = "0.1.0"
)

//go:embed schema.json
var schema []byte

// chart is the Dex chart. "all:" keeps templates/_helpers.tpl, which a plain
// embed pattern would skip for its leading underscore.
//
//go:embed all:charts/dex
var chart embed.FS

// Where the optional CA bundle of the issuer goes on the controllers, and
// where the API server's static pod sees it.
const (
	caDir  = "/etc/kubernetes/dex"
	caFile = caDir + "/issuer-ca.pem"
)

// Values are the plugin's values in cluster.yaml (schema.json).
type Values struct {
	IssuerURL      string            `json:"issuerURL"`
	ClientID       string            `json:"clientID,omitempty"`
	UsernameClaim  string            `json:"usernameClaim,omitempty"`
	GroupsClaim    string            `json:"groupsClaim,omitempty"`
	UsernamePrefix string            `json:"usernamePrefix,omitempty"`
	GroupsPrefix   string            `json:"groupsPrefix,omitempty"`
	IssuerCA       string            `json:"issuerCA,omitempty"`
	Namespace      string            `json:"namespace,omitempty"`
	Replicas       int               `json:"replicas,omitempty"`
	Image          string            `json:"image,omitempty"`
	ServiceType    string            `json:"serviceType,omitempty"`
	Connectors     []json.RawMessage `json:"connectors,omitempty"`
	StaticClients  []StaticClient    `json:"staticClients,omitempty"`
}

// StaticClient is an OAuth2 client Dex knows. Secret arrives as a
// redaction marker and stays one until the node installs the release.
type StaticClient struct {
	ID           string   `json:"id"`
	Name         string   `json:"name,omitempty"`
	Secret       string   `json:"secret"`
	RedirectURIs []string `json:"redirectURIs"`
}

// withDefaults fills what cluster.yaml left out; the same defaults are in
// schema.json for `kube-aws plugins describe dex`.
func (v Values) withDefaults() Values {
	if v.ClientID == "" {
		v.ClientID = "kubernetes"
	}
	if v.UsernameClaim == "" {
		v.UsernameClaim = "email"
	}
	if v.GroupsClaim == "" {
		v.GroupsClaim = "groups"
	}
	if v.Namespace == "" {
		v.Namespace = "dex"
	}
	if v.Replicas == 0 {
		v.Replicas = 1
	}
	if v.Image == "" {
		v.Image = "ghcr.io/dexidp/dex:v2.41.1"
	}
	if v.ServiceType == "" {
		v.ServiceType = "ClusterIP"
	}
	return v
}

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         Name,
		Version:      Version,
		Description:  "contrib: Dex as the API server's OIDC issuer (API server flags and a Helm release)",
		ValuesSchema: schema,
	}
}

// Initialise contributes the OIDC flags and the Dex release, and returns the
// values with their defaults filled in.
func (plugin) Initialise(_ context.Context, in *sdk.Input[Values]) (*stage.Result, error) {
	v := in.Values
	if v.IssuerURL == "" {
		// The host checks values against the schema first, so this is
		// only reached when the plugin is run outside kube-aws.
		d := diag.Fatalf("plugin dex needs values.issuerURL, the https URL of the OIDC issuer").
			At("plugins.dex.values.issuerURL").WithHint("set plugins.dex.values.issuerURL, e.g. https://dex.example.com")
		return &stage.Result{Diagnostics: diag.List{d}}, nil
	}
	v = v.withDefaults()

	set := &construct.Set{}
	set.APIServer.Flags = []construct.Flag{
		{Name: "oidc-issuer-url", Value: v.IssuerURL},
		{Name: "oidc-client-id", Value: v.ClientID},
		{Name: "oidc-username-claim", Value: v.UsernameClaim},
		{Name: "oidc-groups-claim", Value: v.GroupsClaim},
	}
	if v.UsernamePrefix != "" {
		set.APIServer.Flags = append(set.APIServer.Flags, construct.Flag{Name: "oidc-username-prefix", Value: v.UsernamePrefix})
	}
	if v.GroupsPrefix != "" {
		set.APIServer.Flags = append(set.APIServer.Flags, construct.Flag{Name: "oidc-groups-prefix", Value: v.GroupsPrefix})
	}
	if v.IssuerCA != "" {
		// The API server runs as a static pod: the file must be both on
		// the controller and mounted into the pod.
		set.Files = append(set.Files, construct.File{
			Target: construct.Target{Role: construct.Controller}, Path: caFile, Mode: "0644", Content: v.IssuerCA,
		})
		set.APIServer.Volumes = append(set.APIServer.Volumes, construct.Volume{
			Name: "dex-issuer-ca", HostPath: caDir, MountPath: caDir, ReadOnly: true,
		})
		set.APIServer.Flags = append(set.APIServer.Flags, construct.Flag{Name: "oidc-ca-file", Value: caFile})
	}

	path, err := chartcache.Extract(chart, "charts/dex", in.WorkDir, Name)
	if err != nil {
		return nil, err
	}
	rel, err := release(v, path)
	if err != nil {
		return nil, err
	}
	set.HelmReleases = []construct.HelmRelease{rel}

	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &stage.Result{Values: out, Constructs: set}, nil
}

// release is the Helm release of the shipped chart with the chart's values
// taken from the plugin's.
func release(v Values, chartPath string) (construct.HelmRelease, error) {
	clients := v.StaticClients
	if clients == nil {
		clients = []StaticClient{}
	}
	connectors := v.Connectors
	if connectors == nil {
		connectors = []json.RawMessage{}
	}
	vals, err := json.Marshal(map[string]any{
		"image":         v.Image,
		"replicas":      v.Replicas,
		"issuer":        v.IssuerURL,
		"service":       map[string]any{"type": v.ServiceType, "port": 5556},
		"connectors":    connectors,
		"staticClients": clients,
	})
	if err != nil {
		return construct.HelmRelease{}, err
	}
	return construct.HelmRelease{
		Name:      "dex",
		Namespace: v.Namespace,
		Chart:     construct.Chart{Path: chartPath, Name: "dex", Version: "0.1.0"},
		Values:    vals,
	}, nil
}
