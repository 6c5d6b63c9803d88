package stacks

import (
	"bytes"
	"encoding/json"
	"sort"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
)

// Values are the plugin's values in cluster.yaml (plugins.cloudformation.values).
type Values struct {
	// Tags are added to every stack this plugin renders, over the cluster's tags.
	Tags map[string]string `json:"tags,omitempty"`
}

// ValuesSchema is the JSON Schema of Values.
const ValuesSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "tags": {
      "description": "Tags added to every stack the cloudformation plugin renders (and so to their resources), over cluster.yaml's tags.",
      "type": "object",
      "additionalProperties": {"type": "string", "maxLength": 256},
      "propertyNames": {"maxLength": 128}
    }
  }
}`

// Render writes stacks/<name>.json for every Stack construct in the merged
// set except iam (the iam plugin renders that one), after applying the
// patches aimed at them, and returns the files and the StackSpecs in stack
// name order.
func Render(c *config.Cluster, v Values, set *construct.Set) ([]stage.File, []stage.StackSpec, diag.List) {
	if set == nil {
		set = &construct.Set{}
	}
	var diags diag.List
	stacks := map[string]*construct.Stack{}
	var names []string
	for _, s := range set.Stacks {
		if s.Name == cfn.StackIAM {
			continue
		}
		if cur, ok := stacks[s.Name]; ok {
			diags = append(diags, mergeStack(cur, s)...)
			continue
		}
		cp := copyStack(s)
		stacks[s.Name] = &cp
		names = append(names, s.Name)
	}
	diags = append(diags, cfn.ApplyPatches(stacks, set.Patches, set.Protected)...)
	for i, p := range set.Patches {
		if _, ok := stacks[p.Stack]; !ok && p.Stack != cfn.StackIAM {
			diags = append(diags, diag.Fatalf("patch %d is for stack %s, which no plugin contributes", i, p.Stack))
		}
	}
	sort.Strings(names)
	var files []stage.File
	var specs []stage.StackSpec
	for _, n := range names {
		r, d := cfn.RenderStack(*stacks[n], c.Tags, v.Tags)
		diags = append(diags, d...)
		if r == nil {
			continue
		}
		files = append(files, r.File)
		specs = append(specs, r.Spec)
	}
	return files, specs, diags
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

func copyStr(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// mergeStack folds a second contribution to the same stack into cur. The
// merge in core/merge normally leaves one Stack per name; this keeps render
// correct if it does not. Identical entries are fine, different ones fatal.
func mergeStack(cur *construct.Stack, s construct.Stack) diag.List {
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
			cur.ParameterSources = map[string]string{}
		}
		if old, ok := cur.ParameterSources[k]; ok && old != v {
			diags = append(diags, diag.Fatalf("stack %s: parameter %s has two sources, %s and %s", cur.Name, k, old, v))
			continue
		}
		cur.ParameterSources[k] = v
	}
	return diags
}
