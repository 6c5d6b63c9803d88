package stages

import (
	"context"
	"encoding/json"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/merge"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// Plugin is a started plugin as the pipeline sees it. plugins/host's Plugin
// is adapted to it (realdeps.go); tests use fakes.
type Plugin interface {
	Candidate() source.Candidate
	Info() stage.PluginInfo
	// ProtocolVersion is the version negotiated at the handshake.
	ProtocolVersion() int
	Register(ctx context.Context, reg stage.Registration) error
	Run(ctx context.Context, in *stage.Input, onEvent func(stage.Event)) (*stage.Result, error)
	Kill()
}

// Loaded is cluster.yaml loaded, defaulted and validated. Which values are
// sensitive depends on the plugins' schemas, so JSON, Values and Secrets are
// redacted once the plugins have started (Plan.Launch, Deps.ResolveSecrets).
type Loaded struct {
	// Path is cluster.yaml's absolute path; Dir the folder holding it.
	Path    string
	Dir     string
	Cluster *config.Cluster
	// JSON is Cluster as plugins receive it (redacted after Launch).
	JSON json.RawMessage
	// Values are every plugin's effective values by plugin name: secret
	// sources unresolved before Launch, redacted after.
	Values map[string]stage.PluginValues
	// Secrets maps redaction marker to plain text; only deploy sees it.
	Secrets map[string]string
	// Hash is the sha256 of cluster.yaml and every plugin config file it names
	// (ConfigHash): the "config" input of every state file.
	Hash string
}

// Resolved is the configuration with its secrets resolved (ResolveSecrets).
type Resolved struct {
	// JSON is the cluster as plugins see it, every secret a marker.
	JSON json.RawMessage
	// Values are redacted; Plain the same in plain text, only for checking
	// them against the plugins' schemas.
	Values map[string]stage.PluginValues
	Plain  map[string]stage.PluginValues
	// Secrets maps marker to plain text.
	Secrets map[string]string
}

// Deps are the parts of kube-aws the pipeline drives. DefaultDeps binds them
// to core/config, core/merge and plugins/host; tests substitute fakes.
type Deps struct {
	// LoadConfig loads cluster.yaml. An error or fatal diagnostic is a
	// configuration error (exit 2).
	LoadConfig func(path string) (*Loaded, diag.List, error)
	Discover   func(clusterDir string, pluginDirs []string) ([]source.Candidate, error)
	Launch     func(ctx context.Context, cands []source.Candidate, opts host.Options) ([]Plugin, error)
	// ResolveSecrets resolves secret sources and replaces every sensitive
	// value (by source, or by a plugin schema's x-kube-aws-sensitive) with
	// its marker. schemas are the plugins' values schemas by name. A fatal is
	// a configuration error.
	ResolveSecrets func(l *Loaded, schemas map[string]json.RawMessage) (*Resolved, diag.List)
	// ValidateValues checks one plugin's values against its JSON Schema.
	// plain are the plugin's values in plain text; l carries the cluster
	// (for config paths and lines) and the secrets (to redact messages).
	ValidateValues func(l *Loaded, plugin string, schema json.RawMessage, plain stage.PluginValues) diag.List
	// ChooseProviders picks one provider per capability from providers
	// (capability -> plugin names in plugin order) and the preferences in
	// cluster.yaml.
	ChooseProviders func(pref map[string]string, providers map[string][]string) (map[string]string, diag.List)
	// Merge merges the constructs of initialise (core/merge.MergeWith).
	Merge func([]merge.Contribution, merge.Options) (*construct.Set, diag.List)
	// Redact replaces every plain secret in s by its marker.
	Redact func(s string, secrets map[string]string) string
	// Lock and Verify implement `plugins lock` (returning the plugins it
	// locked) and `plugins verify`.
	Lock   func(cands []source.Candidate, path string) ([]source.Candidate, error)
	Verify func(cands []source.Candidate, path string) []error
	// Ensure installs and pins the plugins cluster.yaml takes from
	// registries (source.Ensure, which source.Resolve calls).
	Ensure func(ctx context.Context, ps []source.RegistryPlugin, opts source.EnsureOptions) (*source.Outcome, error)
}
