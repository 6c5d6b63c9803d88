package cfn

import (
	"bytes"
	"encoding/json"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
)

// CollectStacks copies the stacks of a merged set that include accepts, by
// name, folding several contributions to one name together (core/merge
// normally leaves one Stack per name; this keeps render right if it does
// not). It returns the stacks and their names in first-seen order. The
// copies can be patched without touching the caller's set.
func CollectStacks(all []construct.Stack, include func(name string) bool) (map[string]*construct.Stack, []string, diag.List) {
	var diags diag.List
	stacks := map[string]*construct.Stack{}
	var names []string
	for _, s := range all {
		if !include(s.Name) {
			continue
		}
		if cur, ok := stacks[s.Name]; ok {
			diags = append(diags, MergeStack(cur, s)...)
			continue
		}
		cp := copyStack(s)
		stacks[s.Name] = &cp
		names = append(names, s.Name)
	}
	return stacks, names, diags
}

// copyStack copies the maps that rendering changes, so the caller's set is
// never modified.
func copyStack(s construct.Stack) construct.Stack {
	cp := s
	cp.Resources = copyRaw(s.Resources)
	cp.Outputs = copyRaw(s.Outputs)
	cp.Parameters = copyRaw(s.Parameters)
	cp.Conditions = copyRaw(s.Conditions)
	cp.Mappings = copyRaw(s.Mappings)
	cp.DependsOn = append([]string(nil), s.DependsOn...)
	cp.Tags = copyStr(s.Tags)
	cp.ParameterSources = copyStr(s.ParameterSources)
	return cp
}

func copyRaw(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func copyStr[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// MergeStack folds a second contribution to the same stack into cur.
// Identical entries are fine, different ones fatal.
func MergeStack(cur *construct.Stack, s construct.Stack) diag.List {
	var diags diag.List
	section := func(kind string, dst *map[string]json.RawMessage, src map[string]json.RawMessage) {
		for k, v := range src {
			if *dst == nil {
				*dst = map[string]json.RawMessage{}
			}
			if old, ok := (*dst)[k]; ok && !bytes.Equal(old, v) {
				diags = append(diags, diag.Fatalf("stack %s: two contributions define %s %s differently", cur.Name, kind, k))
				continue
			}
			(*dst)[k] = v
		}
	}
	section("resource", &cur.Resources, s.Resources)
	section("output", &cur.Outputs, s.Outputs)
	section("parameter", &cur.Parameters, s.Parameters)
	section("condition", &cur.Conditions, s.Conditions)
	section("mapping", &cur.Mappings, s.Mappings)
	cur.DependsOn = append(cur.DependsOn, s.DependsOn...)
	if cur.Description == "" {
		cur.Description = s.Description
	}
	for k, v := range s.Tags {
		if cur.Tags == nil {
			cur.Tags = map[string]string{}
		}
		cur.Tags[k] = v
	}
	for k, v := range s.ParameterSources {
		if cur.ParameterSources == nil {
			cur.ParameterSources = map[string]names.Source{}
		}
		if old, ok := cur.ParameterSources[k]; ok && old != v {
			diags = append(diags, diag.Fatalf("stack %s: parameter %s has two sources, %s and %s", cur.Name, k, old, v))
			continue
		}
		cur.ParameterSources[k] = v
	}
	return diags
}
