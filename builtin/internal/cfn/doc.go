// Package cfn holds what the cloudformation and iam built-in plugins share:
// turning goformation resources into construct JSON, assembling a template
// from a merged Stack construct, writing it as deterministic JSON, checking
// CloudFormation's hard limits, building the StackSpec deploy reads, and the
// names of the parameters and outputs that wire stacks together.
//
// It lives under builtin/internal so that only built-in plugins link it: it
// imports goformation, which no other binary should carry.
package cfn
