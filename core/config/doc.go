// Package config is cluster.yaml: its types, a strict loader (decoding in
// strict.go) that knows the file:line:column of every value, defaults
// applied in one place (ApplyDefaults), validation that reports every
// problem at once (Validate), plugin values with their config files and
// per-node-pool overrides (EffectiveValues), sensitive values and their
// redaction markers (ResolveSecrets, Redact), capability providers
// (ChooseProviders), subnet layout for a new VPC (ComputeSubnets) and the
// commented file that `kube-aws init` writes (InitTemplate).
//
// Every plugin binary imports this package through the SDK, so it depends on
// the standard library, sigs.k8s.io/yaml (and its goyaml.v3), json-patch and
// core/ only. The JSON Schema validation of plugin values lives in
// core/config/values and the JSON Schema of cluster.yaml in core/config/schema
// because they need a JSON Schema library that plugins should not link.
package config
