// Package stages is the kube-aws pipeline: it plans a run (which plugins are
// enabled and in which order), launches and registers the plugins, fans each
// stage out to every plugin that implements it on identical input, merges
// their results in plugin order, persists each stage's result with the
// hashes of its inputs under .kube-aws/state/, and writes the render output
// atomically.
//
// It runs the stages and the diff and destroy operations (Session.Run,
// Session.Operate); what a command does with them (which stages, what to
// confirm, when to retry) is package stages/action, and printing it is
// cmd/kube-aws's, the split Helm makes between pkg/action and cmd/helm.
// The parts of kube-aws the pipeline drives (configuration loading, plugin
// discovery and launch, construct merging) are reached through Deps so the
// pipeline logic is unit-testable with fake plugins.
package stages
