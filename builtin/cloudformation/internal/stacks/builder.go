package stacks

import (
	"encoding/json"

	"github.com/awslabs/goformation/v4/cloudformation"
	"github.com/awslabs/goformation/v4/cloudformation/tags"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
)

// stack accumulates one Stack construct. Every section body goes through
// cfn.MustRaw, which expands goformation's encoded intrinsics.
type stack struct {
	c construct.Stack
}

func newStack(name, description string) *stack {
	return &stack{c: construct.Stack{
		Name:        name,
		Description: description,
		Resources:   map[string]json.RawMessage{},
		Outputs:     map[string]json.RawMessage{},
		Parameters:  map[string]json.RawMessage{},
	}}
}

func (s *stack) resource(id string, r cloudformation.Resource) {
	s.c.Resources[id] = cfn.MustRaw(r)
}

func (s *stack) param(id, typ, description string, def any) {
	p := cloudformation.Parameter{Type: typ, Description: description, Default: def}
	s.c.Parameters[id] = cfn.MustRaw(p)
}

// wired declares a parameter filled from another stack's output.
func (s *stack) wired(id, typ, fromStack, output string) {
	s.param(id, typ, "From "+fromStack+"."+output, nil)
	if s.c.ParameterSources == nil {
		s.c.ParameterSources = map[string]names.Source{}
	}
	s.c.ParameterSources[id] = names.From(fromStack, output)
}

func (s *stack) output(id string, value any, description string) {
	s.c.Outputs[id] = cfn.MustRaw(cloudformation.Output{Value: value, Description: description})
}

// done returns the construct with empty sections dropped.
func (s *stack) done() construct.Stack {
	c := s.c
	if len(c.Outputs) == 0 {
		c.Outputs = nil
	}
	if len(c.Parameters) == 0 {
		c.Parameters = nil
	}
	return c
}

// tagList builds goformation tags with a Name tag first (it is what the EC2
// console shows) then the cluster ownership tag Kubernetes' cloud provider
// looks for.
func tagList(cluster, name string, extra ...tags.Tag) []tags.Tag {
	out := []tags.Tag{
		{Key: "Name", Value: name},
		{Key: names.KubernetesClusterTag(cluster), Value: "owned"},
	}
	return append(out, extra...)
}
