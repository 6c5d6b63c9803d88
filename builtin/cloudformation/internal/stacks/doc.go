// Package stacks is the logic of the cloudformation built-in plugin, kept
// apart from the SDK server so it can be tested as plain functions:
// Initialise turns cluster.yaml into the base Stack constructs of a cluster
// (network, etcd, control-plane, one nodepool-<name> per node pool) built
// from goformation resource types, and Render turns every merged Stack
// construct except iam into a template file and a StackSpec.
//
// Stacks are wired together only by parameters filled from other stacks'
// outputs (ParameterSources); never nested stacks or Fn::ImportValue, so
// each stack can be previewed and updated on its own.
package stacks
