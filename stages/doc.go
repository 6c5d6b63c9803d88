// Package stages is the kube-aws pipeline: it plans a run (which plugins are
// enabled and in which order), launches and registers the plugins, fans each
// stage out to every plugin that implements it on identical input, merges
// their results in plugin order, persists each stage's result with the
// hashes of its inputs under .kube-aws/state/, and writes the render output
// atomically.
//
// cmd/kube-aws is only flags in and output out; everything it does is a call
// into this package (the split Helm uses between cmd/helm and pkg/action).
// The parts of kube-aws the pipeline drives (configuration loading, plugin
// discovery and launch, construct merging) are reached through Deps so the
// pipeline logic is unit-testable with fake plugins.
package stages
