package cfn

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
)

// CloudFormation's hard limits per template, and the size over which a
// template must be passed by TemplateURL rather than in the API call.
const (
	MaxResources      = 500
	MaxParameters     = 200
	MaxOutputs        = 200
	MaxTemplateBytes  = 1_000_000
	MaxTemplateBody   = 51_200
	MaxStackTags      = 50
	templateFormatVer = "2010-09-09"
)

// Template assembles the template of a merged Stack construct as plain data.
// metadata, when not nil, becomes the template's top-level Metadata.
func Template(s construct.Stack, metadata map[string]any) (map[string]any, error) {
	t := map[string]any{"AWSTemplateFormatVersion": templateFormatVer}
	if s.Description != "" {
		t["Description"] = s.Description
	}
	if len(metadata) > 0 {
		t["Metadata"] = metadata
	}
	sections := []struct {
		name string
		m    map[string]json.RawMessage
	}{
		{"Parameters", s.Parameters},
		{"Conditions", s.Conditions},
		{"Mappings", s.Mappings},
		{"Resources", s.Resources},
		{"Outputs", s.Outputs},
	}
	for _, sec := range sections {
		if len(sec.m) == 0 {
			continue
		}
		out := make(map[string]any, len(sec.m))
		for id, raw := range sec.m {
			v, err := Decode(raw)
			if err != nil {
				return nil, fmt.Errorf("%s %s: invalid JSON: %v", sec.name, id, err)
			}
			if sec.name == "Resources" {
				body, ok := v.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("resource %s is not a JSON object", id)
				}
				if ty, _ := body["Type"].(string); ty == "" {
					return nil, fmt.Errorf("resource %s has no Type", id)
				}
			}
			out[id] = v
		}
		t[sec.name] = out
	}
	return t, nil
}

// Rendered is one stack rendered to a file, with what deploy needs to know.
type Rendered struct {
	File stage.File
	Spec stage.StackSpec
}

// RenderStack writes the template of a merged Stack construct to
// stacks/<name>.json and builds its StackSpec. Tags are the cluster's tags,
// then extra (a plugin's values), then the stack's own; later ones win.
// Limits are checked on the result: a fatal names the stack and the count.
func RenderStack(s construct.Stack, clusterTags, extra map[string]string) (*Rendered, diag.List) {
	var diags diag.List
	// Which rendered file's S3 key fills which parameter, for deploy.
	files := map[string]any{}
	if f := names.UserDataFile(s.Name); f != "" {
		if _, ok := s.Parameters[names.ParamUserDataKey]; ok {
			files[names.ParamUserDataKey] = f
		}
	}
	if _, ok := s.Parameters[names.ParamChartsIndexKey]; ok {
		files[names.ParamChartsIndexKey] = names.ChartsIndexFile
	}
	var meta map[string]any
	if len(files) > 0 {
		meta = map[string]any{names.MetadataKey: map[string]any{names.MetadataParameterFiles: files}}
	}
	t, err := Template(s, meta)
	if err != nil {
		return nil, diag.List{diag.Fatalf("stack %s: %v", s.Name, err)}
	}
	body, err := Marshal(t, true)
	if err != nil {
		return nil, diag.List{diag.Fatalf("stack %s: encoding template: %v", s.Name, err)}
	}
	diags = append(diags, CheckLimits(s.Name, len(s.Resources), len(s.Parameters), len(s.Outputs), len(body))...)
	if len(s.Resources) == 0 {
		diags = append(diags, diag.Fatalf("stack %s has no resources; CloudFormation refuses an empty template", s.Name).
			WithHint("add a resource to the stack or stop contributing it"))
	}

	spec := stage.StackSpec{
		Name:        s.Name,
		Template:    "stacks/" + s.Name + ".json",
		UploadByURL: len(body) > MaxTemplateBody,
	}
	deps := map[string]bool{}
	for _, d := range s.DependsOn {
		deps[d] = true
	}
	if len(s.ParameterSources) > 0 {
		spec.ParameterSources = make(map[string]names.Source, len(s.ParameterSources))
		for p, src := range s.ParameterSources {
			// core/merge checked every source once; a set built by hand
			// (a test) may still hold a broken one.
			if err := src.Valid(); err != nil {
				diags = append(diags, diag.Fatalf("stack %s: %v", s.Name, err))
				continue
			}
			if _, declared := s.Parameters[p]; !declared {
				diags = append(diags, diag.Fatalf("stack %s: parameter source for %s, which the template does not declare", s.Name, p).
					WithHint("declare the parameter in the same Stack construct as its source"))
			}
			spec.ParameterSources[p] = src
			deps[src.Stack] = true
		}
	}
	delete(deps, s.Name)
	for d := range deps {
		spec.DependsOn = append(spec.DependsOn, d)
	}
	sort.Strings(spec.DependsOn)

	tags := map[string]string{}
	for _, m := range []map[string]string{clusterTags, extra, s.Tags} {
		for k, v := range m {
			tags[k] = v
		}
	}
	if len(tags) > 0 {
		spec.Tags = tags
	}
	if len(tags) > MaxStackTags {
		diags = append(diags, diag.Fatalf("stack %s has %d tags, over the CloudFormation limit of %d", s.Name, len(tags), MaxStackTags))
	}
	return &Rendered{
		File: stage.File{Path: spec.Template, Content: body, Mode: "0644"},
		Spec: spec,
	}, diags
}

// CheckLimits returns a fatal for every CloudFormation hard limit the
// template of a stack crosses.
func CheckLimits(stack string, resources, parameters, outputs, bytes int) diag.List {
	var diags diag.List
	hint := "split the stack: move resources into a stack of their own (a Stack construct with another name)"
	if resources > MaxResources {
		diags = append(diags, diag.Fatalf("stack %s has %d resources, over the CloudFormation limit of %d", stack, resources, MaxResources).WithHint(hint))
	}
	if parameters > MaxParameters {
		diags = append(diags, diag.Fatalf("stack %s has %d parameters, over the CloudFormation limit of %d", stack, parameters, MaxParameters).WithHint(hint))
	}
	if outputs > MaxOutputs {
		diags = append(diags, diag.Fatalf("stack %s has %d outputs, over the CloudFormation limit of %d", stack, outputs, MaxOutputs).WithHint(hint))
	}
	if bytes > MaxTemplateBytes {
		diags = append(diags, diag.Fatalf("stack %s template is %d bytes, over the CloudFormation limit of %d", stack, bytes, MaxTemplateBytes).WithHint(hint))
	}
	return diags
}
